//! Criterion bench of the `schedule` scenario: one function per
//! implementation with a schedule (ours; bevy with feature `peers`). The
//! ecs_bench_suite `schedule` case: one iteration is one run of the
//! schedule of systems `ab`, `cd` and `ce`. The app-frame cases: one
//! iteration is one `App::update` of an app with 50 trivial systems in 7
//! labelled schedules (ours against bevy_app).
//!
//! Each scene is checked before timing and after it (every sampled entity
//! must show its pairs swapped once per run; every app system ran once per
//! frame, or never where its run condition says no), so both do the same
//! work.

#![allow(missing_docs, reason = "criterion_group! and criterion_main! generate undocumented items")]

use criterion::{Criterion, criterion_group, criterion_main};
use ecs_bench::runner::{Impl, SCHEDULE_CASE, app_scene, schedule_scene};
use ecs_bench::scenes::app::APP_CASES;

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

fn app_frames(c: &mut Criterion) {
    for case in &APP_CASES {
        let mut group = c.benchmark_group(case.name);
        for &imp in Impl::compiled() {
            let Some(mut scene) = app_scene(case, imp) else {
                continue;
            };
            if let Err(e) = scene.check_frames() {
                panic!("{}/{}: check before timing: {e}", case.name, imp.name());
            }
            group.bench_function(imp.name(), |b| b.iter(|| scene.frame()));
            if let Err(e) = scene.check() {
                panic!("{}/{}: check after timing: {e}", case.name, imp.name());
            }
        }
        group.finish();
    }
}

criterion_group!(benches, schedule, app_frames);
criterion_main!(benches);
