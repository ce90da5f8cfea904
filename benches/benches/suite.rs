//! Criterion benches of the ecs_bench_suite cases: one group per case of
//! the `suite` scenario, one function per implementation (peers with
//! feature `peers`).

#![allow(missing_docs, reason = "criterion_group! and criterion_main! generate undocumented items")]

mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use ecs_bench::row::ScenarioId;

fn suite(c: &mut Criterion) {
    common::bench_cases(c, ScenarioId::Suite, "", None);
}

criterion_group!(benches, suite);
criterion_main!(benches);
