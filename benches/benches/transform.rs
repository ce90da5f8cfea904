//! Criterion benches of hierarchy propagation: one group per case of the
//! `transform` scenario, one function per implementation (ours;
//! bevy_transform with feature `peers`). Only the propagation run is timed;
//! moving the roots runs untimed before every iteration.
//!
//! Each scene is checked before timing and after it (sampled globals against
//! a reference computed from the forest description).

#![allow(missing_docs, reason = "criterion_group! and criterion_main! generate undocumented items")]

mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use ecs_bench::row::ScenarioId;

fn transform(c: &mut Criterion) {
    common::bench_cases(c, ScenarioId::Transform, "transform_", Some(20));
}

criterion_group!(benches, transform);
criterion_main!(benches);
