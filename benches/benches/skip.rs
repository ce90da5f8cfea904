//! Criterion benches of chunk skipping: one group per case of the `skip`
//! scenario, one function per implementation with change detection (ours;
//! bevy with feature `peers`). Only the `Changed<Pos>` consumer is timed;
//! the writer runs untimed before every iteration, and the consumer's row
//! counts are checked against the movers after timing.

#![allow(missing_docs, reason = "criterion_group! and criterion_main! generate undocumented items")]

mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use ecs_bench::row::ScenarioId;

fn skip(c: &mut Criterion) {
    common::bench_cases(c, ScenarioId::Skip, "skip_", None);
}

criterion_group!(benches, skip);
criterion_main!(benches);
