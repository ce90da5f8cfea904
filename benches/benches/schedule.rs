//! Criterion bench of the ecs_bench_suite `schedule` case: one function per
//! implementation with a schedule (ours; bevy with feature `peers`). One
//! iteration is one run of the schedule of systems `ab`, `cd` and `ce`.
//!
//! Each scene is checked before timing and after it (every sampled entity
//! must show its pairs swapped once per run), so both do the same work.

#![allow(missing_docs, reason = "criterion_group! and criterion_main! generate undocumented items")]

use criterion::{Criterion, criterion_group, criterion_main};
use ecs_bench::runner::{Impl, SCHEDULE_CASE, schedule_scene};

fn schedule(c: &mut Criterion) {
    let mut group = c.benchmark_group(SCHEDULE_CASE);
    for &imp in Impl::compiled() {
        let Some(mut scene) = schedule_scene(imp) else {
            continue;
        };
        if let Err(e) = scene.check_runs() {
            panic!("schedule/{}: check before timing: {e}", imp.name());
        }
        group.bench_function(imp.name(), |b| b.iter(|| scene.run()));
        if let Err(e) = scene.check() {
            panic!("schedule/{}: check after timing: {e}", imp.name());
        }
    }
    group.finish();
}

criterion_group!(benches, schedule);
criterion_main!(benches);
