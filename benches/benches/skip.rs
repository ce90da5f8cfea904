//! Criterion benches of chunk skipping: one group per case, one function per
//! implementation with change detection (ours; bevy with feature `peers`).
//! Only the `Changed<Pos>` consumer is timed; the writer runs untimed before
//! every iteration.

#![allow(missing_docs, reason = "criterion_group! and criterion_main! generate undocumented items")]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use ecs_bench::runner::{Impl, skip_scene};
use ecs_bench::scenes::SKIP_CASES;

fn skip(c: &mut Criterion) {
    for case in &SKIP_CASES {
        let mut group = c.benchmark_group(format!("skip_{}", case.name));
        for &imp in Impl::compiled() {
            let Some(mut scene) = skip_scene(case, imp) else {
                continue;
            };
            if let Err(e) = scene.check() {
                panic!("skip/{}/{}: {e}", case.name, imp.name());
            }
            let movers = scene.movers();
            group.bench_function(imp.name(), |b| {
                b.iter_custom(|iters| {
                    let mut timed = Duration::ZERO;
                    for _ in 0..iters {
                        scene.write();
                        let start = Instant::now();
                        let rows = black_box(scene.consume());
                        timed += start.elapsed();
                        assert_eq!(rows, movers, "consumer rows != movers");
                    }
                    timed
                });
            });
        }
        group.finish();
    }
}

criterion_group!(benches, skip);
criterion_main!(benches);
