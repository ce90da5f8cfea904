//! Schedules: systems with ordering constraints, run in stages of systems
//! whose accesses do not conflict, each stage in parallel on rayon.
//!
//! ## Build
//! [`Schedule::build`] (run on first use) initializes every system, refuses
//! one whose own parameters conflict (naming the system and component),
//! orders systems by their `before`/`after` constraints (a cycle is an
//! error), and packs them into stages: each system goes into the earliest
//! stage after all its predecessors that holds nothing it conflicts with
//! (component reads/writes, with `With`/`Without` disjointness; resource
//! reads/writes). Systems in one stage run at the same time; stages run one
//! after another.
//!
//! ## Run
//! Each run ages events, checks every system can run (resources present),
//! then runs the stages. The world tick advances before every system run.
//! After each stage, the deferred commands of its systems are applied in the
//! order the systems were added: a sync point with a deterministic result no
//! matter which thread finished first.

use std::any::TypeId;

use crate::error::StoreError;
use crate::system::{IntoSystem, System, SystemStats};
use crate::world::World;

/// Identifies a system function for ordering constraints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SystemLabel {
    id: TypeId,
    name: &'static str,
}

impl SystemLabel {
    fn of<T: 'static>() -> Self {
        SystemLabel { id: TypeId::of::<T>(), name: std::any::type_name::<T>() }
    }
}

/// A system with its ordering constraints.
pub struct SystemConfig {
    system: Box<dyn System>,
    label: SystemLabel,
    before: Vec<SystemLabel>,
    after: Vec<SystemLabel>,
}

impl std::fmt::Debug for SystemConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SystemConfig")
            .field("system", &self.label.name)
            .field("before", &self.before.iter().map(|l| l.name).collect::<Vec<_>>())
            .field("after", &self.after.iter().map(|l| l.name).collect::<Vec<_>>())
            .finish()
    }
}

/// Marker for [`IntoSystemConfig`] on a ready [`SystemConfig`].
pub struct ConfigMarker;

/// Something that becomes a [`SystemConfig`]: a system function, or a
/// config with constraints already attached.
pub trait IntoSystemConfig<Marker>: Sized {
    /// The config.
    fn into_config(self) -> SystemConfig;

    /// Runs this system before `other` (a system function) wherever both are
    /// in the schedule.
    fn before<M, S: IntoSystem<M> + 'static>(self, _other: S) -> SystemConfig {
        let mut config = self.into_config();
        config.before.push(SystemLabel::of::<S>());
        config
    }

    /// Runs this system after `other`.
    fn after<M, S: IntoSystem<M> + 'static>(self, _other: S) -> SystemConfig {
        let mut config = self.into_config();
        config.after.push(SystemLabel::of::<S>());
        config
    }
}

impl<M, S: IntoSystem<M> + 'static> IntoSystemConfig<M> for S {
    fn into_config(self) -> SystemConfig {
        SystemConfig {
            system: Box::new(self.into_system()),
            label: SystemLabel::of::<S>(),
            before: Vec::new(),
            after: Vec::new(),
        }
    }
}

impl IntoSystemConfig<ConfigMarker> for SystemConfig {
    fn into_config(self) -> SystemConfig {
        self
    }
}

/// Several system configs.
#[derive(Debug)]
pub struct SystemConfigs(Vec<SystemConfig>);

/// Marker for a single config as [`IntoSystemConfigs`].
pub struct SingleMarker;
/// Marker for tuples of configs.
pub struct TupleMarker;
/// Marker for [`SystemConfigs`].
pub struct ConfigsMarker;

/// Something that becomes several system configs: one system, a tuple of
/// them, or a chain.
pub trait IntoSystemConfigs<Marker>: Sized {
    /// The configs, in order.
    fn into_configs(self) -> SystemConfigs;

    /// Runs the systems one after another, in tuple order.
    fn chain(self) -> SystemConfigs {
        let SystemConfigs(mut configs) = self.into_configs();
        for i in 1..configs.len() {
            let previous = configs[i - 1].label;
            configs[i].after.push(previous);
        }
        SystemConfigs(configs)
    }
}

impl<M, S: IntoSystemConfig<M>> IntoSystemConfigs<(SingleMarker, M)> for S {
    fn into_configs(self) -> SystemConfigs {
        SystemConfigs(vec![self.into_config()])
    }
}

impl IntoSystemConfigs<ConfigsMarker> for SystemConfigs {
    fn into_configs(self) -> SystemConfigs {
        self
    }
}

macro_rules! tuple_configs {
    ($($s:ident $m:ident),*) => {
        #[allow(non_snake_case)]
        impl<$($s: IntoSystemConfigs<$m>, $m),*> IntoSystemConfigs<(TupleMarker, $($m,)*)> for ($($s,)*) {
            fn into_configs(self) -> SystemConfigs {
                let ($($s,)*) = self;
                let mut all = Vec::new();
                $( all.extend($s.into_configs().0); )*
                SystemConfigs(all)
            }
        }
    };
}

tuple_configs!(S0 M0);
tuple_configs!(S0 M0, S1 M1);
tuple_configs!(S0 M0, S1 M1, S2 M2);
tuple_configs!(S0 M0, S1 M1, S2 M2, S3 M3);
tuple_configs!(S0 M0, S1 M1, S2 M2, S3 M3, S4 M4);
tuple_configs!(S0 M0, S1 M1, S2 M2, S3 M3, S4 M4, S5 M5);
tuple_configs!(S0 M0, S1 M1, S2 M2, S3 M3, S4 M4, S5 M5, S6 M6);
tuple_configs!(S0 M0, S1 M1, S2 M2, S3 M3, S4 M4, S5 M5, S6 M6, S7 M7);
tuple_configs!(S0 M0, S1 M1, S2 M2, S3 M3, S4 M4, S5 M5, S6 M6, S7 M7, S8 M8);
tuple_configs!(S0 M0, S1 M1, S2 M2, S3 M3, S4 M4, S5 M5, S6 M6, S7 M7, S8 M8, S9 M9);
tuple_configs!(S0 M0, S1 M1, S2 M2, S3 M3, S4 M4, S5 M5, S6 M6, S7 M7, S8 M8, S9 M9, S10 M10);
tuple_configs!(S0 M0, S1 M1, S2 M2, S3 M3, S4 M4, S5 M5, S6 M6, S7 M7, S8 M8, S9 M9, S10 M10, S11 M11);

/// Why a schedule cannot be built or run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScheduleError {
    /// A system's own parameters conflict (the message names the system
    /// and the component or resource).
    Conflict(String),
    /// Ordering constraints form a cycle through these systems.
    Cycle(Vec<String>),
    /// A `before`/`after` names a system that is not in the schedule.
    UnknownSystem {
        /// The constrained system.
        system: String,
        /// The missing one.
        target: &'static str,
    },
    /// A system cannot run now (a resource or event type is missing).
    Unavailable(String),
    /// The schedule was built for another world.
    WrongWorld,
}

impl std::fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScheduleError::Conflict(m) | ScheduleError::Unavailable(m) => f.write_str(m),
            ScheduleError::Cycle(names) => write!(f, "ordering constraints form a cycle: {}", names.join(" -> ")),
            ScheduleError::UnknownSystem { system, target } => {
                write!(f, "system {system} is ordered against {target}, which is not in the schedule")
            }
            ScheduleError::WrongWorld => f.write_str("the schedule was built for another world"),
        }
    }
}

impl std::error::Error for ScheduleError {}

/// A command that failed when applied, with the system that recorded it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandError {
    /// The recording system.
    pub system: String,
    /// What went wrong (nothing was changed).
    pub error: StoreError,
}

/// Systems, their order, and the stages they run in.
#[derive(Default)]
pub struct Schedule {
    configs: Vec<SystemConfig>,
    stages: Vec<Vec<usize>>,
    built_for: Option<u64>,
    command_errors: Vec<CommandError>,
}

impl std::fmt::Debug for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schedule").field("systems", &self.configs).field("stages", &self.stages).finish()
    }
}

impl Schedule {
    /// An empty schedule.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds systems (a function, a config, a tuple, or a chain).
    pub fn add_systems<M>(&mut self, systems: impl IntoSystemConfigs<M>) -> &mut Self {
        self.configs.extend(systems.into_configs().0);
        self.built_for = None;
        self
    }

    /// Initializes the systems, checks their accesses and ordering, and
    /// packs them into stages.
    pub fn build(&mut self, world: &mut World) -> Result<(), ScheduleError> {
        for config in &mut self.configs {
            config.system.initialize(world);
            if let Some(error) = &config.system.meta().error {
                return Err(ScheduleError::Conflict(error.clone()));
            }
        }
        let n = self.configs.len();
        // Edges: predecessors of each system.
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, config) in self.configs.iter().enumerate() {
            for (targets, i_first) in [(&config.before, true), (&config.after, false)] {
                for target in targets {
                    let matches: Vec<usize> = (0..n).filter(|&j| self.configs[j].label.id == target.id).collect();
                    if matches.is_empty() {
                        return Err(ScheduleError::UnknownSystem {
                            system: config.system.meta().name.clone(),
                            target: target.name,
                        });
                    }
                    for j in matches {
                        if i_first { preds[j].push(i) } else { preds[i].push(j) }
                    }
                }
            }
        }
        // Kahn's algorithm, taking ready systems in insertion order.
        let mut indegree: Vec<usize> = preds.iter().map(Vec::len).collect();
        let mut order = Vec::with_capacity(n);
        let mut done = vec![false; n];
        while order.len() < n {
            let Some(next) = (0..n).find(|&i| !done[i] && indegree[i] == 0) else {
                let names = (0..n).filter(|&i| !done[i]).map(|i| self.configs[i].system.meta().name.clone()).collect();
                return Err(ScheduleError::Cycle(names));
            };
            done[next] = true;
            order.push(next);
            for (i, p) in preds.iter().enumerate() {
                indegree[i] -= p.iter().filter(|&&x| x == next).count();
            }
        }
        // Stage packing.
        let mut stage_of = vec![0usize; n];
        let mut stages: Vec<Vec<usize>> = Vec::new();
        for &i in &order {
            let earliest = preds[i].iter().map(|&p| stage_of[p] + 1).max().unwrap_or(0);
            let access = &self.configs[i].system.meta().access;
            let fits = |stage: &Vec<usize>| {
                stage.iter().all(|&j| {
                    let other = &self.configs[j].system.meta().access;
                    access.conflict_with(other, world.components()).is_none()
                })
            };
            let stage = (earliest..stages.len()).find(|&s| fits(&stages[s])).unwrap_or(stages.len());
            if stage == stages.len() {
                stages.push(Vec::new());
            }
            stages[stage].push(i);
            stage_of[i] = stage;
        }
        for stage in &mut stages {
            stage.sort_unstable();
        }
        self.stages = stages;
        self.built_for = Some(world.id());
        Ok(())
    }

    /// Runs every system once (building first if needed). Nothing runs if a
    /// system cannot (a missing resource); the error names it.
    pub fn run(&mut self, world: &mut World) -> Result<(), ScheduleError> {
        match self.built_for {
            None => self.build(world)?,
            Some(id) if id != world.id() => return Err(ScheduleError::WrongWorld),
            Some(_) => {}
        }
        world.update_events();
        for config in &self.configs {
            config.system.validate(world).map_err(ScheduleError::Unavailable)?;
        }
        self.command_errors.clear();
        let mut errors = Vec::new();
        for stage in &self.stages {
            if let [only] = stage.as_slice() {
                let this_run = world.increment_change_tick();
                // SAFETY: `&mut World` is exclusive and one system runs.
                unsafe { self.configs[*only].system.run_unsafe(world, this_run) };
            } else {
                let world_ref: &World = world;
                let mut members: Vec<&mut Box<dyn System>> = self
                    .configs
                    .iter_mut()
                    .enumerate()
                    .filter(|(i, _)| stage.binary_search(i).is_ok())
                    .map(|(_, c)| &mut c.system)
                    .collect();
                rayon::scope(|scope| {
                    for system in members.iter_mut() {
                        scope.spawn(move |_| {
                            let this_run = world_ref.increment_change_tick_shared();
                            // SAFETY: systems of one stage do not conflict
                            // (checked in `build`), so each holds its access
                            // alone while the stage runs.
                            unsafe { system.run_unsafe(world_ref, this_run) };
                        });
                    }
                });
            }
            for &i in stage {
                let system = &mut self.configs[i].system;
                system.apply_deferred(world, &mut errors);
                let name = &system.meta().name;
                self.command_errors.extend(errors.drain(..).map(|error| CommandError { system: name.clone(), error }));
            }
        }
        world.check_change_ticks();
        Ok(())
    }

    /// Figures of each system's latest run, in the order they were added.
    pub fn system_stats(&self) -> impl Iterator<Item = &SystemStats> {
        self.configs.iter().map(|c| c.system.stats())
    }

    /// The stages, as system names (for inspection and tests).
    pub fn stage_names(&self) -> Vec<Vec<String>> {
        self.stages.iter().map(|s| s.iter().map(|&i| self.configs[i].system.meta().name.clone()).collect()).collect()
    }

    /// Commands that failed in the latest run (stale entities and the
    /// like); nothing was applied for them.
    pub fn command_errors(&self) -> &[CommandError] {
        &self.command_errors
    }
}
