//! The app-frame cases of the `schedule` scenario: one frame of an app
//! (`App::update`) with [`APP_SYSTEMS`] trivial systems spread over
//! [`APP_SCHEDULES`] labelled schedules, ours (`ecs_core::App`) against
//! `bevy_app` 0.20 (feature `peers`).
//!
//! Both apps run the same frame: `First`, `PreUpdate`, `RunFixedMainLoop`,
//! `Update`, a user label `Extra` inserted after `Update`, `PostUpdate` and
//! `Last` hold the systems, system `n` in schedule `n % 7` (so `First` has
//! eight). Each system adds one to a resource of its own (no two systems
//! conflict). In [`AppCase::gated`] cases every odd system has a run
//! condition that reads a resource and says no. Nothing else is in the
//! apps: no entity, no fixed-step system (bevy_app alone has no clock, so
//! ours' clock update and empty fixed-step loop are extra work on our side).
//! [`AppScene::check`] compares every counter with the number of frames run,
//! so both apps ran the same systems.

pub mod ours;

#[cfg(feature = "peers")]
pub mod bevy;

/// Systems in each app.
pub const APP_SYSTEMS: usize = 50;
/// Labelled schedules holding them.
pub const APP_SCHEDULES: usize = 7;

/// One app-frame case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppCase {
    /// Case name as reported.
    pub name: &'static str,
    /// Whether every odd system has a run condition that says no (half the
    /// systems skipped).
    pub gated: bool,
    /// Whether every schedule runs its systems on the calling thread
    /// (ours: `ExecutorKind::SingleThreaded`; bevy: `SingleThreadedExecutor`)
    /// instead of each app's default executor.
    pub single_threaded: bool,
}

/// The app-frame cases, in report order.
pub const APP_CASES: [AppCase; 3] = [
    AppCase { name: "app_frame_50_systems", gated: false, single_threaded: false },
    AppCase { name: "app_frame_25_skipped", gated: true, single_threaded: false },
    AppCase { name: "app_frame_single_threaded", gated: false, single_threaded: true },
];

impl AppCase {
    /// Whether system `n` is skipped by its run condition in this case.
    pub fn skips(&self, n: usize) -> bool {
        self.gated && n % 2 == 1
    }

    /// Index of the schedule system `n` is in (`First`, `PreUpdate`,
    /// `RunFixedMainLoop`, `Update`, `Extra`, `PostUpdate`, `Last`).
    pub fn schedule_of(n: usize) -> usize {
        n % APP_SCHEDULES
    }
}

/// Calls `$m!` with the system numbers `0` to `49` (one const generic
/// instance of the counting system and its resource each).
macro_rules! for_each_app_system {
    ($m:ident) => {
        $m!(
            0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36
            37 38 39 40 41 42 43 44 45 46 47 48 49
        )
    };
}
pub(crate) use for_each_app_system;

/// An app-frame scene: [`AppScene::frame`] is the timed unit.
pub trait AppScene {
    /// Runs one frame (`App::update`).
    fn frame(&mut self);

    /// Frames run so far.
    fn frames(&self) -> u64;

    /// Each system's counter, in system order.
    fn counters(&self) -> Vec<u64>;

    /// The case the scene was built for.
    fn case(&self) -> &AppCase;

    /// Untimed: every system ran once per frame, or never when its
    /// condition says no.
    fn check(&self) -> Result<(), String> {
        let counters = self.counters();
        if counters.len() != APP_SYSTEMS {
            return Err(format!("{} systems, expected {APP_SYSTEMS}", counters.len()));
        }
        let frames = self.frames();
        for (n, &count) in counters.iter().enumerate() {
            let want = if self.case().skips(n) { 0 } else { frames };
            if count != want {
                return Err(format!("system {n} ran {count} times in {frames} frames, expected {want}"));
            }
        }
        Ok(())
    }

    /// Runs two frames and checks them (before timing).
    fn check_frames(&mut self) -> Result<(), String> {
        self.check()?;
        self.frame();
        self.frame();
        self.check()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_the_systems_are_gated_and_every_schedule_has_some() {
        let gated = APP_CASES.iter().find(|c| c.gated).unwrap();
        assert_eq!((0..APP_SYSTEMS).filter(|&n| gated.skips(n)).count(), APP_SYSTEMS / 2);
        for k in 0..APP_SCHEDULES {
            let count = (0..APP_SYSTEMS).filter(|&n| AppCase::schedule_of(n) == k).count();
            assert!((7..=8).contains(&count), "schedule {k}: {count} systems");
        }
    }

    #[test]
    fn every_compiled_app_runs_its_systems_once_per_frame() {
        for case in &APP_CASES {
            let mut scenes: Vec<Box<dyn AppScene>> = vec![Box::new(ours::AppFrame::new(case))];
            #[cfg(feature = "peers")]
            scenes.push(Box::new(bevy::AppFrame::new(case)));
            for scene in &mut scenes {
                scene.check_frames().unwrap();
                for _ in 0..3 {
                    scene.frame();
                }
                assert_eq!(scene.frames(), 5);
                scene.check().unwrap();
                let ran: u64 = scene.counters().iter().sum();
                let live = (0..APP_SYSTEMS).filter(|&n| !case.skips(n)).count() as u64;
                assert_eq!(ran, 5 * live, "{}", case.name);
            }
        }
    }
}
