//! Criterion benches of replication: one server tick of the cube scene
//! streamed to one client (5 % loss), and the encode cost per tick of a
//! 100k-entity world at 0, 1 and 10 % changed, of 64 clients x 10k
//! entities (1 % changed), and of 256 clients x 10k entities on one and two
//! threads; one arena client frame with and without prediction (1000
//! interpolated props); one server tick of the backlog case (128 clients x
//! 10k entities, 1 % moving) on a clean link and under 50 % loss both
//! ways. Movers are moved untimed before each tick.
//! Bandwidth and the multiplayer figures come from `ecs-bench replication`.

#![allow(missing_docs, reason = "criterion_group! and criterion_main! generate undocumented items")]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use ecs_bench::replication::BACKLOG_CASE;
use ecs_bench::replication::scenes::backlog::BacklogRun;
use ecs_bench::replication::scenes::game::ArenaRun;
use ecs_bench::replication::scenes::{CubeStream, EncodeScene};
use ecs_bench::replication::{ENCODE_CASES, FANOUT_THREAD_CASES};
use ecs_replication::prelude::LinkConfig;

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
    for (name, threads) in FANOUT_THREAD_CASES {
        let pool =
            rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut scene = EncodeScene::new(10_000, 256, 0.01).unwrap_or_else(|e| panic!("{name}: {e}"));
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut timed = Duration::ZERO;
                for _ in 0..iters {
                    scene.mutate();
                    let start = Instant::now();
                    pool.install(|| black_box(scene.tick()));
                    timed += start.elapsed();
                }
                timed
            });
        });
    }
    let (clients, entities, share, loss, _) = BACKLOG_CASE;
    let mut run = BacklogRun::new(entities, clients, share).unwrap_or_else(|e| panic!("backlog: {e}"));
    for (name, loss) in [("backlog_128x10k_steady_tick", 0.0), ("backlog_128x10k_loss50_tick", loss)] {
        run.set_loss(loss);
        for _ in 0..60 {
            run.tick(true).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut timed = Duration::ZERO;
                for _ in 0..iters {
                    let us = run.tick(true).unwrap_or_else(|e| panic!("{name}: {e}"));
                    timed += Duration::from_secs_f64(us / 1e6);
                }
                timed
            });
        });
    }
    drop(run);
    for (name, predict) in [("client_tick_predicted", true), ("client_tick_unpredicted", false)] {
        let mut run = ArenaRun::new(1, 1000, LinkConfig::clean(3), predict).unwrap_or_else(|e| panic!("{name}: {e}"));
        for _ in 0..300 {
            run.frame().unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                run.reset_counters();
                for _ in 0..iters {
                    run.frame().unwrap_or_else(|e| panic!("{name}: {e}"));
                }
                Duration::from_secs_f64(run.client_us.iter().sum::<f64>() / 1e6)
            });
        });
    }
    group.finish();
}

criterion_group!(benches, replication);
criterion_main!(benches);
