//! Labelled schedules: the [`ScheduleLabel`] trait, the built-in labels of
//! an [`App`](super::App) frame, and the [`Schedules`] resource that holds
//! a world's schedules so any code with `&mut World` can run one
//! ([`World::run_schedule`]).

use std::collections::HashMap;
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;

use crate::app::errors::ErrorReport;
use crate::schedule::set::Label;
use crate::schedule::{Schedule, ScheduleError};
use crate::world::World;

/// The name of a schedule. Implement it (no methods) for a unit struct or
/// fieldless enum deriving `Debug`, `Clone`, `PartialEq`, `Eq` and `Hash`.
///
/// ```
/// use ecs_core::prelude::*;
///
/// #[derive(Debug, Clone, PartialEq, Eq, Hash)]
/// struct Physics;
/// impl ScheduleLabel for Physics {}
///
/// let mut app = App::new();
/// app.add_schedule_after(FixedUpdate, Physics)
///     .insert_resource(0u32)
///     .add_systems(Physics, |mut n: ResMut<u32>| *n += 1);
/// ```
pub trait ScheduleLabel: Debug + Clone + Eq + Hash + Send + Sync + 'static {
    /// The label, type-erased.
    fn intern(&self) -> InternedScheduleLabel {
        InternedScheduleLabel(Label(Arc::new(self.clone())))
    }
}

/// A [`ScheduleLabel`] value, type-erased (compares and hashes as the
/// value).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct InternedScheduleLabel(Label);

impl Debug for InternedScheduleLabel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl ScheduleLabel for InternedScheduleLabel {
    fn intern(&self) -> InternedScheduleLabel {
        self.clone()
    }
}

macro_rules! labels {
    ($($(#[$doc:meta])* $name:ident;)*) => {
        $(
            $(#[$doc])*
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
            pub struct $name;
            impl ScheduleLabel for $name {}
        )*
    };
}

labels! {
    /// Runs once, in the first [`App::update`](super::App::update), before
    /// [`Startup`].
    PreStartup;
    /// Runs once, in the first [`App::update`](super::App::update): spawn
    /// the level here.
    Startup;
    /// Runs once, in the first [`App::update`](super::App::update), after
    /// [`Startup`].
    PostStartup;
    /// The first schedule of every frame (after time and events were
    /// updated).
    First;
    /// Before the state transitions: input and the like.
    PreUpdate;
    /// Where [`States`](super::States) transitions are applied, once per
    /// frame, after [`PreUpdate`].
    StateTransition;
    /// Marks where the fixed-step loop runs in a frame: its own systems run
    /// once per frame, then [`FixedUpdate`] and its neighbours run as many
    /// times as whole fixed steps fit.
    RunFixedMainLoop;
    /// First of each fixed step.
    FixedFirst;
    /// Before [`FixedUpdate`] in each fixed step.
    FixedPreUpdate;
    /// The fixed-step simulation: runs 0..n times per frame, with
    /// [`Time`](super::Time) reporting the fixed step.
    FixedUpdate;
    /// After [`FixedUpdate`] in each fixed step.
    FixedPostUpdate;
    /// Last of each fixed step.
    FixedLast;
    /// Once per frame, after the fixed steps: game logic that follows the
    /// frame rate.
    Update;
    /// After [`Update`]: transform propagation and the like.
    PostUpdate;
    /// The last schedule of every frame.
    Last;
}

/// A world's schedules by label (a resource an [`App`](super::App)
/// inserts). A schedule is taken out while it runs.
#[derive(Default)]
pub struct Schedules {
    index: HashMap<InternedScheduleLabel, usize>,
    /// Boxed: a run takes its schedule out and puts it back, moving a
    /// pointer rather than the schedule.
    slots: Vec<(InternedScheduleLabel, Option<Box<Schedule>>)>,
}

impl Debug for Schedules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.slots.iter().map(|(label, _)| label)).finish()
    }
}

impl Schedules {
    /// No schedules.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores `schedule` under `label`, returning the one it replaces.
    /// Schedules stored here do not age events (the app does, once per
    /// frame).
    pub fn insert(&mut self, label: impl ScheduleLabel, mut schedule: Schedule) -> Option<Schedule> {
        schedule.set_event_updates(false);
        let label = label.intern();
        match self.index.get(&label) {
            Some(&k) => self.slots[k].1.replace(Box::new(schedule)).map(|old| *old),
            None => {
                self.index.insert(label.clone(), self.slots.len());
                self.slots.push((label, Some(Box::new(schedule))));
                None
            }
        }
    }

    /// The schedule under `label`, made empty if there is none (`None`
    /// while it runs).
    pub fn entry(&mut self, label: impl ScheduleLabel) -> Option<&mut Schedule> {
        let label = label.intern();
        if !self.index.contains_key(&label) {
            self.insert(label.clone(), Schedule::new());
        }
        self.get_mut(label)
    }

    /// The schedule under `label` (`None` if absent or running).
    pub fn get(&self, label: impl ScheduleLabel) -> Option<&Schedule> {
        self.index.get(&label.intern()).and_then(|&k| self.slots[k].1.as_deref())
    }

    /// The schedule under `label`, mutably (`None` if absent or running).
    pub fn get_mut(&mut self, label: impl ScheduleLabel) -> Option<&mut Schedule> {
        self.index.get(&label.intern()).and_then(|&k| self.slots[k].1.as_deref_mut())
    }

    /// Whether a schedule is stored (or running) under `label`.
    pub fn contains(&self, label: impl ScheduleLabel) -> bool {
        self.index.contains_key(&label.intern())
    }

    /// The labels, in the order they were first stored.
    pub fn labels(&self) -> impl Iterator<Item = &InternedScheduleLabel> {
        self.slots.iter().map(|(label, _)| label)
    }

    /// Takes the schedule out to run it: its slot and the schedule;
    /// `Err(true)` when it is running, `Err(false)` when there is none.
    fn take(&mut self, label: &InternedScheduleLabel) -> Result<(usize, Box<Schedule>), bool> {
        let &k = self.index.get(label).ok_or(false)?;
        self.slots[k].1.take().map(|s| (k, s)).ok_or(true)
    }

    /// Builds every schedule not built for `world` yet.
    pub(crate) fn build_all(world: &mut World) -> Result<(), (InternedScheduleLabel, ScheduleError)> {
        let dirty = world.resource::<Schedules>().is_some_and(|s| {
            s.slots.iter().any(|(_, schedule)| schedule.as_ref().is_some_and(|s| !s.is_built_for(world)))
        });
        if !dirty {
            return Ok(());
        }
        let count = world.resource::<Schedules>().map_or(0, |s| s.slots.len());
        for k in 0..count {
            let Some(mut schedule) = world.resource_mut::<Schedules>().and_then(|s| s.slots[k].1.take()) else {
                continue;
            };
            let result = if schedule.is_built_for(world) { Ok(()) } else { schedule.build(world) };
            let schedules = world.resource_mut::<Schedules>().expect("present above");
            schedules.slots[k].1 = Some(schedule);
            if let Err(error) = result {
                return Err((schedules.slots[k].0.clone(), error));
            }
        }
        Ok(())
    }
}

impl World {
    /// Runs the schedule stored under `label` in the [`Schedules`]
    /// resource (taking it out for the run, so its systems, exclusive ones
    /// included, can run other schedules). What went wrong in the run
    /// (failed systems and commands, skipped systems) waits in
    /// [`World::take_error_reports`].
    ///
    /// # Errors
    /// [`ScheduleError::NotFound`] when there is no such schedule (or it is
    /// the one running), or the schedule's own build error.
    ///
    /// ```
    /// use ecs_core::prelude::*;
    ///
    /// #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    /// struct Cleanup;
    /// impl ScheduleLabel for Cleanup {}
    ///
    /// let mut app = App::new();
    /// app.insert_resource(0u32).add_systems(Cleanup, |mut n: ResMut<u32>| *n += 1);
    /// app.world_mut().run_schedule(Cleanup).unwrap();
    /// assert_eq!(app.world().resource::<u32>(), Some(&1));
    /// ```
    pub fn run_schedule(&mut self, label: impl ScheduleLabel) -> Result<(), ScheduleError> {
        self.run_interned(&label.intern(), false)
    }

    /// Runs the schedule under `label` if there is one; `Ok` if not (an
    /// error if it is the one running).
    pub(crate) fn run_schedule_if_present(&mut self, label: &InternedScheduleLabel) -> Result<(), ScheduleError> {
        self.run_interned(label, true)
    }

    /// [`World::run_schedule`], with no error for a missing schedule when
    /// `if_present`.
    fn run_interned(&mut self, label: &InternedScheduleLabel, if_present: bool) -> Result<(), ScheduleError> {
        let (k, schedule) = match self.resource_mut::<Schedules>().map(|s| s.take(label)) {
            Some(Ok(taken)) => taken,
            Some(Err(false)) | None if if_present => return Ok(()),
            _ => return Err(ScheduleError::NotFound(format!("{label:?}"))),
        };
        /// Puts the schedule back, also when a system panics.
        struct PutBack<'a> {
            world: &'a mut World,
            k: usize,
            schedule: Option<Box<Schedule>>,
        }
        impl Drop for PutBack<'_> {
            fn drop(&mut self) {
                if let Some(schedules) = self.world.resource_mut::<Schedules>()
                    && let Some(slot) = schedules.slots.get_mut(self.k)
                {
                    slot.1 = self.schedule.take();
                }
            }
        }
        let mut guard = PutBack { world: self, k, schedule: Some(schedule) };
        let PutBack { world, schedule, .. } = &mut guard;
        let schedule = schedule.as_mut().expect("put back only on drop");
        let result = schedule.run(world);
        if schedule.has_errors() {
            world.error_reports.extend(ErrorReport::of_schedule(&format!("{label:?}"), schedule));
        }
        result
    }
}
