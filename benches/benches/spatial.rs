//! Criterion benches of the broad phase: one group per `spatial` case, one
//! function per implementation (ours; kiddo and rstar with feature
//! `peers`), all on one thread.
//!
//! Per set of points and radius, every structure is built and checked before timing
//! (same hit count for all queries, ours' `pairs * 2 + n == hits`); the
//! counts of the timed runs are checked after each function. `build` drops
//! the previous structure (and stages rstar's input) untimed; `std_sort`
//! copies the unsorted pairs untimed; the broad-phase system cases
//! (`nothing`, `5pct`, `all`) move their entities untimed before each frame.

#![allow(missing_docs, reason = "criterion_group! and criterion_main! generate undocumented items")]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use ecs_bench::scenarios::spatial::spatial_scenes;
use ecs_bench::scenes::spatial::ecs::{EcsBroadPhase, MOVED_ONE_IN};
use ecs_bench::scenes::spatial::{self, SPATIAL_CASES, SPATIAL_SETS, SortPairs, SpatialOp};

fn spatial(c: &mut Criterion) {
    for (set_index, set) in SPATIAL_SETS.iter().enumerate() {
        let points = spatial::points(set.distribution);
        let n = points.len();
        let (mut scenes, hits) = spatial_scenes(&points, set.radius)
            .unwrap_or_else(|e| panic!("spatial/{}: check before timing: {e}", set.name));
        let mut ecs_system: Option<EcsBroadPhase> = None;
        for case in SPATIAL_CASES.iter().filter(|c| c.set == set_index) {
            let mut group = c.benchmark_group(format!("spatial_{}", case.name));
            group.sample_size(10);
            match case.op {
                SpatialOp::Build => {
                    for (imp, scene) in &mut scenes {
                        group.bench_function(imp.name(), |b| {
                            b.iter_custom(|iters| {
                                let mut timed = Duration::ZERO;
                                for _ in 0..iters {
                                    scene.clear();
                                    let start = Instant::now();
                                    scene.build();
                                    timed += start.elapsed();
                                }
                                timed
                            });
                        });
                        match scene.built_len() {
                            Ok(len) if len == n => {}
                            other => panic!("spatial/{}/{}: after timing: {other:?}", case.name, imp.name()),
                        }
                    }
                }
                SpatialOp::AllQueries => {
                    for (imp, scene) in &mut scenes {
                        let mut last = hits;
                        group.bench_function(imp.name(), |b| b.iter(|| last = black_box(scene.all_queries())));
                        assert_eq!(last, hits, "spatial/{}/{}: hits of a timed run", case.name, imp.name());
                    }
                }
                SpatialOp::AllPairs => {
                    for (imp, scene) in &mut scenes {
                        if scene.all_pairs().is_none() {
                            continue;
                        }
                        let mut last = Some((hits - n) / 2);
                        group.bench_function(imp.name(), |b| b.iter(|| last = black_box(scene.all_pairs())));
                        assert_eq!(
                            last,
                            Some((hits - n) / 2),
                            "spatial/{}/{}: pairs of a timed run",
                            case.name,
                            imp.name()
                        );
                    }
                }
                SpatialOp::SystemNothingMoved | SpatialOp::SystemFivePercentMoved | SpatialOp::SystemAllMoved => {
                    let one_in = match case.op {
                        SpatialOp::SystemNothingMoved => None,
                        SpatialOp::SystemFivePercentMoved => Some(MOVED_ONE_IN),
                        _ => Some(1),
                    };
                    let system = ecs_system.get_or_insert_with(|| {
                        EcsBroadPhase::new(&points).unwrap_or_else(|e| panic!("spatial/{}: setup: {e}", case.name))
                    });
                    group.bench_function("ours", |b| {
                        b.iter_custom(|iters| {
                            let mut timed = Duration::ZERO;
                            for _ in 0..iters {
                                if let Some(k) = one_in {
                                    system.move_some(k);
                                }
                                let start = Instant::now();
                                system.frame();
                                timed += start.elapsed();
                            }
                            timed
                        });
                    });
                    let stats = system.stats();
                    assert_eq!(stats.full_rebuild, one_in == Some(1), "spatial/{}: {stats:?}", case.name);
                    if one_in.is_none() {
                        assert_eq!(stats.chunks_skipped, stats.chunks_total, "spatial/{}: {stats:?}", case.name);
                    }
                    if let Err(e) = system.check(set.radius) {
                        panic!("spatial/{}/ours: after timing: {e}", case.name);
                    }
                }
                SpatialOp::StdSort => {
                    let mut sort = SortPairs::new(&points);
                    group.bench_function("ours", |b| {
                        b.iter_custom(|iters| {
                            let mut timed = Duration::ZERO;
                            for _ in 0..iters {
                                sort.reset();
                                let start = Instant::now();
                                sort.sort();
                                timed += start.elapsed();
                            }
                            timed
                        });
                    });
                    if let Err(e) = sort.check() {
                        panic!("spatial/{}/ours: {e}", case.name);
                    }
                }
            }
            group.finish();
        }
    }
}

criterion_group!(benches, spatial);
criterion_main!(benches);
