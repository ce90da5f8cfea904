//! Runs the scenarios over every compiled-in implementation and formats the
//! results (human-readable table or JSON lines).

use std::fmt::Write as _;

use crate::measure::{self, Batched, Config, Measurement, Sampler, WithSetup};
use crate::scenes::app::{APP_CASES, AppCase, AppScene};
use crate::scenes::spatial::{self, SPATIAL_CASES, SpatialOp, SpatialScene};
use crate::scenes::transform::{TRANSFORM_CASES, TransformCase, TransformScene};
use crate::scenes::{
    self, ChunkCounts, Frame, SKIP_CASES, SUITE_CASES, ScheduleScene, SkipCase, SkipScene, SystemReport,
};

/// A scenario selectable on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// The ecs_bench_suite cases.
    Suite,
    /// Chunk skipping under `Changed<Pos>`.
    Skip,
    /// The ecs_bench_suite `schedule` case: three systems in one schedule;
    /// and app frames: 50 trivial systems in 7 labelled schedules.
    Schedule,
    /// Hierarchy propagation, ours against `bevy_transform`.
    Transform,
    /// Broad phase over 100k points, ours against kiddo and rstar (one thread).
    Spatial,
    /// Snapshot replication: cube-scene bandwidth, encode cost, fan-out.
    Replication,
    /// The showcase's scene as whole frames, ours against bevy
    /// ([`scenes::game`]); `skip_1m` leaves out the 1M-entity case.
    Game {
        /// Leave out the cases of [`scenes::game::LARGE_ENTITIES`] or more.
        skip_1m: bool,
    },
}

impl Scenario {
    /// The name used on the command line and in the output.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Suite => "suite",
            Scenario::Skip => "skip",
            Scenario::Schedule => "schedule",
            Scenario::Transform => "transform",
            Scenario::Spatial => "spatial",
            Scenario::Replication => "replication",
            Scenario::Game { .. } => "game",
        }
    }
}

/// An ECS implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Impl {
    /// This workspace's `ecs-core`.
    Ours,
    /// `bevy_ecs` 0.20.
    Bevy,
    /// `hecs` 0.11.
    Hecs,
    /// kiddo 6.3's immutable k-d tree (`spatial` only).
    Kiddo,
    /// rstar 0.14's R*-tree (`spatial` only).
    Rstar,
}

impl Impl {
    /// The name used in the output.
    pub fn name(self) -> &'static str {
        match self {
            Impl::Ours => "ours",
            Impl::Bevy => "bevy",
            Impl::Hecs => "hecs",
            Impl::Kiddo => "kiddo",
            Impl::Rstar => "rstar",
        }
    }

    /// The spatial structures compiled into this build, ours first (peers
    /// need feature `peers`).
    pub fn spatial() -> &'static [Impl] {
        #[cfg(feature = "peers")]
        {
            &[Impl::Ours, Impl::Kiddo, Impl::Rstar]
        }
        #[cfg(not(feature = "peers"))]
        {
            &[Impl::Ours]
        }
    }

    /// The ECS implementations compiled into this build (peers need feature `peers`).
    pub fn compiled() -> &'static [Impl] {
        #[cfg(feature = "peers")]
        {
            &[Impl::Ours, Impl::Bevy, Impl::Hecs]
        }
        #[cfg(not(feature = "peers"))]
        {
            &[Impl::Ours]
        }
    }
}

/// One measured (scenario, case, implementation).
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The scenario.
    pub scenario: Scenario,
    /// Case name.
    pub case: &'static str,
    /// Implementation.
    pub imp: Impl,
    /// Timing.
    pub measurement: Measurement,
    /// Chunk counters of the last timed query run (ours only, where applicable).
    pub chunks: Option<ChunkCounts>,
    /// Rows the consumer processes per frame (chunk-skip scenario only).
    pub rows: Option<usize>,
    /// Per-system timing and chunk counters of the last timed run (schedule
    /// scenario, ours only; empty otherwise).
    pub systems: Vec<SystemReport>,
    /// What the timed work counted, checked outside timing (`spatial` only):
    /// hits of all queries, pairs within the radius, or points built or sorted.
    pub count: Option<usize>,
    /// Snapshot bandwidth per client, kilobits per second (`replication` only).
    pub kbps: Option<f64>,
}

impl Row {
    /// The row as one JSON object (no trailing newline).
    pub fn to_json(&self) -> String {
        let mut s = format!(
            "{{\"scenario\":\"{}\",\"case\":\"{}\",\"impl\":\"{}\",\"median_us\":{}",
            self.scenario.name(),
            self.case,
            self.imp.name(),
            json_number(self.measurement.median_us)
        );
        if let Some(c) = self.chunks {
            let _ = write!(s, ",\"chunks_total\":{},\"chunks_skipped\":{}", c.total, c.skipped);
        }
        if let Some(n) = self.count {
            let _ = write!(s, ",\"count\":{n}");
        }
        if let Some(k) = self.kbps {
            let _ = write!(s, ",\"kbps\":{}", json_number(k));
        }
        if !self.systems.is_empty() {
            s.push_str(",\"systems\":[");
            for (i, sys) in self.systems.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                let _ = write!(
                    s,
                    "{{\"name\":{},\"last_run_us\":{},\"chunks_total\":{},\"chunks_skipped\":{}}}",
                    json_string(&sys.name),
                    json_number(sys.last_run_us),
                    sys.chunks.total,
                    sys.chunks.skipped
                );
            }
            s.push(']');
        }
        s.push('}');
        s
    }
}

fn json_string(text: &str) -> String {
    let mut s = String::with_capacity(text.len() + 2);
    s.push('"');
    for ch in text.chars() {
        match ch {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", u32::from(c));
            }
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

fn json_number(x: f64) -> String {
    if x.is_finite() {
        // Three decimals (nanosecond resolution); Display drops trailing zeros.
        format!("{}", (x * 1000.0).round() / 1000.0)
    } else {
        "null".to_owned()
    }
}

/// Builds the suite scene `case` for `imp`; `None` where the implementation
/// has no such scene (hecs has no parallel iteration).
pub fn suite_scene(case: &str, imp: Impl) -> Option<Box<dyn Frame>> {
    use scenes::ours;
    let scene: Box<dyn Frame> = match (imp, case) {
        (Impl::Ours, "simple_insert") => Box::new(ours::SimpleInsert),
        (Impl::Ours, "simple_iter") => Box::new(ours::SimpleIter::new()),
        (Impl::Ours, "frag_iter") => Box::new(ours::FragIter::new()),
        (Impl::Ours, "heavy_compute") => Box::new(ours::HeavyCompute::new()),
        (Impl::Ours, "add_remove") => Box::new(ours::AddRemove::new()),
        (Impl::Ours, "simple_insert_hooks") => Box::new(ours::SimpleInsertHooked),
        (Impl::Ours, "add_remove_hooks") => Box::new(ours::AddRemove::hooked()),
        #[cfg(feature = "peers")]
        (Impl::Bevy, "simple_insert") => Box::new(scenes::bevy::SimpleInsert),
        #[cfg(feature = "peers")]
        (Impl::Bevy, "simple_iter") => Box::new(scenes::bevy::SimpleIter::new()),
        #[cfg(feature = "peers")]
        (Impl::Bevy, "frag_iter") => Box::new(scenes::bevy::FragIter::new()),
        #[cfg(feature = "peers")]
        (Impl::Bevy, "heavy_compute") => Box::new(scenes::bevy::HeavyCompute::new()),
        #[cfg(feature = "peers")]
        (Impl::Bevy, "add_remove") => Box::new(scenes::bevy::AddRemove::new()),
        #[cfg(feature = "peers")]
        (Impl::Hecs, "simple_insert") => Box::new(scenes::hecs::SimpleInsert),
        #[cfg(feature = "peers")]
        (Impl::Hecs, "simple_iter") => Box::new(scenes::hecs::SimpleIter::new()),
        #[cfg(feature = "peers")]
        (Impl::Hecs, "frag_iter") => Box::new(scenes::hecs::FragIter::new()),
        #[cfg(feature = "peers")]
        (Impl::Hecs, "add_remove") => Box::new(scenes::hecs::AddRemove::new()),
        _ => return None,
    };
    Some(scene)
}

/// Builds the chunk-skip scene for `case` on `imp`; `None` where the
/// implementation has no change detection (hecs).
pub fn skip_scene(case: &SkipCase, imp: Impl) -> Option<Box<dyn SkipScene>> {
    match imp {
        Impl::Ours => Some(Box::new(scenes::ours::Skip::new(case))),
        #[cfg(feature = "peers")]
        Impl::Bevy => Some(Box::new(scenes::bevy::Skip::new(case))),
        _ => None,
    }
}

/// Runs one scenario, passing each row to `on_row` as it is measured.
///
/// # Errors
///
/// A message naming the case when a scenario's outside-timing check fails
/// (the implementations disagree on what they computed).
pub fn run(scenario: Scenario, cfg: &Config, on_row: impl FnMut(&Row)) -> Result<Vec<Row>, String> {
    match scenario {
        Scenario::Suite => Ok(run_suite(cfg, on_row)),
        Scenario::Skip => run_skip(cfg, on_row),
        Scenario::Schedule => run_schedule(cfg, on_row),
        Scenario::Transform => run_transform(cfg, on_row),
        Scenario::Spatial => run_spatial(cfg, on_row),
        Scenario::Replication => crate::replication::run_replication(cfg, on_row),
        Scenario::Game { skip_1m } => scenes::game::run(cfg, skip_1m, on_row),
    }
}

/// Runs the suite; `on_row` is called as each row is measured.
///
/// The implementations of one case are measured interleaved (see
/// [`measure::measure_interleaved`]).
pub fn run_suite(cfg: &Config, mut on_row: impl FnMut(&Row)) -> Vec<Row> {
    let mut rows = Vec::new();
    for case in SUITE_CASES {
        let mut scenes: Vec<(Impl, Box<dyn Frame>)> =
            Impl::compiled().iter().filter_map(|&imp| suite_scene(case, imp).map(|s| (imp, s))).collect();
        let measurements = {
            let mut samplers: Vec<Batched<_>> =
                scenes.iter_mut().map(|(_, scene)| Batched::new(move || scene.frame())).collect();
            let mut refs: Vec<&mut dyn Sampler> = samplers.iter_mut().map(|s| s as &mut dyn Sampler).collect();
            measure::measure_interleaved(cfg, &mut refs)
        };
        for ((imp, scene), measurement) in scenes.iter().zip(measurements) {
            let row = Row {
                scenario: Scenario::Suite,
                case,
                imp: *imp,
                measurement,
                chunks: scene.chunk_counts(),
                rows: None,
                systems: Vec::new(),
                count: None,
                kbps: None,
            };
            on_row(&row);
            rows.push(row);
        }
    }
    rows
}

/// Per-implementation state of a chunk-skip measurement.
struct SkipState {
    scene: Box<dyn SkipScene>,
    movers: usize,
    last_rows: Option<usize>,
    mismatch: Option<usize>,
}

impl SkipState {
    /// Untimed: checks the previous frame's row count, then runs the writer.
    fn setup(&mut self) {
        if let Some(r) = self.last_rows.take()
            && r != self.movers
        {
            self.mismatch.get_or_insert(r);
        }
        self.scene.write();
    }

    /// Timed: the consumer.
    fn consume(&mut self) -> usize {
        let r = self.scene.consume();
        self.last_rows = Some(r);
        r
    }

    fn mismatch(&self) -> Option<usize> {
        self.mismatch.or(self.last_rows.filter(|&r| r != self.movers))
    }
}

/// Runs the chunk-skip scenario; `on_row` is called as each row is measured.
///
/// Before timing, each scene runs a few checked frames; during timing, the
/// consumer's row count of every frame is compared with the number of movers
/// (outside the timed part). Any mismatch is an error: the implementations
/// would not be doing the same work. The implementations of one case are
/// measured interleaved.
pub fn run_skip(cfg: &Config, mut on_row: impl FnMut(&Row)) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for case in &SKIP_CASES {
        let mut states = Vec::new();
        for &imp in Impl::compiled() {
            let Some(mut scene) = skip_scene(case, imp) else {
                continue;
            };
            scene.check().map_err(|e| format!("skip/{}/{}: {e}", case.name, imp.name()))?;
            let movers = scene.movers();
            states.push((imp, SkipState { scene, movers, last_rows: None, mismatch: None }));
        }
        let measurements = {
            let mut samplers: Vec<WithSetup<'_, SkipState, _, _>> =
                states.iter_mut().map(|(_, st)| WithSetup::new(st, SkipState::setup, SkipState::consume)).collect();
            let mut refs: Vec<&mut dyn Sampler> = samplers.iter_mut().map(|s| s as &mut dyn Sampler).collect();
            measure::measure_interleaved(cfg, &mut refs)
        };
        for ((imp, st), measurement) in states.iter().zip(measurements) {
            if let Some(r) = st.mismatch() {
                return Err(format!(
                    "skip/{}/{}: consumer processed {r} rows while the writer moved {}",
                    case.name,
                    imp.name(),
                    st.movers
                ));
            }
            let row = Row {
                scenario: Scenario::Skip,
                case: case.name,
                imp: *imp,
                measurement,
                chunks: st.scene.chunk_counts(),
                rows: Some(st.movers),
                systems: Vec::new(),
                count: None,
                kbps: None,
            };
            on_row(&row);
            rows.push(row);
        }
    }
    Ok(rows)
}

/// Builds the `schedule` scene on `imp`; `None` where the implementation has
/// no schedule (hecs).
pub fn schedule_scene(imp: Impl) -> Option<Box<dyn ScheduleScene>> {
    match imp {
        Impl::Ours => Some(Box::new(scenes::ours::ScheduleBench::new())),
        #[cfg(feature = "peers")]
        Impl::Bevy => Some(Box::new(scenes::bevy::ScheduleBench::new())),
        _ => None,
    }
}

/// The case name of the `schedule` scenario's only row per implementation.
pub const SCHEDULE_CASE: &str = "schedule";

/// Builds the app-frame scene for `case` on `imp`; `None` where the
/// implementation has no app (hecs).
pub fn app_scene(case: &AppCase, imp: Impl) -> Option<Box<dyn AppScene>> {
    match imp {
        Impl::Ours => Some(Box::new(scenes::app::ours::AppFrame::new(case))),
        #[cfg(feature = "peers")]
        Impl::Bevy => Some(Box::new(scenes::app::bevy::AppFrame::new(case))),
        _ => None,
    }
}

/// Runs the `schedule` scenario; `on_row` is called as each row is measured.
///
/// The `schedule` case: each implementation's scene is checked before
/// timing (initial values, then after one and two runs) and again after
/// timing, with the total number of runs, which warm-up and samples
/// included: the sampled entities must show every pair swapped once per
/// run, so both implementations did the same work. One iteration is one run
/// of the schedule; the implementations are measured interleaved.
///
/// Then the app-frame cases ([`APP_CASES`]): one iteration is one
/// `App::update` of an app with 50 trivial systems in 7 labelled schedules
/// (ours against bevy_app), checked before and after timing (every system
/// ran once per frame, or never where its run condition says no).
pub fn run_schedule(cfg: &Config, on_row: impl FnMut(&Row)) -> Result<Vec<Row>, String> {
    let mut on_row = on_row;
    let mut rows = run_schedule_case(cfg, &mut on_row)?;
    for case in &APP_CASES {
        let mut scenes: Vec<(Impl, Box<dyn AppScene>)> = Vec::new();
        for &imp in Impl::compiled() {
            let Some(mut scene) = app_scene(case, imp) else {
                continue;
            };
            scene
                .check_frames()
                .map_err(|e| format!("schedule/{}/{}: check before timing: {e}", case.name, imp.name()))?;
            scenes.push((imp, scene));
        }
        let measurements = {
            let mut samplers: Vec<Batched<_>> =
                scenes.iter_mut().map(|(_, scene)| Batched::new(move || scene.frame())).collect();
            let mut refs: Vec<&mut dyn Sampler> = samplers.iter_mut().map(|s| s as &mut dyn Sampler).collect();
            measure::measure_interleaved(cfg, &mut refs)
        };
        for ((imp, scene), measurement) in scenes.iter().zip(measurements) {
            scene.check().map_err(|e| format!("schedule/{}/{}: check after timing: {e}", case.name, imp.name()))?;
            let row = Row {
                scenario: Scenario::Schedule,
                case: case.name,
                imp: *imp,
                measurement,
                chunks: None,
                rows: None,
                systems: Vec::new(),
                count: None,
                kbps: None,
            };
            on_row(&row);
            rows.push(row);
        }
    }
    Ok(rows)
}

/// The `schedule` case of [`run_schedule`].
fn run_schedule_case(cfg: &Config, mut on_row: impl FnMut(&Row)) -> Result<Vec<Row>, String> {
    let mut scenes: Vec<(Impl, Box<dyn ScheduleScene>)> = Vec::new();
    for &imp in Impl::compiled() {
        let Some(mut scene) = schedule_scene(imp) else {
            continue;
        };
        scene.check_runs().map_err(|e| format!("schedule/{}: check before timing: {e}", imp.name()))?;
        scenes.push((imp, scene));
    }
    let measurements = {
        let mut samplers: Vec<Batched<_>> =
            scenes.iter_mut().map(|(_, scene)| Batched::new(move || scene.run())).collect();
        let mut refs: Vec<&mut dyn Sampler> = samplers.iter_mut().map(|s| s as &mut dyn Sampler).collect();
        measure::measure_interleaved(cfg, &mut refs)
    };
    let mut rows = Vec::new();
    for ((imp, scene), measurement) in scenes.iter().zip(measurements) {
        scene.check().map_err(|e| format!("schedule/{}: check after timing: {e}", imp.name()))?;
        let row = Row {
            scenario: Scenario::Schedule,
            case: SCHEDULE_CASE,
            imp: *imp,
            measurement,
            chunks: scene.chunk_counts(),
            rows: None,
            systems: scene.systems(),
            count: None,
            kbps: None,
        };
        on_row(&row);
        rows.push(row);
    }
    Ok(rows)
}

/// Builds the `transform` scene for `case` on `imp`; `None` where the
/// implementation has no transform hierarchy (hecs).
pub fn transform_scene(case: &TransformCase, imp: Impl) -> Option<Box<dyn TransformScene>> {
    match imp {
        Impl::Ours => Some(Box::new(scenes::transform::ours::Propagation::new(case))),
        #[cfg(feature = "peers")]
        Impl::Bevy => Some(Box::new(scenes::transform::bevy::Propagation::new(case))),
        _ => None,
    }
}

/// Runs the `transform` scenario; `on_row` is called as each row is measured.
///
/// Each scene is checked before timing (a first propagation and two moving
/// frames) and after it (sampled globals against the reference for the
/// number of frames moved). One iteration moves the roots untimed, then
/// times one propagation run; the implementations of one case are measured
/// interleaved. Ours reports the propagation system's chunk counters of the
/// last timed run.
pub fn run_transform(cfg: &Config, mut on_row: impl FnMut(&Row)) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for case in &TRANSFORM_CASES {
        let mut scenes: Vec<(Impl, Box<dyn TransformScene>)> = Vec::new();
        for &imp in Impl::compiled() {
            let Some(mut scene) = transform_scene(case, imp) else {
                continue;
            };
            scene
                .check_frames()
                .map_err(|e| format!("transform/{}/{}: check before timing: {e}", case.name, imp.name()))?;
            scenes.push((imp, scene));
        }
        let measurements = {
            let mut samplers: Vec<WithSetup<'_, Box<dyn TransformScene>, _, _>> = scenes
                .iter_mut()
                .map(|(_, scene)| {
                    WithSetup::new(
                        scene,
                        |s: &mut Box<dyn TransformScene>| s.move_roots(),
                        |s: &mut Box<dyn TransformScene>| s.propagate(),
                    )
                })
                .collect();
            let mut refs: Vec<&mut dyn Sampler> = samplers.iter_mut().map(|s| s as &mut dyn Sampler).collect();
            measure::measure_interleaved(cfg, &mut refs)
        };
        for ((imp, scene), measurement) in scenes.iter().zip(measurements) {
            scene.check().map_err(|e| format!("transform/{}/{}: check after timing: {e}", case.name, imp.name()))?;
            let row = Row {
                scenario: Scenario::Transform,
                case: case.name,
                imp: *imp,
                measurement,
                chunks: scene.chunk_counts(),
                rows: Some(scene.forest().movers.len()),
                systems: Vec::new(),
                count: None,
                kbps: None,
            };
            on_row(&row);
            rows.push(row);
        }
    }
    Ok(rows)
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
/// order. `nothing`, `5pct` and `all` time one frame of ours' broad-phase
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
        for case in SPATIAL_CASES.iter().filter(|c| c.set == set_index) {
            let fail = |imp: Impl, e: String| format!("spatial/{}/{}: {e}", case.name, imp.name());
            let mut measured: Vec<(Impl, Measurement, usize)> = Vec::new();
            let mut system_chunks: Option<ChunkCounts> = None;
            match case.op {
                SpatialOp::Build => {
                    let ms = {
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
                        let mut refs: Vec<&mut dyn Sampler> =
                            samplers.iter_mut().map(|s| s as &mut dyn Sampler).collect();
                        measure::measure_interleaved(cfg, &mut refs)
                    };
                    for ((imp, scene), m) in scenes.iter().zip(ms) {
                        let len = scene.built_len().map_err(|e| fail(*imp, e))?;
                        if len != n {
                            return Err(fail(*imp, format!("the structure holds {len} points, expected {n}")));
                        }
                        measured.push((*imp, m, len));
                    }
                }
                SpatialOp::AllQueries | SpatialOp::AllPairs => {
                    let pairs = case.op == SpatialOp::AllPairs;
                    let want = if pairs { (hits - n) / 2 } else { hits };
                    let mut active: Vec<(Impl, &mut Box<dyn SpatialScene>, Option<usize>)> = scenes
                        .iter_mut()
                        .filter(|(imp, _)| !pairs || *imp == Impl::Ours)
                        .map(|(imp, s)| (*imp, s, None))
                        .collect();
                    let ms = {
                        let mut samplers: Vec<Batched<_>> = active
                            .iter_mut()
                            .map(|(_, s, last)| {
                                Batched::new(move || {
                                    let got = if pairs { s.all_pairs() } else { Some(s.all_queries()) };
                                    // Keep the first mismatch, if any.
                                    if last.is_none_or(|l| l == want) {
                                        *last = Some(got.unwrap_or(usize::MAX));
                                    }
                                })
                            })
                            .collect();
                        let mut refs: Vec<&mut dyn Sampler> =
                            samplers.iter_mut().map(|s| s as &mut dyn Sampler).collect();
                        measure::measure_interleaved(cfg, &mut refs)
                    };
                    for ((imp, _, got), m) in active.into_iter().zip(ms) {
                        if got != Some(want) {
                            let what = if pairs { "pairs" } else { "hits" };
                            return Err(fail(imp, format!("a timed run counted {got:?} {what}, expected {want}")));
                        }
                        measured.push((imp, m, want));
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
                    scenario: Scenario::Spatial,
                    case: case.name,
                    imp,
                    measurement,
                    chunks: system_chunks.take(),
                    rows: None,
                    systems: Vec::new(),
                    count: Some(count),
                    kbps: None,
                };
                on_row(&row);
                rows.push(row);
            }
        }
    }
    Ok(rows)
}

fn fmt_us(x: Option<f64>) -> String {
    match x {
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) if v >= 10.0 => format!("{v:.1}"),
        Some(v) if v >= 1.0 => format!("{v:.2}"),
        Some(v) => format!("{v:.3}"),
        None => "-".to_owned(),
    }
}

fn fmt_ratio(ours: Option<f64>, peer: Option<f64>) -> String {
    match (ours, peer) {
        (Some(o), Some(p)) if p > 0.0 => format!("{:.2}x", o / p),
        _ => "-".to_owned(),
    }
}

/// Formats the rows of one scenario as a table: median microseconds per
/// implementation, the ratio ours / peer, and ours' chunk counters; for
/// `schedule`, also ours' per-system figures of the last timed run.
pub fn table(scenario: Scenario, rows: &[Row]) -> String {
    if scenario == Scenario::Replication {
        return crate::replication::table(rows);
    }
    if let Scenario::Game { .. } = scenario {
        return scenes::game::table(rows);
    }
    let mut cases: Vec<&'static str> = Vec::new();
    for r in rows.iter().filter(|r| r.scenario == scenario) {
        if !cases.contains(&r.case) {
            cases.push(r.case);
        }
    }
    let get = |case: &str, imp: Impl| rows.iter().find(|r| r.scenario == scenario && r.case == case && r.imp == imp);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "scenario {}: median us per {} (ratio = ours / peer; < 1 is faster)",
        scenario.name(),
        match scenario {
            Scenario::Suite => "frame",
            Scenario::Skip => "frame of the Changed<Pos> consumer",
            Scenario::Schedule => "schedule run or app frame",
            Scenario::Transform => "propagation run (movers untimed)",
            Scenario::Spatial => "build or pass over all 100k points, one thread",
            Scenario::Replication => "server tick",
            Scenario::Game { .. } => "whole frame",
        }
    );
    match scenario {
        Scenario::Suite => {
            let _ = write!(
                out,
                "{:<18} {:>10} {:>10} {:>10} {:>10} {:>10}",
                "case", "ours", "bevy", "hecs", "ours/bevy", "ours/hecs"
            );
        }
        // hecs has no change detection: no hecs columns here.
        Scenario::Skip => {
            let _ = write!(out, "{:<18} {:>10} {:>10} {:>10} {:>8}", "case", "ours", "bevy", "ours/bevy", "rows");
        }
        // hecs has no schedule: no hecs columns here.
        Scenario::Schedule => {
            let _ = write!(out, "{:<26} {:>10} {:>10} {:>10}", "case", "ours", "bevy", "ours/bevy");
        }
        Scenario::Transform => {
            let _ = write!(
                out,
                "{:<18} {:>10} {:>10} {:>10} {:>8} {:>8}",
                "case", "ours", "bevy", "ours/bevy", "movers", "skip %"
            );
        }
        Scenario::Spatial => {
            let _ = write!(
                out,
                "{:<26} {:>10} {:>10} {:>10} {:>11} {:>11} {:>10}",
                "case", "ours", "kiddo", "rstar", "ours/kiddo", "ours/rstar", "count"
            );
        }
        Scenario::Replication | Scenario::Game { .. } => {}
    }
    if scenario == Scenario::Spatial {
        out.push('\n');
    } else {
        let _ = writeln!(out, " {:>16}", "chunks skip/all");
    }
    for &case in &cases {
        let us = |imp| get(case, imp).map(|r| r.measurement.median_us);
        let (o, b, h) = (us(Impl::Ours), us(Impl::Bevy), us(Impl::Hecs));
        match scenario {
            Scenario::Suite => {
                let _ = write!(
                    out,
                    "{:<18} {:>10} {:>10} {:>10} {:>10} {:>10}",
                    case,
                    fmt_us(o),
                    fmt_us(b),
                    fmt_us(h),
                    fmt_ratio(o, b),
                    fmt_ratio(o, h)
                );
            }
            Scenario::Skip => {
                let n = get(case, Impl::Ours).or_else(|| get(case, Impl::Bevy)).and_then(|r| r.rows);
                let _ = write!(
                    out,
                    "{:<18} {:>10} {:>10} {:>10} {:>8}",
                    case,
                    fmt_us(o),
                    fmt_us(b),
                    fmt_ratio(o, b),
                    n.map_or("-".to_owned(), |n| n.to_string())
                );
            }
            Scenario::Schedule => {
                let _ = write!(out, "{:<26} {:>10} {:>10} {:>10}", case, fmt_us(o), fmt_us(b), fmt_ratio(o, b));
            }
            Scenario::Transform => {
                let ours = get(case, Impl::Ours);
                let movers = ours.or_else(|| get(case, Impl::Bevy)).and_then(|r| r.rows);
                let skip = ours
                    .and_then(|r| r.chunks)
                    .map(|c| if c.total == 0 { 100.0 } else { 100.0 * c.skipped as f64 / c.total as f64 });
                let _ = write!(
                    out,
                    "{:<18} {:>10} {:>10} {:>10} {:>8} {:>8}",
                    case,
                    fmt_us(o),
                    fmt_us(b),
                    fmt_ratio(o, b),
                    movers.map_or("-".to_owned(), |n| n.to_string()),
                    skip.map_or("-".to_owned(), |p| format!("{p:.1}"))
                );
            }
            Scenario::Spatial => {
                let (k, r) = (us(Impl::Kiddo), us(Impl::Rstar));
                let count = [Impl::Ours, Impl::Kiddo, Impl::Rstar].into_iter().find_map(|imp| get(case, imp)?.count);
                let _ = writeln!(
                    out,
                    "{:<26} {:>10} {:>10} {:>10} {:>11} {:>11} {:>10}",
                    case,
                    fmt_us(o),
                    fmt_us(k),
                    fmt_us(r),
                    fmt_ratio(o, k),
                    fmt_ratio(o, r),
                    count.map_or("-".to_owned(), |n| n.to_string())
                );
                continue;
            }
            Scenario::Replication | Scenario::Game { .. } => continue,
        }
        let chunks = get(case, Impl::Ours)
            .and_then(|r| r.chunks)
            .map_or("-".to_owned(), |c| format!("{}/{}", c.skipped, c.total));
        let _ = writeln!(out, " {chunks:>16}");
    }
    for &case in &cases {
        let Some(row) = get(case, Impl::Ours).filter(|r| !r.systems.is_empty()) else {
            continue;
        };
        let _ = writeln!(out, "ours, per system (last timed run of {case}):");
        let _ = writeln!(out, "  {:<40} {:>10} {:>16}", "system", "last us", "chunks skip/all");
        for sys in &row.systems {
            let last = if sys.last_run_us.is_finite() { Some(sys.last_run_us) } else { None };
            let _ = writeln!(
                out,
                "  {:<40} {:>10} {:>16}",
                sys.name,
                fmt_us(last),
                format!("{}/{}", sys.chunks.skipped, sys.chunks.total)
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_shape() {
        let row = Row {
            scenario: Scenario::Suite,
            case: "simple_iter",
            imp: Impl::Ours,
            measurement: Measurement { median_us: 5.1, min_us: 5.0, max_us: 6.0, samples: 3, iters_per_sample: 10 },
            chunks: Some(ChunkCounts { total: 7, skipped: 2 }),
            rows: None,
            systems: Vec::new(),
            count: None,
            kbps: None,
        };
        assert_eq!(
            row.to_json(),
            r#"{"scenario":"suite","case":"simple_iter","impl":"ours","median_us":5.1,"chunks_total":7,"chunks_skipped":2}"#
        );
        let row = Row { imp: Impl::Bevy, chunks: None, ..row };
        assert_eq!(row.to_json(), r#"{"scenario":"suite","case":"simple_iter","impl":"bevy","median_us":5.1}"#);
    }

    #[test]
    fn json_shape_with_systems() {
        let row = Row {
            scenario: Scenario::Schedule,
            case: SCHEDULE_CASE,
            imp: Impl::Ours,
            measurement: Measurement { median_us: 20.0, min_us: 19.0, max_us: 21.0, samples: 3, iters_per_sample: 10 },
            chunks: Some(ChunkCounts { total: 3, skipped: 0 }),
            rows: None,
            systems: vec![SystemReport {
                name: "a\"b".to_owned(),
                last_run_us: 1.25,
                chunks: ChunkCounts { total: 3, skipped: 0 },
            }],
            count: None,
            kbps: None,
        };
        assert_eq!(
            row.to_json(),
            r#"{"scenario":"schedule","case":"schedule","impl":"ours","median_us":20,"chunks_total":3,"chunks_skipped":0,"systems":[{"name":"a\"b","last_run_us":1.25,"chunks_total":3,"chunks_skipped":0}]}"#
        );
        let t = table(Scenario::Schedule, std::slice::from_ref(&row));
        assert!(t.contains("per system") && t.contains("a\"b") && t.contains("1.25"));
    }

    #[test]
    fn schedule_scenes_swap_every_pair_once_per_run() {
        for &imp in Impl::compiled() {
            let Some(mut scene) = schedule_scene(imp) else {
                continue;
            };
            scene.check_runs().unwrap_or_else(|e| panic!("{}: {e}", imp.name()));
            for _ in 0..3 {
                scene.run();
            }
            assert_eq!(scene.runs(), 5);
            scene.check().unwrap_or_else(|e| panic!("{}: {e}", imp.name()));
        }
    }

    #[test]
    fn ours_runs_ab_alongside_cd() {
        let scene = scenes::ours::ScheduleBench::new();
        let stages: Vec<Vec<String>> = scene
            .stages()
            .into_iter()
            .map(|stage| stage.into_iter().map(|name| name.rsplit("::").next().unwrap_or("").to_owned()).collect())
            .collect();
        assert_eq!(stages, [vec!["ab".to_owned(), "cd".to_owned()], vec!["ce".to_owned()]]);
    }

    #[test]
    fn spatial_rows_carry_their_count() {
        let m = Measurement { median_us: 500.0, min_us: 400.0, max_us: 600.0, samples: 3, iters_per_sample: 1 };
        let row = Row {
            scenario: Scenario::Spatial,
            case: "uniform_all_queries",
            imp: Impl::Ours,
            measurement: m.clone(),
            chunks: None,
            rows: None,
            systems: Vec::new(),
            count: Some(737_040),
            kbps: None,
        };
        assert_eq!(
            row.to_json(),
            r#"{"scenario":"spatial","case":"uniform_all_queries","impl":"ours","median_us":500,"count":737040}"#
        );
        let kiddo = Row { imp: Impl::Kiddo, measurement: Measurement { median_us: 5000.0, ..m }, ..row.clone() };
        let t = table(Scenario::Spatial, &[row, kiddo]);
        assert!(t.contains("ours/kiddo") && t.contains("ours/rstar"), "{t}");
        assert!(t.contains("0.10x") && t.contains("737040"), "{t}");
    }

    #[test]
    fn table_lists_cases() {
        let t = table(Scenario::Suite, &[]);
        assert!(t.contains("ours/bevy"));
    }
}
