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

mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use ecs_bench::row::ScenarioId;

fn schedule(c: &mut Criterion) {
    common::bench_cases(c, ScenarioId::Schedule, "", None);
}

criterion_group!(benches, schedule);
criterion_main!(benches);
