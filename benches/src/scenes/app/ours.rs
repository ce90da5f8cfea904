//! The app-frame cases on `ecs_core::App` (see the [parent module](super)).

use ecs_core::app::{First, Last, PostUpdate, PreUpdate, RunFixedMainLoop, Update};
use ecs_core::prelude::{App, IntoSystemConfigs, Res, ResMut, ScheduleLabel};
use ecs_core::schedule::ExecutorKind;

use super::{AppCase, AppScene, for_each_app_system};

/// The user label inserted after `Update`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Extra;
impl ScheduleLabel for Extra {}

/// System `N`'s counter.
struct Counter<const N: usize>(u64);

/// The gate of the skipped systems (always false).
struct Gate(bool);

fn count<const N: usize>(mut counter: ResMut<Counter<N>>) {
    counter.0 += 1;
}

fn gate(gate: Res<Gate>) -> bool {
    gate.0
}

fn add_system<const N: usize>(app: &mut App, case: &AppCase) {
    app.insert_resource(Counter::<N>(0));
    let system = if case.skips(N) { count::<N>.run_if(gate) } else { count::<N>.into_configs() };
    match AppCase::schedule_of(N) {
        0 => app.add_systems(First, system),
        1 => app.add_systems(PreUpdate, system),
        2 => app.add_systems(RunFixedMainLoop, system),
        3 => app.add_systems(Update, system),
        4 => app.add_systems(Extra, system),
        5 => app.add_systems(PostUpdate, system),
        _ => app.add_systems(Last, system),
    };
}

fn counter<const N: usize>(app: &App) -> u64 {
    app.world().resource::<Counter<N>>().map_or(u64::MAX, |c| c.0)
}

/// An `ecs_core::App` with the case's 50 systems; time from the real
/// clock, as a game's.
pub struct AppFrame {
    app: App,
    case: AppCase,
    frames: u64,
}

impl AppFrame {
    /// Builds the app (its schedules are built before the first frame).
    pub fn new(case: &AppCase) -> Self {
        let mut app = App::new();
        app.add_schedule_after(Update, Extra).insert_resource(Gate(false));
        macro_rules! add {
            ($($n:literal)*) => { $( add_system::<$n>(&mut app, case); )* };
        }
        for_each_app_system!(add);
        if case.single_threaded {
            for label in [First.intern(), PreUpdate.intern(), RunFixedMainLoop.intern(), Update.intern()] {
                app.edit_schedule(label, |s| {
                    s.set_executor(ExecutorKind::SingleThreaded);
                });
            }
            for label in [Extra.intern(), PostUpdate.intern(), Last.intern()] {
                app.edit_schedule(label, |s| {
                    s.set_executor(ExecutorKind::SingleThreaded);
                });
            }
        }
        AppFrame { app, case: *case, frames: 0 }
    }
}

impl AppScene for AppFrame {
    fn frame(&mut self) {
        self.app.update();
        self.frames += 1;
    }

    fn frames(&self) -> u64 {
        self.frames
    }

    fn counters(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(super::APP_SYSTEMS);
        macro_rules! read {
            ($($n:literal)*) => { $( out.push(counter::<$n>(&self.app)); )* };
        }
        for_each_app_system!(read);
        out
    }

    fn case(&self) -> &AppCase {
        &self.case
    }
}
