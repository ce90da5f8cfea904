//! Criterion benches of the ecs_bench_suite cases: one group per case, one
//! function per implementation (peers with feature `peers`).

#![allow(missing_docs, reason = "criterion_group! and criterion_main! generate undocumented items")]

use criterion::{Criterion, criterion_group, criterion_main};
use ecs_bench::runner::{Impl, suite_scene};
use ecs_bench::scenes::SUITE_CASES;

fn suite(c: &mut Criterion) {
    for case in SUITE_CASES {
        let mut group = c.benchmark_group(case);
        for &imp in Impl::compiled() {
            let Some(mut scene) = suite_scene(case, imp) else {
                continue;
            };
            group.bench_function(imp.name(), |b| b.iter(|| scene.frame()));
        }
        group.finish();
    }
}

criterion_group!(benches, suite);
criterion_main!(benches);
