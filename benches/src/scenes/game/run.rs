//! Running the `game` scenario: per case a setup (both worlds from one
//! [`Layout`], checked equal), timed frames (one `App::update` each, the
//! implementations in turns of a few frames, each frame's per-system times
//! recorded outside the timed part), and a check after (the worlds still
//! agree).

use std::fmt::Write as _;
use std::time::Instant;

use super::{GAME_CASES, GameCase, GameScene, LARGE_ENTITIES, Layout};
use crate::measure::{Config, Measurement};
use crate::row::{Impl, Row, ScenarioId};
use crate::scenarios::goals::GAME as GAME_GOALS;
use crate::scenes::{ChunkCounts, SystemReport};

/// The scene's systems as reported, one row each for both ECSs (a row
/// whose work bevy splits over several systems adds them up).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SystemKind {
    /// The broad phase on `Position` (ours: incremental from chunk ticks;
    /// bevy: the grid rebuilt from a query).
    BroadPhasePositions,
    /// The broad phase on `UnitPosition`.
    BroadPhaseUnits,
    /// `spin_rigs`.
    SpinRigs,
    /// `move_target_and_predator`.
    MoveTargetAndPredator,
    /// `steer_boids`.
    SteerBoids,
    /// `move_boids`.
    MoveBoids,
    /// `march`.
    March,
    /// `fight`.
    Fight,
    /// `reap`.
    Reap,
    /// Transform propagation (ours: `propagate_transforms`; bevy:
    /// `mark_dirty_trees`, `propagate_parent_transforms` and
    /// `sync_simple_transforms`).
    Propagate,
    /// `sync_positions`.
    SyncPositions,
}

/// The names of the [`SystemKind`] rows, in order.
pub const GAME_SYSTEMS: [&str; 11] = [
    "broad phase Position",
    "broad phase UnitPosition",
    "spin_rigs",
    "move_target_and_predator",
    "steer_boids",
    "move_boids",
    "march",
    "fight",
    "reap",
    "propagate transforms",
    "sync_positions",
];

/// Timed frames are at least this many per implementation, whatever the
/// time budget.
const MIN_TIMED_FRAMES: usize = 10;

/// Frames each implementation runs in one turn of the timed phase (the
/// first of them untimed): both worlds see the same machine over the run,
/// and each is timed as a game runs it, frame after frame.
const RUN_FRAMES: usize = 4;

/// What one implementation measured in one case.
#[derive(Clone, Debug, PartialEq)]
pub struct GameResult {
    /// The implementation.
    pub imp: Impl,
    /// The whole frame.
    pub frame: Measurement,
    /// Median of each of [`GAME_SYSTEMS`] over the timed frames,
    /// microseconds.
    pub systems: [f64; GAME_SYSTEMS.len()],
    /// Chunk counters of the latest frame, where the ECS has them.
    pub chunks: Option<ChunkCounts>,
    /// Units alive after the last frame.
    pub alive: usize,
    /// Entities in the world after the last frame.
    pub entities: usize,
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// Builds the case's scene on `imp`; `Ok(None)` where the implementation
/// has no game scene (or is not compiled in).
///
/// # Errors
/// The scene's setup error.
pub fn scene(imp: Impl, layout: &Layout) -> Result<Option<Box<dyn GameScene>>, String> {
    Ok(match imp {
        Impl::Ours => Some(Box::new(super::ours::GameApp::new(layout)?)),
        #[cfg(feature = "peers")]
        Impl::Bevy => Some(Box::new(super::bevy::GameApp::new(layout)?)),
        _ => None,
    })
}

/// Runs `frames` frames on every scene, in turn.
fn run_frames(scenes: &mut [(Impl, Box<dyn GameScene>)], frames: usize) -> Result<(), String> {
    for _ in 0..frames {
        for (imp, scene) in scenes.iter_mut() {
            scene.frame().map_err(|e| format!("{}: {e}", imp.name()))?;
        }
    }
    Ok(())
}

/// Compares every scene's world with the first's; `when` says when, for
/// the message.
///
/// # Errors
/// The first implementation whose world differs from the first's (or
/// whose snapshot fails), naming both.
pub fn check_agree(scenes: &mut [(Impl, Box<dyn GameScene>)], when: &str) -> Result<(), String> {
    let mut first = None;
    for (imp, scene) in scenes.iter_mut() {
        let snap = scene.snapshot().map_err(|e| format!("{} {when}: {e}", imp.name()))?;
        match &first {
            None => first = Some((*imp, snap)),
            Some((first_imp, reference)) => reference.compare(&snap).map_err(|e| {
                format!("{} and {} disagree {when}: {e} ({} first)", first_imp.name(), imp.name(), first_imp.name())
            })?,
        }
    }
    Ok(())
}

/// Measures one case: setup, `cfg.samples / 2` warm-up frames (checked
/// after the first and the last), then turns of `RUN_FRAMES` (4) frames per
/// implementation, all but the first of each timed, until `cfg.samples`
/// timed frames per implementation (fewer, at least `MIN_TIMED_FRAMES`
/// (10), when [`Config::max_total_time`] per implementation runs out), and a
/// check after.
///
/// # Errors
/// A message naming the case when a scene fails to build or run, or when
/// the worlds disagree.
pub fn run_case(case: &GameCase, cfg: &Config) -> Result<Vec<GameResult>, String> {
    let fail = |e: String| format!("game/{}: {e}", case.name);
    let layout = Layout::new(case.entities, case.active).map_err(fail)?;
    let mut scenes: Vec<(Impl, Box<dyn GameScene>)> = Vec::new();
    for &imp in Impl::compiled() {
        if let Some(scene) = scene(imp, &layout).map_err(|e| fail(format!("{}: setup: {e}", imp.name())))? {
            scenes.push((imp, scene));
        }
    }
    drop(layout);
    // The first frame sees every spawn (and runs ours' startup schedules).
    run_frames(&mut scenes, 1).map_err(fail)?;
    check_agree(&mut scenes, "after the first frame").map_err(fail)?;
    let warmup = (cfg.samples / 2).max(2);
    run_frames(&mut scenes, warmup - 1).map_err(fail)?;
    check_agree(&mut scenes, &format!("after {warmup} warm-up frames")).map_err(fail)?;

    let mut frame_us: Vec<Vec<f64>> = vec![Vec::with_capacity(cfg.samples); scenes.len()];
    let mut system_us: Vec<Vec<[f64; GAME_SYSTEMS.len()]>> = vec![Vec::with_capacity(cfg.samples); scenes.len()];
    let budget = cfg.max_total_time * scenes.len().max(1) as u32;
    let phase = Instant::now();
    let wanted = cfg.samples.max(MIN_TIMED_FRAMES);
    // Timed frames per implementation so far (every turn adds the same).
    let mut timed = 0;
    // In turns of `RUN_FRAMES` frames each: the first of a turn follows the
    // other ECS's frames (caches and the other's thread pool still warm from
    // them), which a game, running one world frame after frame, never
    // sees; it runs untimed, the rest are timed.
    while timed < wanted {
        for (i, (imp, scene)) in scenes.iter_mut().enumerate() {
            scene.frame().map_err(|e| fail(format!("{}: frame: {e}", imp.name())))?;
            for _ in 1..RUN_FRAMES {
                let start = Instant::now();
                let ran = scene.frame();
                let elapsed = start.elapsed();
                ran.map_err(|e| fail(format!("{}: timed frame: {e}", imp.name())))?;
                frame_us[i].push(elapsed.as_secs_f64() * 1e6);
                system_us[i].push(scene.system_times());
            }
        }
        timed += RUN_FRAMES - 1;
        if timed >= MIN_TIMED_FRAMES && phase.elapsed() >= budget {
            break;
        }
    }
    let ran = timed / (RUN_FRAMES - 1) * RUN_FRAMES;
    check_agree(&mut scenes, &format!("after {warmup} + {ran} frames")).map_err(fail)?;

    let mut results = Vec::new();
    for (i, (imp, scene)) in scenes.iter_mut().enumerate() {
        let samples = &mut frame_us[i];
        let frame = Measurement {
            median_us: median(samples),
            min_us: samples.first().copied().unwrap_or(f64::NAN),
            max_us: samples.last().copied().unwrap_or(f64::NAN),
            samples: samples.len(),
            iters_per_sample: 1,
        };
        let mut systems = [0.0; GAME_SYSTEMS.len()];
        for (k, out) in systems.iter_mut().enumerate() {
            let mut column: Vec<f64> = system_us[i].iter().map(|s| s[k]).collect();
            *out = median(&mut column);
        }
        let snap = scene.snapshot().map_err(|e| fail(format!("{}: {e}", imp.name())))?;
        results.push(GameResult {
            imp: *imp,
            frame,
            systems,
            chunks: scene.chunk_counts(),
            alive: snap.alive(),
            entities: snap.entities,
        });
    }
    Ok(results)
}

/// The cases of [`GAME_CASES`] to run: all, or without the ones of
/// [`LARGE_ENTITIES`] or more when `skip_large`.
pub fn cases(skip_large: bool) -> impl Iterator<Item = &'static GameCase> {
    GAME_CASES.iter().filter(move |c| !(skip_large && c.entities >= LARGE_ENTITIES))
}

/// Runs the `game` scenario (without the 1M case when `skip_large`);
/// `on_row` is called as each row is measured.
///
/// Each row's `systems` carry the per-system medians over the timed frames
/// (in `last_run_us`), its `count` the units alive after the last frame.
///
/// # Errors
/// As [`run_case`].
pub fn run(cfg: &Config, skip_large: bool, mut on_row: impl FnMut(&Row)) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for case in cases(skip_large) {
        for result in run_case(case, cfg)? {
            let row = Row {
                scenario: ScenarioId::Game,
                case: case.name.into(),
                imp: result.imp,
                measurement: result.frame,
                chunks: result.chunks,
                rows: None,
                systems: GAME_SYSTEMS
                    .iter()
                    .zip(result.systems)
                    .map(|(name, us)| SystemReport {
                        name: (*name).to_owned(),
                        last_run_us: us,
                        chunks: ChunkCounts::default(),
                    })
                    .collect(),
                count: Some(result.alive),
                kbps: None,
            };
            on_row(&row);
            rows.push(row);
        }
    }
    Ok(rows)
}

fn us(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() && v >= 100.0 => format!("{v:.0}"),
        Some(v) if v.is_finite() => format!("{v:.1}"),
        _ => "-".to_owned(),
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// The `game` rows as a table: per case the whole-frame medians, the
/// ratio, the goal; then per case the per-system medians of both, and what
/// the frame spends outside the scene's systems (app, clocks, executor;
/// negative where systems ran in parallel).
pub fn table(rows: &[Row]) -> String {
    let rows: Vec<&Row> = rows.iter().filter(|r| r.scenario == ScenarioId::Game).collect();
    let mut cases: Vec<&str> = Vec::new();
    for r in &rows {
        if !cases.contains(&r.case.as_ref()) {
            cases.push(&r.case);
        }
    }
    let get = |case: &str, imp: Impl| rows.iter().copied().find(|r| r.case == case && r.imp == imp);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "scenario game: median us per whole frame (App::update: one fixed step of 1/60 s); ratio = ours / bevy"
    );
    let _ = writeln!(
        out,
        "{:<16} {:>9} {:>10} {:>10} {:>10} {:>12} {:>8}",
        "case", "entities", "ours", "bevy", "ours/bevy", "goal", "alive"
    );
    for &case in &cases {
        let (o, b) = (get(case, Impl::Ours), get(case, Impl::Bevy));
        let r = ratio(o.map(|r| r.measurement.median_us), b.map(|r| r.measurement.median_us));
        let goal = GAME_GOALS.iter().find(|g| g.case == case).map_or("-".to_owned(), |goal| {
            let g = goal.bound;
            match r {
                Some(r) if r <= g => format!("<= {g} met"),
                Some(_) => format!("<= {g} MISSED"),
                None => format!("<= {g}"),
            }
        });
        let any = o.or(b);
        let _ = writeln!(
            out,
            "{:<16} {:>9} {:>10} {:>10} {:>10} {:>12} {:>8}",
            case,
            GAME_CASES.iter().find(|c| c.name == case).map_or("-".to_owned(), |c| c.entities.to_string()),
            us(o.map(|r| r.measurement.median_us)),
            us(b.map(|r| r.measurement.median_us)),
            r.map_or("-".to_owned(), |r| format!("{r:.2}x")),
            goal,
            any.and_then(|r| r.count).map_or("-".to_owned(), |n| n.to_string()),
        );
    }
    for &case in &cases {
        let (o, b) = (get(case, Impl::Ours), get(case, Impl::Bevy));
        let _ = writeln!(out, "per system, median us over the timed frames ({case}):");
        let _ = writeln!(out, "  {:<26} {:>10} {:>10} {:>10}", "system", "ours", "bevy", "ours/bevy");
        let system = |r: Option<&&Row>, k: usize| r.and_then(|r| r.systems.get(k)).map(|s| s.last_run_us);
        for (k, name) in GAME_SYSTEMS.iter().enumerate() {
            let (so, sb) = (system(o.as_ref(), k), system(b.as_ref(), k));
            let _ = writeln!(
                out,
                "  {:<26} {:>10} {:>10} {:>10}",
                name,
                us(so),
                us(sb),
                ratio(so, sb).map_or("-".to_owned(), |r| format!("{r:.2}x"))
            );
        }
        let rest = |r: Option<&&Row>| {
            r.map(|r| r.measurement.median_us - r.systems.iter().map(|s| s.last_run_us).sum::<f64>())
        };
        let _ = writeln!(
            out,
            "  {:<26} {:>10} {:>10}",
            "frame - systems",
            rest(o.as_ref()).map_or("-".to_owned(), |v| format!("{v:.1}")),
            rest(b.as_ref()).map_or("-".to_owned(), |v| format!("{v:.1}"))
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_rows_match_their_kinds() {
        assert_eq!(GAME_SYSTEMS[SystemKind::BroadPhasePositions as usize], "broad phase Position");
        assert_eq!(GAME_SYSTEMS[SystemKind::Fight as usize], "fight");
        assert_eq!(GAME_SYSTEMS[SystemKind::SyncPositions as usize], "sync_positions");
        assert_eq!(SystemKind::SyncPositions as usize, GAME_SYSTEMS.len() - 1);
    }

    #[test]
    fn the_table_shows_ratio_goal_and_split() {
        let m = |us| Measurement { median_us: us, min_us: us, max_us: us, samples: 3, iters_per_sample: 1 };
        let systems = |us: f64| {
            GAME_SYSTEMS
                .iter()
                .map(|n| SystemReport { name: (*n).to_owned(), last_run_us: us, chunks: ChunkCounts::default() })
                .collect::<Vec<_>>()
        };
        let row = |imp, us| Row {
            scenario: ScenarioId::Game,
            case: "active_5pct".into(),
            imp,
            measurement: m(us),
            chunks: None,
            rows: Some(100_002),
            systems: systems(us / 20.0),
            count: Some(9_000),
            kbps: None,
        };
        let t = table(&[row(Impl::Ours, 1000.0), row(Impl::Bevy, 4000.0)]);
        assert!(t.contains("0.25x") && t.contains("<= 0.5 met") && t.contains("9000"), "{t}");
        assert!(t.contains("per system") && t.contains("fight") && t.contains("frame - systems"), "{t}");
        let t = table(&[row(Impl::Ours, 3000.0), row(Impl::Bevy, 4000.0)]);
        assert!(t.contains("<= 0.5 MISSED"), "{t}");
    }
}
