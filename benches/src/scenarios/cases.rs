//! The cases of `suite`, `skip`, `schedule` and `transform`: each scene of
//! [`crate::scenes`] as a [`Bench`] (what is checked, set up and timed),
//! and each scenario's [`Case`] list, shared by the CLI and the criterion
//! benches.

use crate::row::Impl;
use crate::scenarios::{Bench, Case, Figures};
use crate::scenes::app::{APP_CASES, AppCase, AppScene};
use crate::scenes::transform::{TRANSFORM_CASES, TransformCase, TransformScene};
use crate::scenes::{self, Frame, SKIP_CASES, SUITE_CASES, ScheduleScene, SkipCase, SkipScene};

/// Builds the suite scene `case` for `imp`; `None` where the implementation
/// has no such scene (hecs has no parallel iteration, the `*_hooks` cases
/// are ours only).
pub fn suite_scene(case: &str, imp: Impl) -> Option<Box<dyn Frame>> {
    use scenes::ours;
    let scene: Box<dyn Frame> = match (imp, case) {
        (Impl::Ours, "simple_insert") => Box::new(ours::SimpleInsert),
        (Impl::Ours, "simple_iter") => Box::new(ours::SimpleIter::new()),
        (Impl::Ours, "frag_iter") => Box::new(ours::FragIter::new()),
        (Impl::Ours, "heavy_compute") => Box::new(ours::HeavyCompute::new()),
        (Impl::Ours, "add_remove") => Box::new(ours::AddRemove::new()),
        (Impl::Ours, "add_remove_wide") => Box::new(ours::AddRemove::wide()),
        (Impl::Ours, "spawn_despawn") => Box::new(ours::SpawnDespawn::new()),
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
        (Impl::Bevy, "add_remove_wide") => Box::new(scenes::bevy::AddRemove::wide()),
        #[cfg(feature = "peers")]
        (Impl::Bevy, "spawn_despawn") => Box::new(scenes::bevy::SpawnDespawn::new()),
        #[cfg(feature = "peers")]
        (Impl::Hecs, "simple_insert") => Box::new(scenes::hecs::SimpleInsert),
        #[cfg(feature = "peers")]
        (Impl::Hecs, "simple_iter") => Box::new(scenes::hecs::SimpleIter::new()),
        #[cfg(feature = "peers")]
        (Impl::Hecs, "frag_iter") => Box::new(scenes::hecs::FragIter::new()),
        #[cfg(feature = "peers")]
        (Impl::Hecs, "add_remove") => Box::new(scenes::hecs::AddRemove::new()),
        #[cfg(feature = "peers")]
        (Impl::Hecs, "add_remove_wide") => Box::new(scenes::hecs::AddRemove::wide()),
        #[cfg(feature = "peers")]
        (Impl::Hecs, "spawn_despawn") => Box::new(scenes::hecs::SpawnDespawn::new()),
        _ => return None,
    };
    Some(scene)
}

/// A suite scene: one frame is timed, in batches.
struct SuiteBench(Box<dyn Frame>);

impl Bench for SuiteBench {
    fn timed(&mut self) {
        self.0.frame();
    }

    fn figures(&self) -> Figures {
        Figures { chunks: self.0.chunk_counts(), ..Figures::default() }
    }
}

/// The `suite` cases ([`SUITE_CASES`]).
pub fn suite() -> Vec<Case> {
    SUITE_CASES
        .iter()
        .map(|&name| {
            Case::new(name, move |imp| suite_scene(name, imp).map(|s| Box::new(SuiteBench(s)) as Box<dyn Bench>))
        })
        .collect()
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

/// A chunk-skip scene: the writer runs untimed before each timed run of
/// the `Changed<Pos>` consumer, and every frame's row count is compared
/// with the number of movers outside the timed part.
struct SkipBench {
    scene: Box<dyn SkipScene>,
    movers: usize,
    last_rows: Option<usize>,
    mismatch: Option<usize>,
}

impl Bench for SkipBench {
    fn check_before(&mut self) -> Result<(), String> {
        self.scene.check()
    }

    fn has_setup(&self) -> bool {
        true
    }

    /// Checks the previous frame's row count, then runs the writer.
    fn setup(&mut self) {
        if let Some(r) = self.last_rows.take()
            && r != self.movers
        {
            self.mismatch.get_or_insert(r);
        }
        self.scene.write();
    }

    fn timed(&mut self) {
        self.last_rows = Some(self.scene.consume());
    }

    fn check_after(&mut self) -> Result<(), String> {
        match self.mismatch.or(self.last_rows.filter(|&r| r != self.movers)) {
            Some(r) => Err(format!("consumer processed {r} rows while the writer moved {}", self.movers)),
            None => Ok(()),
        }
    }

    fn figures(&self) -> Figures {
        Figures { chunks: self.scene.chunk_counts(), rows: Some(self.movers), ..Figures::default() }
    }
}

/// The `skip` cases ([`SKIP_CASES`]).
pub fn skip() -> Vec<Case> {
    SKIP_CASES
        .iter()
        .map(|&case| {
            Case::new(case.name, move |imp| {
                let scene = skip_scene(&case, imp)?;
                let movers = scene.movers();
                Some(Box::new(SkipBench { scene, movers, last_rows: None, mismatch: None }) as Box<dyn Bench>)
            })
        })
        .collect()
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

/// The case name of the `schedule` scenario's ecs_bench_suite case.
pub const SCHEDULE_CASE: &str = "schedule";

/// The `schedule` case: checked before timing (initial values, then after
/// one and two runs) and after it, with the total number of runs, warm-up
/// and samples included (every sampled pair swapped once per run). One
/// iteration is one run of the schedule.
struct ScheduleCaseBench(Box<dyn ScheduleScene>);

impl Bench for ScheduleCaseBench {
    fn check_before(&mut self) -> Result<(), String> {
        self.0.check_runs()
    }

    fn timed(&mut self) {
        self.0.run();
    }

    fn check_after(&mut self) -> Result<(), String> {
        self.0.check()
    }

    fn figures(&self) -> Figures {
        Figures { chunks: self.0.chunk_counts(), rows: None, systems: self.0.systems() }
    }
}

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

/// An app-frame case: one iteration is one `App::update`; checked before
/// and after timing (every system ran once per frame, or never where its
/// run condition says no).
struct AppBench(Box<dyn AppScene>);

impl Bench for AppBench {
    fn check_before(&mut self) -> Result<(), String> {
        self.0.check_frames()
    }

    fn timed(&mut self) {
        self.0.frame();
    }

    fn check_after(&mut self) -> Result<(), String> {
        self.0.check()
    }
}

/// The `schedule` cases: [`SCHEDULE_CASE`], then the app frames
/// ([`APP_CASES`]).
pub fn schedule() -> Vec<Case> {
    let schedule =
        Case::new(SCHEDULE_CASE, |imp| schedule_scene(imp).map(|s| Box::new(ScheduleCaseBench(s)) as Box<dyn Bench>));
    let apps = APP_CASES.iter().map(|&case| {
        Case::new(case.name, move |imp| app_scene(&case, imp).map(|s| Box::new(AppBench(s)) as Box<dyn Bench>))
    });
    std::iter::once(schedule).chain(apps).collect()
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

/// A propagation scene: checked before timing (a first propagation and two
/// moving frames) and after it (sampled globals against the reference for
/// the frames moved); the roots move untimed before each timed propagation
/// run.
struct TransformBench(Box<dyn TransformScene>);

impl Bench for TransformBench {
    fn check_before(&mut self) -> Result<(), String> {
        self.0.check_frames()
    }

    fn has_setup(&self) -> bool {
        true
    }

    fn setup(&mut self) {
        self.0.move_roots();
    }

    fn timed(&mut self) {
        self.0.propagate();
    }

    fn check_after(&mut self) -> Result<(), String> {
        self.0.check()
    }

    fn figures(&self) -> Figures {
        Figures { chunks: self.0.chunk_counts(), rows: Some(self.0.forest().movers.len()), systems: Vec::new() }
    }
}

/// The `transform` cases ([`TRANSFORM_CASES`]).
pub fn transform() -> Vec<Case> {
    TRANSFORM_CASES
        .iter()
        .map(|&case| {
            Case::new(case.name, move |imp| {
                transform_scene(&case, imp).map(|s| Box::new(TransformBench(s)) as Box<dyn Bench>)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn case_lists_follow_the_scene_constants() {
        let names = |cases: Vec<Case>| cases.iter().map(|c| c.name).collect::<Vec<_>>();
        assert_eq!(names(suite()), SUITE_CASES);
        assert_eq!(names(skip()), SKIP_CASES.map(|c| c.name));
        assert_eq!(names(transform()), TRANSFORM_CASES.map(|c| c.name));
        let schedule = names(schedule());
        assert_eq!(schedule[0], SCHEDULE_CASE);
        assert_eq!(schedule[1..], APP_CASES.map(|c| c.name));
        // hecs has no parallel iteration, and the hooked cases are ours only.
        assert!(suite_scene("heavy_compute", Impl::Hecs).is_none());
        assert!(suite_scene("add_remove_hooks", Impl::Bevy).is_none());
        assert!(suite_scene("nope", Impl::Ours).is_none());
        // Every implementation compiled in has the wide structural case.
        for &imp in Impl::compiled() {
            assert!(suite_scene("add_remove_wide", imp).is_some(), "{}", imp.name());
            assert!(suite_scene("spawn_despawn", imp).is_some(), "{}", imp.name());
        }
    }

    #[test]
    fn a_skip_bench_catches_a_consumer_that_misses_rows() {
        /// A consumer that reports one row fewer than moved, once.
        struct Lossy {
            frames: usize,
        }
        impl SkipScene for Lossy {
            fn movers(&self) -> usize {
                10
            }
            fn write(&mut self) {
                self.frames += 1;
            }
            fn consume(&mut self) -> usize {
                if self.frames == 2 { 9 } else { 10 }
            }
        }
        let mut bench = SkipBench { scene: Box::new(Lossy { frames: 0 }), movers: 10, last_rows: None, mismatch: None };
        for _ in 0..4 {
            bench.setup();
            bench.timed();
        }
        let e = bench.check_after().unwrap_err();
        assert_eq!(e, "consumer processed 9 rows while the writer moved 10");
        let mut good = SkipBench { scene: Box::new(Lossy { frames: 5 }), movers: 10, last_rows: None, mismatch: None };
        good.setup();
        good.timed();
        assert_eq!(good.check_after(), Ok(()));
        assert_eq!(good.figures().rows, Some(10));
    }
}
