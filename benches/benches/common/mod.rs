//! The criterion side of [`ecs_bench::scenarios::run_cases`]: a scenario's
//! cases from the same [`Case`] list the CLI runs, one group per case, one
//! function per compiled-in implementation, each scene checked before and
//! after timing as `ecs-bench` checks it.

use std::time::{Duration, Instant};

use criterion::Criterion;
use ecs_bench::row::ScenarioId;
use ecs_bench::scenarios::{Body, Case, scenario};

/// Benches every case of scenario `id`; groups are named `prefix` + case
/// name, with `sample_size` samples when given.
///
/// # Panics
///
/// When the scenario has no case list, or a scene fails a check (the
/// implementations would not be doing the same work).
pub fn bench_cases(c: &mut Criterion, id: ScenarioId, prefix: &str, sample_size: Option<usize>) {
    let Body::Cases(cases) = scenario(id).body else {
        panic!("{} has its own driver, not a case list", id.name());
    };
    for case in cases() {
        bench_case(c, id, &case, prefix, sample_size);
    }
}

fn bench_case(c: &mut Criterion, id: ScenarioId, case: &Case, prefix: &str, sample_size: Option<usize>) {
    let scenes = case.scenes().unwrap_or_else(|e| panic!("{}/{e}", id.name()));
    let mut group = c.benchmark_group(format!("{prefix}{}", case.name));
    if let Some(n) = sample_size {
        group.sample_size(n);
    }
    for (imp, mut bench) in scenes {
        if bench.has_setup() {
            group.bench_function(imp.name(), |b| {
                b.iter_custom(|iters| {
                    let mut timed = Duration::ZERO;
                    for _ in 0..iters {
                        bench.setup();
                        let start = Instant::now();
                        bench.timed();
                        timed += start.elapsed();
                    }
                    timed
                });
            });
        } else {
            group.bench_function(imp.name(), |b| b.iter(|| bench.timed()));
        }
        if let Err(e) = bench.check_after() {
            panic!("{}/{}/{}: check after timing: {e}", id.name(), case.name, imp.name());
        }
    }
    group.finish();
}
