//! The app-frame cases on `bevy_app` 0.20 (feature `peers`; see the
//! [parent module](super)).

use bevy_app::{App, First, Last, MainScheduleOrder, PostUpdate, PreUpdate, RunFixedMainLoop, Update};
use bevy_ecs::prelude::{IntoScheduleConfigs, Res, ResMut, Resource};
use bevy_ecs::schedule::{ScheduleLabel, SingleThreadedExecutor};

use super::{AppCase, AppScene, for_each_app_system};

/// The user label inserted after `Update`.
#[derive(ScheduleLabel, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Extra;

/// System `N`'s counter.
#[derive(Resource)]
struct Counter<const N: usize>(u64);

/// The gate of the skipped systems (always false).
#[derive(Resource)]
struct Gate(bool);

fn count<const N: usize>(mut counter: ResMut<Counter<N>>) {
    counter.0 += 1;
}

fn gate(gate: Res<Gate>) -> bool {
    gate.0
}

fn add_system<const N: usize>(app: &mut App, case: &AppCase) {
    app.insert_resource(Counter::<N>(0));
    macro_rules! add {
        ($label:expr) => {
            if case.skips(N) {
                app.add_systems($label, count::<N>.run_if(gate))
            } else {
                app.add_systems($label, count::<N>)
            }
        };
    }
    match AppCase::schedule_of(N) {
        0 => add!(First),
        1 => add!(PreUpdate),
        2 => add!(RunFixedMainLoop),
        3 => add!(Update),
        4 => add!(Extra),
        5 => add!(PostUpdate),
        _ => add!(Last),
    };
}

fn counter<const N: usize>(app: &App) -> u64 {
    app.world().get_resource::<Counter<N>>().map_or(u64::MAX, |c| c.0)
}

/// A `bevy_app::App` (`App::new`, no plugin added) with the case's 50
/// systems, each schedule on bevy's default executor (multi-threaded, on
/// the compute task pool) unless the case asks for one thread.
pub struct AppFrame {
    app: App,
    case: AppCase,
    frames: u64,
}

impl AppFrame {
    /// Builds the app and bevy's compute task pool.
    pub fn new(case: &AppCase) -> Self {
        bevy_tasks::ComputeTaskPool::get_or_init(bevy_tasks::TaskPool::default);
        let mut app = App::new();
        app.init_schedule(Extra);
        app.world_mut().resource_mut::<MainScheduleOrder>().insert_after(Update, Extra);
        app.insert_resource(Gate(false));
        macro_rules! add {
            ($($n:literal)*) => { $( add_system::<$n>(&mut app, case); )* };
        }
        for_each_app_system!(add);
        if case.single_threaded {
            macro_rules! single {
                ($($label:expr),*) => { $( app.edit_schedule($label, |s| {
                    s.set_executor(SingleThreadedExecutor::new());
                }); )* };
            }
            single!(First, PreUpdate, RunFixedMainLoop, Update, Extra, PostUpdate, Last);
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
