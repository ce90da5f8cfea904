//! Schedules: systems with ordering constraints, run in parallel on rayon
//! wherever their accesses allow.
//!
//! ## Build
//! [`Schedule::build`] (run on first use) initializes every system, refuses
//! one whose own parameters conflict (naming the system and component), and
//! orders systems by their `before`/`after` constraints (a cycle is an
//! error). Two systems that conflict (component reads/writes, with
//! `With`/`Without` disjointness; resource reads/writes) and are not ordered
//! get an implicit edge in the order they were added, so conflicting systems
//! never overlap and always run in the same order.
//!
//! ## Run
//! Each run ages events, checks every system can run (resources present),
//! then starts every system with no unfinished predecessor; a finishing
//! system starts the successors it was the last one holding back. The world
//! tick advances before every system run. At the end of the run (the sync
//! point) the tick advances once more and the deferred commands of all
//! systems are applied in the order the systems were added, so the result
//! does not depend on which thread finished first, and every system sees the
//! commands' effects and any direct world writes made before the next run.
//!
//! ## Skipped systems
//! A system that cannot run (a `Res<T>`, `ResMut<T>` or event type it
//! requires is missing) is skipped; the others run as usual, systems ordered
//! after it included, and [`Schedule::run`] returns `Ok`. Each skip is
//! listed in [`Schedule::skipped_systems`] until the next run, with an error
//! naming the system and what it lacks. A skipped system keeps its last-run
//! tick, so when it runs again its `Changed`/`Added` windows cover
//! everything since its previous run, exactly as if it had not been
//! scheduled in between. Take `Option<Res<T>>` / `Option<ResMut<T>>` for a
//! system that should run without the resource.

use std::any::TypeId;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

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
    /// A system cannot run now (a resource or event type is missing; the
    /// message names the system and what it lacks). [`Schedule::run`] skips
    /// such a system and reports this in [`Schedule::skipped_systems`].
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

/// A system that [`Schedule::run`] skipped because it could not run.
///
/// ```
/// use ecs_core::prelude::*;
///
/// struct Gravity(f32);
/// struct Pos(f32);
/// fn fall(mut q: Query<&mut Pos>, g: Res<Gravity>) {
///     q.for_each_mut(|mut p| p.0 -= g.0);
/// }
/// fn count(mut q: Query<&Pos>, mut n: Local<usize>) {
///     *n = q.iter().count();
/// }
/// let mut world = World::new();
/// world.spawn((Pos(0.0),)).unwrap();
/// let mut schedule = Schedule::new();
/// schedule.add_systems((fall, count));
/// schedule.run(&mut world).unwrap(); // `count` ran; `fall` was skipped
/// let skipped = schedule.skipped_systems();
/// assert_eq!(skipped.len(), 1);
/// assert!(skipped[0].system.ends_with("fall"));
/// assert!(skipped[0].error.to_string().contains("Gravity"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedSystem {
    /// The system's name.
    pub system: String,
    /// Why: a [`ScheduleError::Unavailable`] naming the system and the
    /// missing resource or event type.
    pub error: ScheduleError,
}

impl std::fmt::Display for SkippedSystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "skipped: {}", self.error)
    }
}

/// Systems, their order, and the stages they run in.
#[derive(Default)]
pub struct Schedule {
    configs: Vec<SystemConfig>,
    /// Groups of systems that may run at the same time (for inspection).
    stages: Vec<Vec<usize>>,
    /// Successors of each system: explicit order plus conflict edges.
    successors: Vec<Vec<usize>>,
    /// Predecessor count of each system.
    predecessors: Vec<usize>,
    built_for: Option<u64>,
    command_errors: Vec<CommandError>,
    /// Systems the latest run skipped.
    skipped: Vec<SkippedSystem>,
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
        // Dependency graph: explicit predecessors, plus an edge between every
        // conflicting pair in topological (then insertion) order.
        let mut position = vec![0usize; n];
        for (k, &i) in order.iter().enumerate() {
            position[i] = k;
        }
        let mut successors: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, p) in preds.iter().enumerate() {
            for &j in p {
                if !successors[j].contains(&i) {
                    successors[j].push(i);
                }
            }
        }
        for a in 0..n {
            for b in 0..n {
                if position[a] < position[b] && !successors[a].contains(&b) {
                    let (x, y) = (&self.configs[a].system.meta().access, &self.configs[b].system.meta().access);
                    if x.conflict_with(y, world.components()).is_some() {
                        successors[a].push(b);
                    }
                }
            }
        }
        let mut predecessors = vec![0usize; n];
        for list in &successors {
            for &b in list {
                predecessors[b] += 1;
            }
        }
        self.successors = successors;
        self.predecessors = predecessors;
        self.stages = stages;
        self.built_for = Some(world.id());
        Ok(())
    }

    /// Runs every system once (building first if needed). A system that
    /// cannot run (a missing resource) is skipped and listed in
    /// [`Schedule::skipped_systems`]; the others run (see the
    /// [module docs](self)).
    ///
    /// # Errors
    /// When the schedule cannot be built ([`ScheduleError::Conflict`],
    /// [`ScheduleError::Cycle`], [`ScheduleError::UnknownSystem`]) or was
    /// built for another world; nothing runs then.
    pub fn run(&mut self, world: &mut World) -> Result<(), ScheduleError> {
        match self.built_for {
            None => self.build(world)?,
            Some(id) if id != world.id() => return Err(ScheduleError::WrongWorld),
            Some(_) => {}
        }
        world.update_events();
        self.skipped.clear();
        let runnable: Vec<bool> = self
            .configs
            .iter()
            .map(|config| match config.system.validate(world) {
                Ok(()) => true,
                Err(message) => {
                    let system = config.system.meta().name.clone();
                    self.skipped.push(SkippedSystem { system, error: ScheduleError::Unavailable(message) });
                    false
                }
            })
            .collect();
        self.command_errors.clear();
        if self.stages.iter().all(|stage| stage.len() <= 1) {
            // Nothing can overlap: run in order on this thread.
            for stage in &self.stages {
                for &i in stage.iter().filter(|&&i| runnable[i]) {
                    let this_run = world.increment_change_tick();
                    // SAFETY: `&mut World` is exclusive and one system runs.
                    unsafe { self.configs[i].system.run_unsafe(world, this_run) };
                }
            }
        } else {
            self.run_parallel(world, &runnable);
        }
        // Everything from here on (the commands, and direct writes before the
        // next run) is stamped newer than every system's run, so each system
        // sees it next time.
        world.increment_change_tick();
        let mut errors = Vec::new();
        for config in &mut self.configs {
            config.system.apply_deferred(world, &mut errors);
            let name = &config.system.meta().name;
            self.command_errors.extend(errors.drain(..).map(|error| CommandError { system: name.clone(), error }));
        }
        world.check_change_ticks();
        Ok(())
    }

    /// Runs the systems on rayon, each as soon as its predecessors are done
    /// (a system that is not `runnable` is passed over, releasing its
    /// successors at once).
    fn run_parallel(&mut self, world: &World, runnable: &[bool]) {
        let remaining: Vec<AtomicUsize> = self.predecessors.iter().map(|&p| AtomicUsize::new(p)).collect();
        let systems: Vec<Mutex<&mut Box<dyn System>>> =
            self.configs.iter_mut().map(|c| Mutex::new(&mut c.system)).collect();
        let run = Run { world, systems: &systems, successors: &self.successors, remaining: &remaining, runnable };
        let roots: Vec<usize> = (0..self.predecessors.len()).filter(|&i| self.predecessors[i] == 0).collect();
        // The calling thread runs the first ready system itself (no wake-up
        // to wait for); the pool takes the others and everything after it.
        rayon::in_place_scope(|scope| {
            let run = &run;
            for &i in roots.iter().skip(1) {
                scope.spawn(move |scope| run.system(scope, i));
            }
            if let Some(&first) = roots.first() {
                run.system(scope, first);
            }
        });
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

    /// Systems the latest run skipped because they could not run (a
    /// missing resource or event type), in the order they were added; empty
    /// when every system ran. See [`SkippedSystem`].
    pub fn skipped_systems(&self) -> &[SkippedSystem] {
        &self.skipped
    }
}

/// Shared state of one parallel run.
struct Run<'a> {
    world: &'a World,
    systems: &'a [Mutex<&'a mut Box<dyn System>>],
    successors: &'a [Vec<usize>],
    remaining: &'a [AtomicUsize],
    /// Whether each system runs (false: skipped, see `Schedule::run`).
    runnable: &'a [bool],
}

impl<'a> Run<'a> {
    /// Runs system `i`, then each successor it was the last to hold back:
    /// on a pool thread the first on this same thread and the others on the
    /// pool; on the calling thread all of them on the pool.
    fn system<'s>(&'a self, scope: &rayon::Scope<'s>, first: usize)
    where
        'a: 's,
    {
        let mut i = first;
        loop {
            if self.runnable[i] {
                let mut system = self.systems[i].lock().unwrap_or_else(|e| e.into_inner());
                let this_run = self.world.increment_change_tick_shared();
                // SAFETY: every system that conflicts with this one is ordered
                // before or after it (conflict edges added in `build`), so
                // none runs meanwhile and this one holds its access alone.
                unsafe { system.run_unsafe(self.world, this_run) };
            }
            // Off the pool (the thread that called `Schedule::run`), every
            // successor goes to the pool: a system run here whose own
            // parallel loop finds both pool threads busy with other systems
            // would block this thread until one is free, while a pool thread
            // in the same place works on other jobs meanwhile.
            let on_pool = rayon::current_thread_index().is_some();
            let mut next = None;
            for &successor in &self.successors[i] {
                if self.remaining[successor].fetch_sub(1, Ordering::AcqRel) == 1 {
                    if next.is_none() && on_pool {
                        next = Some(successor);
                    } else {
                        scope.spawn(move |scope| self.system(scope, successor));
                    }
                }
            }
            match next {
                Some(n) => i = n,
                None => return,
            }
        }
    }
}
