//! Criterion benches of replication: one server tick of the cube scene
//! streamed to one client (5 % loss), and the encode cost per tick of a
//! 100k-entity world at 0, 1 and 10 % changed and of 64 clients x 10k
//! entities (1 % changed). Movers are moved untimed before each tick.
//! Bandwidth figures come from `ecs-bench replication`.

#![allow(missing_docs, reason = "criterion_group! and criterion_main! generate undocumented items")]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use ecs_bench::replication::ENCODE_CASES;
use ecs_bench::replication::scenes::{CubeStream, EncodeScene};

fn replication(c: &mut Criterion) {
    let mut group = c.benchmark_group("replication");
    group.sample_size(20);
    let mut stream = CubeStream::new(0.05).unwrap_or_else(|e| panic!("cube stream: {e}"));
    for _ in 0..120 {
        stream.tick().unwrap_or_else(|e| panic!("cube stream: {e}"));
    }
    group.bench_function("cubes_loss_5_tick", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                let us = stream.tick().unwrap_or_else(|e| panic!("cube stream: {e}"));
                timed += Duration::from_secs_f64(us / 1e6);
            }
            timed
        });
    });
    for (name, entities, clients, changed) in ENCODE_CASES {
        let mut scene = EncodeScene::new(entities, clients, changed).unwrap_or_else(|e| panic!("{name}: {e}"));
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut timed = Duration::ZERO;
                for _ in 0..iters {
                    scene.mutate();
                    let start = Instant::now();
                    black_box(scene.tick());
                    timed += start.elapsed();
                }
                timed
            });
        });
    }
    group.finish();
}

criterion_group!(benches, replication);
criterion_main!(benches);
