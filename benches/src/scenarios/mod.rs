//! The scenarios of `ecs-bench`, as one table ([`SCENARIOS`]) that the
//! command line, the report and the criterion benches iterate.
//!
//! A [`Scenario`] has a name, a one-line description (the `--help` text),
//! its cases, how it runs, how its rows print as a table, and its goals
//! ([`Goal`]: the case, the figure compared, the bound). Most scenarios are
//! a list of [`Case`]s run the common way ([`run_cases`]): per case, every
//! compiled-in implementation builds its [`Bench`] and checks it before
//! timing, the implementations are timed interleaved (untimed setup before
//! each timed iteration where the case has one), and each is checked after
//! timing. `spatial`, `replication` and `game` have their own drivers
//! (points shared by several cases, figures that are not times, whole
//! frames with a per-system split), listed in the same table.

use std::borrow::Cow;

use crate::measure::{self, Batched, Config, Sampler, WithSetup};
use crate::row::{Impl, Row, ScenarioId};
use crate::scenes::{ChunkCounts, SystemReport};

pub mod cases;
pub mod goals;
pub mod spatial;
pub mod table;

pub use goals::{Goal, GoalFigure, Measure};

/// Options of a run that change which cases a scenario runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// `game`: leave out the 1M-entity case.
    pub skip_1m: bool,
}

/// Runs a scenario with its own driver: rows go to the callback as they
/// are measured, and all of them are returned.
pub type CustomRun = fn(&Config, RunOptions, &mut dyn FnMut(&Row)) -> Result<Vec<Row>, String>;

/// How a scenario runs.
#[derive(Clone, Copy)]
pub enum Body {
    /// Its cases, run by [`run_cases`].
    Cases(fn() -> Vec<Case>),
    /// Its own driver, and the names of the cases it reports (for the
    /// progress bar and the listings).
    Custom {
        /// The case names, in the order the driver reports them.
        cases: fn(RunOptions) -> Vec<Cow<'static, str>>,
        /// The driver.
        run: CustomRun,
    },
}

/// One scenario of `ecs-bench`.
#[derive(Clone, Copy)]
pub struct Scenario {
    /// Which one.
    pub id: ScenarioId,
    /// One line: what it measures (shown by `--help`).
    pub about: &'static str,
    /// Its cases and driver.
    pub body: Body,
    /// Its rows as a text table.
    pub table: fn(&[Row]) -> String,
    /// Its goals, checked by the report's summary.
    pub goals: &'static [Goal],
    /// Long enough (tens of seconds or more) to show a progress bar.
    pub long: bool,
}

impl Scenario {
    /// The name used on the command line and in the rows.
    pub fn name(&self) -> &'static str {
        self.id.name()
    }

    /// The names of the cases this scenario reports under `opts`.
    pub fn case_names(&self, opts: RunOptions) -> Vec<Cow<'static, str>> {
        match self.body {
            Body::Cases(cases) => cases().into_iter().map(|c| Cow::Borrowed(c.name)).collect(),
            Body::Custom { cases, .. } => cases(opts),
        }
    }

    /// Runs every case, passing each row to `on_row` as it is measured.
    ///
    /// # Errors
    ///
    /// A message naming the scenario, case and implementation when a scene
    /// fails to build or run, or a check before or after timing fails (the
    /// implementations did not do the same work).
    pub fn run(&self, cfg: &Config, opts: RunOptions, on_row: &mut dyn FnMut(&Row)) -> Result<Vec<Row>, String> {
        match self.body {
            Body::Cases(cases) => run_cases(self.id, &cases(), cfg, on_row),
            Body::Custom { run, .. } => run(cfg, opts, on_row),
        }
    }
}

/// Every scenario, in the order `all` and `report` run them.
pub static SCENARIOS: [Scenario; 7] = [
    Scenario {
        id: ScenarioId::Suite,
        about: "ecs_bench_suite cases: simple_insert, simple_iter, frag_iter, heavy_compute, add_remove (and on wider entities), spawn_despawn (one entity at a time), and ours with hooks, vs bevy_ecs and hecs",
        body: Body::Cases(cases::suite),
        table: table::suite,
        goals: &goals::SUITE,
        long: false,
    },
    Scenario {
        id: ScenarioId::Skip,
        about: "chunk skipping: 100k entities, a Changed<Pos> consumer, 0-100 % movers clustered or scattered, vs bevy_ecs",
        body: Body::Cases(cases::skip),
        table: table::skip,
        goals: &goals::SKIP,
        long: false,
    },
    Scenario {
        id: ScenarioId::Schedule,
        about: "systems ab, cd, ce in one schedule over 4 x 10k entities; app frames of 50 trivial systems in 7 schedules (all running, half skipped, one thread), vs bevy",
        body: Body::Cases(cases::schedule),
        table: table::schedule,
        goals: &goals::SCHEDULE,
        long: false,
    },
    Scenario {
        id: ScenarioId::Transform,
        about: "hierarchy propagation (wide, deep, flat, humanoids; static, 5 %, all roots moving), vs bevy_transform",
        body: Body::Cases(cases::transform),
        table: table::transform,
        goals: &goals::TRANSFORM,
        long: false,
    },
    Scenario {
        id: ScenarioId::Spatial,
        about: "broad phase over 100k points on one thread (uniform, clustered, sparse, outliers): build, all queries, all pairs, the ECS system; vs kiddo and rstar",
        body: Body::Custom { cases: spatial::case_names, run: spatial::run_dyn },
        table: table::spatial,
        goals: &goals::SPATIAL,
        long: true,
    },
    Scenario {
        id: ScenarioId::Replication,
        about: "snapshot replication (ours): cube-scene kbps under loss, encode cost per client, fan-out, backlog under 50 % loss, arena prediction",
        body: Body::Custom { cases: replication_cases, run: replication_run },
        table: crate::replication::table,
        goals: &goals::REPLICATION,
        long: true,
    },
    Scenario {
        id: ScenarioId::Game,
        about: "the showcase's scene without the network, whole frames vs bevy: 0/1/5/20/100 % active at 100k entities, 5 % at 1M (--skip-1m leaves it out)",
        body: Body::Custom { cases: game_cases, run: game_run },
        table: crate::scenes::game::table,
        goals: &goals::GAME,
        long: true,
    },
];

/// The scenario named `id`.
pub fn scenario(id: ScenarioId) -> &'static Scenario {
    SCENARIOS.iter().find(|s| s.id == id).unwrap_or(&SCENARIOS[0])
}

/// Every goal of every scenario, with its scenario, in table order.
pub fn all_goals() -> impl Iterator<Item = (ScenarioId, &'static Goal)> {
    SCENARIOS.iter().flat_map(|s| s.goals.iter().map(move |g| (s.id, g)))
}

fn replication_cases(_: RunOptions) -> Vec<Cow<'static, str>> {
    use crate::replication::{
        ARENA_CASES, BACKLOG_ROWS, CLIENT_TICK_CASES, CUBE_CASES, ENCODE_CASES, FANOUT_THREAD_CASES,
    };
    let names = CUBE_CASES.iter().map(|c| c.0).chain(ENCODE_CASES.iter().map(|c| c.0));
    let names = names.chain(FANOUT_THREAD_CASES.iter().map(|c| c.0)).chain(BACKLOG_ROWS);
    let names = names.chain(ARENA_CASES.iter().map(|c| c.0)).chain(CLIENT_TICK_CASES);
    names.map(Cow::Borrowed).collect()
}

fn replication_run(cfg: &Config, _: RunOptions, on_row: &mut dyn FnMut(&Row)) -> Result<Vec<Row>, String> {
    crate::replication::run_replication(cfg, on_row)
}

fn game_cases(opts: RunOptions) -> Vec<Cow<'static, str>> {
    crate::scenes::game::cases(opts.skip_1m).map(|c| Cow::Borrowed(c.name)).collect()
}

fn game_run(cfg: &Config, opts: RunOptions, on_row: &mut dyn FnMut(&Row)) -> Result<Vec<Row>, String> {
    crate::scenes::game::run(cfg, opts.skip_1m, on_row)
}

/// One case of a scenario run by [`run_cases`]: its name and how each
/// implementation builds its scene.
pub struct Case {
    /// Case name as reported.
    pub name: &'static str,
    /// Builds the case's scene on an implementation; `None` where the
    /// implementation has no such scene (or is not compiled in).
    pub build: Box<dyn Fn(Impl) -> Option<Box<dyn Bench>>>,
}

impl Case {
    /// A case named `name` built by `build`.
    pub fn new(name: &'static str, build: impl Fn(Impl) -> Option<Box<dyn Bench>> + 'static) -> Self {
        Case { name, build: Box::new(build) }
    }

    /// The case's scenes on every compiled-in implementation that has one,
    /// each checked before timing.
    ///
    /// # Errors
    ///
    /// The first failed check, naming the implementation.
    pub fn scenes(&self) -> Result<Scenes, String> {
        let mut scenes = Vec::new();
        for &imp in Impl::compiled() {
            let Some(mut bench) = (self.build)(imp) else {
                continue;
            };
            bench.check_before().map_err(|e| format!("{}/{}: check before timing: {e}", self.name, imp.name()))?;
            scenes.push((imp, bench));
        }
        Ok(scenes)
    }
}

/// The scenes of one case, one per implementation.
pub type Scenes = Vec<(Impl, Box<dyn Bench>)>;

/// One implementation's scene of a [`Case`]: what is checked, set up and
/// timed.
pub trait Bench {
    /// Checks the scene before timing (a few checked frames or runs).
    ///
    /// # Errors
    /// What the scene did wrong.
    fn check_before(&mut self) -> Result<(), String> {
        Ok(())
    }

    /// Whether [`Bench::setup`] does work: then each timed iteration is
    /// timed alone after its setup ([`WithSetup`]); otherwise iterations
    /// are timed in batches ([`Batched`]).
    fn has_setup(&self) -> bool {
        false
    }

    /// Untimed work before each timed iteration (moving entities, ...).
    fn setup(&mut self) {}

    /// The timed iteration.
    fn timed(&mut self);

    /// Checks the scene after timing: every timed iteration did the case's
    /// work.
    ///
    /// # Errors
    /// What the scene did wrong.
    fn check_after(&mut self) -> Result<(), String> {
        Ok(())
    }

    /// Figures of the last timed iteration for the row: chunk counters,
    /// rows processed, per-system figures.
    fn figures(&self) -> Figures {
        Figures::default()
    }
}

/// What a [`Bench`] adds to its row besides the time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    /// See [`Row::chunks`].
    pub chunks: Option<ChunkCounts>,
    /// See [`Row::rows`].
    pub rows: Option<usize>,
    /// See [`Row::systems`].
    pub systems: Vec<SystemReport>,
}

/// Runs `cases` of scenario `id`: per case, the scenes of every
/// compiled-in implementation ([`Case::scenes`], checked before timing),
/// timed interleaved ([`measure::measure_interleaved`]), checked after
/// timing; `on_row` gets each row as it is measured.
///
/// # Errors
///
/// A message `scenario/case/impl: ...` when a check fails.
pub fn run_cases(
    id: ScenarioId,
    cases: &[Case],
    cfg: &Config,
    on_row: &mut dyn FnMut(&Row),
) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for case in cases {
        let mut scenes = case.scenes().map_err(|e| format!("{}/{e}", id.name()))?;
        let measurements = {
            let mut samplers: Vec<Box<dyn Sampler + '_>> = scenes
                .iter_mut()
                .map(|(_, bench)| -> Box<dyn Sampler + '_> {
                    if bench.has_setup() {
                        Box::new(WithSetup::new(
                            bench,
                            |b: &mut Box<dyn Bench>| b.setup(),
                            |b: &mut Box<dyn Bench>| b.timed(),
                        ))
                    } else {
                        Box::new(Batched::new(move || bench.timed()))
                    }
                })
                .collect();
            let mut refs: Vec<&mut dyn Sampler> = samplers.iter_mut().map(|s| &mut **s as &mut dyn Sampler).collect();
            measure::measure_interleaved(cfg, &mut refs)
        };
        for ((imp, bench), measurement) in scenes.iter_mut().zip(measurements) {
            bench
                .check_after()
                .map_err(|e| format!("{}/{}/{}: check after timing: {e}", id.name(), case.name, imp.name()))?;
            let Figures { chunks, rows: processed, systems } = bench.figures();
            let row = Row { chunks, rows: processed, systems, ..Row::new(id, case.name, *imp, measurement) };
            on_row(&row);
            rows.push(row);
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scenario_is_listed_once_with_its_cases() {
        let ids: Vec<ScenarioId> = SCENARIOS.iter().map(|s| s.id).collect();
        let mut unique = ids.clone();
        unique.dedup();
        assert_eq!(ids, unique);
        assert_eq!(ids.len(), 7);
        for s in &SCENARIOS {
            assert!(!s.about.is_empty() && !s.about.contains('\n'), "{}", s.name());
            let names = s.case_names(RunOptions::default());
            assert!(!names.is_empty(), "{} has no cases", s.name());
            let mut sorted = names.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted.len(), names.len(), "{} repeats a case name", s.name());
            assert_eq!(scenario(s.id).name(), s.name());
        }
    }

    #[test]
    fn rows_name_scenarios_and_implementations_as_the_command_line_does() {
        for s in &SCENARIOS {
            assert_eq!(serde_json::to_string(&s.id).unwrap(), format!("\"{}\"", s.name()));
        }
        for imp in [Impl::Ours, Impl::Bevy, Impl::Hecs, Impl::Kiddo, Impl::Rstar] {
            assert_eq!(serde_json::to_string(&imp).unwrap(), format!("\"{}\"", imp.name()));
        }
    }

    #[test]
    fn skip_1m_leaves_out_only_the_large_game_case() {
        let game = scenario(ScenarioId::Game);
        let all = game.case_names(RunOptions { skip_1m: false });
        let small = game.case_names(RunOptions { skip_1m: true });
        assert_eq!(all.len(), small.len() + 1);
        assert!(all.iter().any(|c| c == "active_5pct_1m") && !small.iter().any(|c| c == "active_5pct_1m"));
        let suite = scenario(ScenarioId::Suite);
        assert_eq!(suite.case_names(RunOptions { skip_1m: true }), suite.case_names(RunOptions::default()));
    }

    #[test]
    fn every_goal_names_a_case_of_its_scenario() {
        for (id, goal) in all_goals() {
            let names = scenario(id).case_names(RunOptions::default());
            assert!(names.iter().any(|c| c == goal.case), "{}: no case {}", id.name(), goal.case);
            if let Measure::OwnCase { case, .. } | Measure::PerCountVs(case) = goal.measure {
                assert!(names.iter().any(|c| c == case), "{}: no case {case}", id.name());
            }
        }
    }

    /// A bench that counts its setups and timed runs, and fails its check
    /// after timing when told to.
    struct Counting {
        setups: usize,
        runs: usize,
        fail_after: bool,
    }

    impl Bench for Counting {
        fn has_setup(&self) -> bool {
            true
        }
        fn setup(&mut self) {
            self.setups += 1;
        }
        fn timed(&mut self) {
            self.runs += 1;
        }
        fn check_after(&mut self) -> Result<(), String> {
            if self.fail_after {
                Err(format!("{} setups, {} runs", self.setups, self.runs))
            } else if self.setups == self.runs && self.runs > 0 {
                Ok(())
            } else {
                Err("setup and run out of step".into())
            }
        }
        fn figures(&self) -> Figures {
            Figures { rows: Some(self.runs.min(1)), ..Figures::default() }
        }
    }

    fn tiny() -> Config {
        Config {
            warmup: std::time::Duration::from_millis(1),
            samples: 5,
            min_sample_time: std::time::Duration::from_micros(50),
            max_total_time: std::time::Duration::from_millis(20),
        }
    }

    #[test]
    fn run_cases_times_checks_and_reports() {
        let cases = [
            Case::new("ok", |imp| {
                (imp == Impl::Ours)
                    .then(|| Box::new(Counting { setups: 0, runs: 0, fail_after: false }) as Box<dyn Bench>)
            }),
            Case::new("broken", |_| Some(Box::new(Counting { setups: 0, runs: 0, fail_after: true }))),
        ];
        let mut seen = Vec::new();
        let e = run_cases(ScenarioId::Suite, &cases, &tiny(), &mut |r: &Row| seen.push(r.clone())).unwrap_err();
        assert!(e.starts_with("suite/broken/ours: check after timing:"), "{e}");
        assert_eq!(seen.len(), 1);
        assert_eq!((seen[0].case.as_ref(), seen[0].imp, seen[0].rows), ("ok", Impl::Ours, Some(1)));
        assert!(seen[0].measurement.samples >= 5);
        let rows = run_cases(ScenarioId::Skip, &cases[..1], &tiny(), &mut |_: &Row| {}).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].scenario, ScenarioId::Skip);
    }
}
