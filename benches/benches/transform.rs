//! Criterion benches of hierarchy propagation: one group per `transform`
//! case, one function per implementation (ours; bevy_transform with feature
//! `peers`). Only the propagation run is timed; moving the roots runs
//! untimed before every iteration.
//!
//! Each scene is checked before timing and after it (sampled globals against
//! a reference computed from the forest description).

#![allow(missing_docs, reason = "criterion_group! and criterion_main! generate undocumented items")]

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use ecs_bench::runner::{Impl, transform_scene};
use ecs_bench::scenes::transform::TRANSFORM_CASES;

fn transform(c: &mut Criterion) {
    for case in &TRANSFORM_CASES {
        let mut group = c.benchmark_group(format!("transform_{}", case.name));
        group.sample_size(20);
        for &imp in Impl::compiled() {
            let Some(mut scene) = transform_scene(case, imp) else {
                continue;
            };
            if let Err(e) = scene.check_frames() {
                panic!("transform/{}/{}: check before timing: {e}", case.name, imp.name());
            }
            group.bench_function(imp.name(), |b| {
                b.iter_custom(|iters| {
                    let mut timed = Duration::ZERO;
                    for _ in 0..iters {
                        scene.move_roots();
                        let start = Instant::now();
                        scene.propagate();
                        timed += start.elapsed();
                    }
                    timed
                });
            });
            if let Err(e) = scene.check() {
                panic!("transform/{}/{}: check after timing: {e}", case.name, imp.name());
            }
        }
        group.finish();
    }
}

criterion_group!(benches, transform);
criterion_main!(benches);
