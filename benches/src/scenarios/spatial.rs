//! The `spatial` scenario's driver: per set of points and radius
//! ([`spatial::SPATIAL_SETS`]) every structure is built and checked once,
//! then the set's cases ([`SPATIAL_CASES`]) are timed on it.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};

use crate::measure::{self, Batched, Config, Measurement, Sampler, WithSetup};
use crate::row::{Impl, Row, ScenarioId};
use crate::scenarios::RunOptions;
use crate::scenes::ChunkCounts;
use crate::scenes::spatial::{self, SPATIAL_CASES, SpatialOp, SpatialScene};

/// The case names, in report order.
pub fn case_names(_: RunOptions) -> Vec<Cow<'static, str>> {
    SPATIAL_CASES.iter().map(|c| Cow::Borrowed(c.name)).collect()
}

/// [`run_spatial`] as a [`crate::scenarios::CustomRun`].
pub(crate) fn run_dyn(cfg: &Config, _: RunOptions, on_row: &mut dyn FnMut(&Row)) -> Result<Vec<Row>, String> {
    run_spatial(cfg, on_row)
}

/// Builds the `spatial` scene of `imp` over `points`; `None` where `imp`
/// is not a spatial structure (or not compiled in).
///
/// # Errors
/// If our grid rejects the points.
pub fn spatial_scene(imp: Impl, points: &[glam::Vec3], radius: f32) -> Result<Option<Box<dyn SpatialScene>>, String> {
    Ok(match imp {
        Impl::Ours => Some(Box::new(spatial::ours::Grid::new(points, radius)?)),
        #[cfg(feature = "peers")]
        Impl::Kiddo => Some(Box::new(spatial::kiddo::KdTree::new(points, radius))),
        #[cfg(feature = "peers")]
        Impl::Rstar => Some(Box::new(spatial::rstar::RStar::new(points, radius))),
        _ => None,
    })
}

/// A structure timed by samplers that take turns (through the `RefCell`),
/// with the count its timed runs last returned (the first wrong one kept).
type Sharing<'a> = (Impl, RefCell<&'a mut Box<dyn SpatialScene>>, Cell<Option<usize>>);

/// Every compiled-in `spatial` structure over one set of points, ours first.
pub type SpatialScenes = Vec<(Impl, Box<dyn SpatialScene>)>;

/// The `spatial` scenes of one set, checked: every compiled-in structure
/// over the same points, for queries of `radius`, ours first, with the hits
/// every one of them found for all queries (see [`spatial::check_scenes`]).
///
/// # Errors
/// If a build fails or the structures disagree.
pub fn spatial_scenes(points: &[glam::Vec3], radius: f32) -> Result<(SpatialScenes, usize), String> {
    let mut scenes = Vec::new();
    for &imp in Impl::spatial() {
        if let Some(scene) = spatial_scene(imp, points, radius)? {
            scenes.push((imp, scene));
        }
    }
    let hits = spatial::check_scenes(points.len(), scenes.iter_mut().map(|(imp, s)| (imp.name(), &mut **s)))?;
    Ok((scenes, hits))
}

/// Runs the `spatial` scenario; `on_row` is called as each row is measured.
///
/// Per set of points and radius ([`spatial::SPATIAL_SETS`]), the
/// structures are built and checked before timing
/// ([`spatial_scenes`]: same hit count for every implementation, ours'
/// `pairs * 2 + n == hits`). `build` times the build alone (dropping the
/// previous structure and staging rstar's input are untimed setup);
/// `all_queries` times a radius query around every point, and the hits of
/// every timed run must equal the checked count; `all_pairs` (ours) must
/// count `(hits - n) / 2` pairs every run; `std_sort` (ours' reference)
/// times `sort_unstable` of the pairs, copied untimed, and checks the
/// order. The two cases a goal compares with another are measured in turns
/// with it, as another sampler of the same interleaving: `all_pairs` with
/// the set's `all_queries` (on ours' same structure), `std_sort` with the
/// set's `build`; timed in blocks of their own, their ratio moved with the
/// host between the blocks (pairs / queries read 0.49-0.80x in runs of one
/// build). `nothing`, `5pct` and `all` time one frame of ours' broad-phase
/// system ([`spatial::ecs::EcsBroadPhase`]) after moving no, 5 % or all
/// entities untimed; the last frame must have re-keyed exactly the moved
/// rows (and skipped every chunk when nothing moved), and the grid must hold
/// the world's positions with the hits of a fresh rebuild. Any mismatch is
/// an error. Everything runs on the calling thread; the implementations of
/// one case are measured interleaved.
pub fn run_spatial(cfg: &Config, mut on_row: impl FnMut(&Row)) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for (set_index, set) in spatial::SPATIAL_SETS.iter().enumerate() {
        let points = spatial::points(set.distribution);
        let n = points.len();
        let (mut scenes, hits) = spatial_scenes(&points, set.radius)?;
        // The broad-phase system's world, shared by the set's system cases.
        let mut ecs_system: Option<spatial::ecs::EcsBroadPhase> = None;
        // Ours' cases that a goal compares with another case are measured in
        // turns with it (see `run_spatial`) and kept here for their own row.
        let has = |op: SpatialOp| SPATIAL_CASES.iter().any(|c| c.set == set_index && c.op == op);
        let mut sort_in_turns: Option<Measurement> = None;
        let mut pairs_in_turns: Option<(Measurement, Option<usize>)> = None;
        // Where such a sampler goes among the set's structures' samplers
        // (ours first): after the first peer's, so each of ours follows
        // another structure's work (neither finds the other's warm caches),
        // as each peer does; last when there is no peer.
        let turn_at = scenes.len().min(2);
        for case in SPATIAL_CASES.iter().filter(|c| c.set == set_index) {
            let fail = |imp: Impl, e: String| format!("spatial/{}/{}: {e}", case.name, imp.name());
            let mut measured: Vec<(Impl, Measurement, usize)> = Vec::new();
            let mut system_chunks: Option<ChunkCounts> = None;
            match case.op {
                SpatialOp::Build => {
                    let mut sort = has(SpatialOp::StdSort).then(|| spatial::SortPairs::new(&points));
                    let mut ms = {
                        let mut samplers: Vec<WithSetup<'_, Box<dyn SpatialScene>, _, _>> = scenes
                            .iter_mut()
                            .map(|(_, s)| {
                                WithSetup::new(
                                    s,
                                    |s: &mut Box<dyn SpatialScene>| s.clear(),
                                    |s: &mut Box<dyn SpatialScene>| s.build(),
                                )
                            })
                            .collect();
                        let mut sorter = sort
                            .as_mut()
                            .map(|sort| WithSetup::new(sort, spatial::SortPairs::reset, spatial::SortPairs::sort));
                        let mut refs: Vec<&mut dyn Sampler> =
                            samplers.iter_mut().map(|s| s as &mut dyn Sampler).collect();
                        if let Some(sorter) = sorter.as_mut() {
                            refs.insert(turn_at, sorter);
                        }
                        measure::measure_interleaved(cfg, &mut refs)
                    };
                    if let Some(sort) = &sort {
                        sort.check().map_err(|e| format!("spatial/{}: std_sort: {e}", case.name))?;
                        sort_in_turns = Some(ms.remove(turn_at));
                    }
                    for ((imp, scene), m) in scenes.iter().zip(ms) {
                        let len = scene.built_len().map_err(|e| fail(*imp, e))?;
                        if len != n {
                            return Err(fail(*imp, format!("the structure holds {len} points, expected {n}")));
                        }
                        measured.push((*imp, m, len));
                    }
                }
                SpatialOp::AllPairs if pairs_in_turns.is_some() => {
                    let want = (hits - n) / 2;
                    if let Some((m, got)) = pairs_in_turns.take() {
                        if got != Some(want) {
                            return Err(fail(
                                Impl::Ours,
                                format!("a timed run counted {got:?} pairs, expected {want}"),
                            ));
                        }
                        measured.push((Impl::Ours, m, want));
                    }
                }
                SpatialOp::AllQueries | SpatialOp::AllPairs => {
                    let pairs = case.op == SpatialOp::AllPairs;
                    let want = if pairs { (hits - n) / 2 } else { hits };
                    let want_pairs = (hits - n) / 2;
                    // Ours' all pairs take turns with the queries when the set
                    // has that case: one more sampler on ours' structure.
                    let pairs_too = !pairs && has(SpatialOp::AllPairs);
                    let active: Vec<Sharing<'_>> = scenes
                        .iter_mut()
                        .filter(|(imp, _)| !pairs || *imp == Impl::Ours)
                        .map(|(imp, s)| (*imp, RefCell::new(s), Cell::new(None)))
                        .collect();
                    let pairs_got = Cell::new(None);
                    // Keeps the first mismatch, if any.
                    let keep = |last: &Cell<Option<usize>>, got: Option<usize>, want: usize| {
                        if last.get().is_none_or(|l| l == want) {
                            last.set(Some(got.unwrap_or(usize::MAX)));
                        }
                    };
                    let mut ms = {
                        let mut samplers: Vec<Batched<Box<dyn FnMut() + '_>>> = active
                            .iter()
                            .map(|(_, s, last)| {
                                let run: Box<dyn FnMut()> = Box::new(move || {
                                    let mut s = s.borrow_mut();
                                    let got = if pairs { s.all_pairs() } else { Some(s.all_queries()) };
                                    keep(last, got, want);
                                });
                                Batched::new(run)
                            })
                            .collect();
                        if let Some((Impl::Ours, s, _)) = active.first().filter(|_| pairs_too) {
                            let (pairs_got, keep) = (&pairs_got, &keep);
                            let run: Box<dyn FnMut()> =
                                Box::new(move || keep(pairs_got, s.borrow_mut().all_pairs(), want_pairs));
                            samplers.insert(turn_at, Batched::new(run));
                        }
                        let mut refs: Vec<&mut dyn Sampler> =
                            samplers.iter_mut().map(|s| s as &mut dyn Sampler).collect();
                        measure::measure_interleaved(cfg, &mut refs)
                    };
                    if ms.len() > active.len() {
                        pairs_in_turns = Some((ms.remove(turn_at), pairs_got.get()));
                    }
                    for ((imp, _, got), m) in active.into_iter().zip(ms) {
                        let got = got.get();
                        if got != Some(want) {
                            let what = if pairs { "pairs" } else { "hits" };
                            return Err(fail(imp, format!("a timed run counted {got:?} {what}, expected {want}")));
                        }
                        measured.push((imp, m, want));
                    }
                }
                SpatialOp::StdSort if sort_in_turns.is_some() => {
                    if let Some(m) = sort_in_turns.take() {
                        measured.push((Impl::Ours, m, n));
                    }
                }
                SpatialOp::StdSort => {
                    let mut sort = spatial::SortPairs::new(&points);
                    let m = measure::measure_with_setup(
                        cfg,
                        &mut sort,
                        spatial::SortPairs::reset,
                        spatial::SortPairs::sort,
                    );
                    sort.check().map_err(|e| fail(Impl::Ours, e))?;
                    measured.push((Impl::Ours, m, n));
                }
                SpatialOp::SystemNothingMoved | SpatialOp::SystemFivePercentMoved | SpatialOp::SystemAllMoved => {
                    let one_in = match case.op {
                        SpatialOp::SystemNothingMoved => None,
                        SpatialOp::SystemFivePercentMoved => Some(spatial::ecs::MOVED_ONE_IN),
                        _ => Some(1),
                    };
                    let system = ecs_system
                        .get_or_insert(spatial::ecs::EcsBroadPhase::new(&points).map_err(|e| fail(Impl::Ours, e))?);
                    let m = measure::measure_with_setup(
                        cfg,
                        system,
                        |s| {
                            if let Some(k) = one_in {
                                s.move_some(k);
                            }
                        },
                        spatial::ecs::EcsBroadPhase::frame,
                    );
                    let stats = system.stats();
                    let len = system.grid_len().map_err(|e| fail(Impl::Ours, e))?;
                    let expected_rows = match one_in {
                        None => 0,
                        Some(k) => n.div_ceil(k) as u64,
                    };
                    // The last timed frame must have done what the case says.
                    let as_expected = len == n
                        && stats.entities == n as u64
                        && stats.rows_rekeyed.abs_diff(expected_rows) <= 1
                        && stats.full_rebuild == (one_in == Some(1))
                        && (one_in.is_some() || stats.chunks_skipped == stats.chunks_total);
                    if !as_expected {
                        return Err(fail(
                            Impl::Ours,
                            format!("the last timed frame did not do the case's work: {stats:?}"),
                        ));
                    }
                    system.check(set.radius).map_err(|e| fail(Impl::Ours, e))?;
                    system_chunks = Some(ChunkCounts { total: stats.chunks_total, skipped: stats.chunks_skipped });
                    measured.push((Impl::Ours, m, stats.rows_rekeyed as usize));
                }
            }
            for (imp, measurement, count) in measured {
                let row = Row {
                    chunks: system_chunks.take(),
                    count: Some(count),
                    ..Row::new(ScenarioId::Spatial, case.name, imp, measurement)
                };
                on_row(&row);
                rows.push(row);
            }
        }
    }
    Ok(rows)
}
