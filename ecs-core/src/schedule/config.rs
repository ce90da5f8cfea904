//! Configuring systems and sets before they enter a schedule: ordering
//! (`before`, `after`, `chain`), membership (`in_set`), run conditions
//! (`run_if`) and accepted ambiguities (`ambiguous_with`).

use std::any::TypeId;

use super::condition::{Condition, RunCondition};
use super::set::{IntoSystemSet, SetKey, SystemSet, next_uid};
use crate::system::{IntoSystem, System};

/// Identifies a system function type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SystemLabel {
    pub(crate) id: TypeId,
    pub(crate) name: &'static str,
}

impl SystemLabel {
    fn of<T: 'static>() -> Self {
        SystemLabel { id: TypeId::of::<T>(), name: std::any::type_name::<T>() }
    }
}

/// One system with its constraints, sets and run conditions.
pub struct SystemConfig {
    pub(crate) system: Box<dyn System>,
    pub(crate) label: SystemLabel,
    /// Unique per config: what `chain` orders against.
    pub(crate) uid: u64,
    pub(crate) sets: Vec<SetKey>,
    pub(crate) before: Vec<SetKey>,
    pub(crate) after: Vec<SetKey>,
    pub(crate) ambiguous_with: Vec<SetKey>,
    pub(crate) conditions: Vec<RunCondition>,
}

impl std::fmt::Debug for SystemConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SystemConfig")
            .field("system", &self.label.name)
            .field("sets", &self.sets)
            .field("before", &self.before)
            .field("after", &self.after)
            .field("conditions", &self.conditions)
            .finish()
    }
}

/// Marker of [`IntoSystemConfig`] on a ready [`SystemConfig`].
pub struct ConfigMarker;

/// Something that becomes one [`SystemConfig`]: a system function
/// (`fn` of system parameters, or an exclusive `fn(&mut World)`), or a
/// config.
pub trait IntoSystemConfig<Marker>: Sized {
    /// The config.
    fn into_config(self) -> SystemConfig;
}

impl<M, S: IntoSystem<M> + 'static> IntoSystemConfig<M> for S {
    fn into_config(self) -> SystemConfig {
        SystemConfig {
            system: Box::new(self.into_system()),
            label: SystemLabel::of::<S>(),
            uid: next_uid(),
            sets: Vec::new(),
            before: Vec::new(),
            after: Vec::new(),
            ambiguous_with: Vec::new(),
            conditions: Vec::new(),
        }
    }
}

impl IntoSystemConfig<ConfigMarker> for SystemConfig {
    fn into_config(self) -> SystemConfig {
        self
    }
}

/// How one set is configured (see [`IntoSystemSetConfigs`]).
pub(crate) struct SetConfig {
    pub(crate) key: SetKey,
    pub(crate) parents: Vec<SetKey>,
    pub(crate) before: Vec<SetKey>,
    pub(crate) after: Vec<SetKey>,
    pub(crate) conditions: Vec<RunCondition>,
}

impl SetConfig {
    fn new(key: SetKey) -> Self {
        SetConfig { key, parents: Vec::new(), before: Vec::new(), after: Vec::new(), conditions: Vec::new() }
    }
}

/// Several system configs, in order, with the groups that `chain` orders
/// and the unnamed sets that group-wide run conditions need.
pub struct SystemConfigs {
    pub(crate) configs: Vec<SystemConfig>,
    /// Sizes of the top-level elements (a tuple's members), in order.
    groups: Vec<usize>,
    /// Unnamed sets (with conditions) the configs' groups belong to.
    pub(crate) sets: Vec<SetConfig>,
}

impl std::fmt::Debug for SystemConfigs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(&self.configs).finish()
    }
}

impl SystemConfigs {
    fn single(config: SystemConfig) -> Self {
        SystemConfigs { configs: vec![config], groups: vec![1], sets: Vec::new() }
    }

    /// Joins configs as the elements of a tuple.
    #[doc(hidden)]
    pub fn from_elements(elements: Vec<SystemConfigs>) -> Self {
        let mut all = SystemConfigs { configs: Vec::new(), groups: Vec::new(), sets: Vec::new() };
        for element in elements {
            all.groups.push(element.configs.len());
            all.configs.extend(element.configs);
            all.sets.extend(element.sets);
        }
        all
    }

    fn each(mut self, mut f: impl FnMut(&mut SystemConfig)) -> Self {
        self.configs.iter_mut().for_each(&mut f);
        self
    }
}

/// Marker for a single config as [`IntoSystemConfigs`].
pub struct SingleMarker;
/// Marker for tuples of configs.
pub struct TupleMarker;
/// Marker for [`SystemConfigs`].
pub struct ConfigsMarker;

/// Something that becomes several system configs: one system, a tuple of
/// them (nested as deep as needed), or configs made by the methods below.
/// What [`Schedule::add_systems`](crate::Schedule::add_systems) takes.
///
/// ```
/// use ecs_core::prelude::*;
///
/// #[derive(Debug, Clone, PartialEq, Eq, Hash)]
/// struct Input;
/// impl SystemSet for Input {}
///
/// #[derive(Default)]
/// struct Log(Vec<&'static str>);
/// fn read_keys(mut l: ResMut<Log>) {
///     l.0.push("keys");
/// }
/// fn steer(mut l: ResMut<Log>) {
///     l.0.push("steer");
/// }
/// fn integrate(mut l: ResMut<Log>) {
///     l.0.push("integrate");
/// }
/// fn render(mut l: ResMut<Log>) {
///     l.0.push("render");
/// }
/// let mut world = World::new();
/// world.insert_resource(Log::default());
/// let mut schedule = Schedule::new();
/// schedule.add_systems((
///     render.after(integrate),
///     (steer, integrate).chain().after(Input),
///     read_keys.in_set(Input),
/// ));
/// schedule.run(&mut world).unwrap();
/// assert_eq!(world.resource::<Log>().unwrap().0, ["keys", "steer", "integrate", "render"]);
/// ```
pub trait IntoSystemConfigs<Marker>: Sized {
    /// The configs, in order.
    fn into_configs(self) -> SystemConfigs;

    /// Runs the elements one after another, in tuple order (an element
    /// that is itself a group runs as a whole before the next element).
    fn chain(self) -> SystemConfigs {
        let mut configs = self.into_configs();
        let mut start = 0;
        let mut previous: Option<SetKey> = None;
        let groups = std::mem::take(&mut configs.groups);
        for &len in &groups {
            let members = start..start + len;
            if let Some(key) = &previous {
                for config in &mut configs.configs[members.clone()] {
                    config.after.push(key.clone());
                }
            }
            previous = match len {
                0 => previous,
                1 => Some(SetKey::Node(configs.configs[start].uid)),
                _ => {
                    let key = SetKey::anonymous();
                    for config in &mut configs.configs[members] {
                        config.sets.push(key.clone());
                    }
                    Some(key)
                }
            };
            start += len;
        }
        configs.groups = groups;
        configs
    }

    /// Runs these systems before `set` (a [`SystemSet`], or a system
    /// function standing for every system of its type) wherever both are in
    /// the schedule.
    fn before<M>(self, set: impl IntoSystemSet<M>) -> SystemConfigs {
        let key = set.into_set_key();
        self.into_configs().each(|c| c.before.push(key.clone()))
    }

    /// Runs these systems after `set`.
    fn after<M>(self, set: impl IntoSystemSet<M>) -> SystemConfigs {
        let key = set.into_set_key();
        self.into_configs().each(|c| c.after.push(key.clone()))
    }

    /// Puts these systems in `set`: its ordering and run conditions apply
    /// to them.
    fn in_set(self, set: impl SystemSet) -> SystemConfigs {
        let key = SetKey::Named(set.intern());
        self.into_configs().each(|c| c.sets.push(key.clone()))
    }

    /// Runs these systems only when `condition` says so (see
    /// [`condition`](super::condition)). On several systems the condition
    /// is evaluated once per schedule run for all of them.
    fn run_if<M>(self, condition: impl Condition<M>) -> SystemConfigs {
        let mut configs = self.into_configs();
        let condition = condition.into_run_condition();
        if let [single] = &mut configs.configs[..] {
            single.conditions.push(condition);
            return configs;
        }
        let key = SetKey::anonymous();
        for config in &mut configs.configs {
            config.sets.push(key.clone());
        }
        let mut set = SetConfig::new(key);
        set.conditions.push(condition);
        configs.sets.push(set);
        configs
    }

    /// Leaves these systems out of the [ambiguity report](crate::Schedule::ambiguities)
    /// for pairs with the systems of `set`: their order does not matter.
    fn ambiguous_with<M>(self, set: impl IntoSystemSet<M>) -> SystemConfigs {
        let key = set.into_set_key();
        self.into_configs().each(|c| c.ambiguous_with.push(key.clone()))
    }
}

impl<M, S: IntoSystemConfig<M>> IntoSystemConfigs<(SingleMarker, M)> for S {
    fn into_configs(self) -> SystemConfigs {
        SystemConfigs::single(self.into_config())
    }
}

impl IntoSystemConfigs<ConfigsMarker> for SystemConfigs {
    fn into_configs(self) -> SystemConfigs {
        self
    }
}

macro_rules! tuple_configs {
    ($($s:ident $m:ident),*) => {
        #[allow(non_snake_case, reason = "the macro binds tuple elements to their type parameter names")]
        impl<$($s: IntoSystemConfigs<$m>, $m),*> IntoSystemConfigs<(TupleMarker, $($m,)*)> for ($($s,)*) {
            fn into_configs(self) -> SystemConfigs {
                let ($($s,)*) = self;
                SystemConfigs::from_elements(vec![$($s.into_configs()),*])
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
tuple_configs!(S0 M0, S1 M1, S2 M2, S3 M3, S4 M4, S5 M5, S6 M6, S7 M7, S8 M8, S9 M9, S10 M10, S11 M11, S12 M12);
tuple_configs!(
    S0 M0, S1 M1, S2 M2, S3 M3, S4 M4, S5 M5, S6 M6, S7 M7, S8 M8, S9 M9, S10 M10, S11 M11, S12 M12, S13 M13
);
tuple_configs!(
    S0 M0, S1 M1, S2 M2, S3 M3, S4 M4, S5 M5, S6 M6, S7 M7, S8 M8, S9 M9, S10 M10, S11 M11, S12 M12, S13 M13, S14 M14
);
tuple_configs!(
    S0 M0, S1 M1, S2 M2, S3 M3, S4 M4, S5 M5, S6 M6, S7 M7, S8 M8, S9 M9, S10 M10, S11 M11, S12 M12, S13 M13, S14 M14,
    S15 M15
);

// ----- sets ---------------------------------------------------------------

/// Several set configs (see [`IntoSystemSetConfigs`]).
pub struct SystemSetConfigs {
    /// The sets named, in order.
    pub(crate) sets: Vec<SetConfig>,
    /// Sizes of the top-level elements, in order.
    groups: Vec<usize>,
    /// Unnamed parent sets carrying group-wide run conditions.
    pub(crate) extra: Vec<SetConfig>,
}

impl std::fmt::Debug for SystemSetConfigs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.sets.iter().map(|s| &s.key)).finish()
    }
}

impl SystemSetConfigs {
    /// Joins set configs as the elements of a tuple.
    #[doc(hidden)]
    pub fn from_elements(elements: Vec<SystemSetConfigs>) -> Self {
        let mut all = SystemSetConfigs { sets: Vec::new(), groups: Vec::new(), extra: Vec::new() };
        for element in elements {
            all.groups.push(element.sets.len());
            all.sets.extend(element.sets);
            all.extra.extend(element.extra);
        }
        all
    }

    fn each(mut self, mut f: impl FnMut(&mut SetConfig)) -> Self {
        self.sets.iter_mut().for_each(&mut f);
        self
    }
}

/// Sets to configure with
/// [`Schedule::configure_sets`](crate::Schedule::configure_sets): one
/// [`SystemSet`] value or a tuple of them, with ordering, nesting and run
/// conditions.
///
/// ```
/// use ecs_core::prelude::*;
///
/// #[derive(Debug, Clone, PartialEq, Eq, Hash)]
/// enum Game {
///     Input,
///     Simulate,
///     Present,
/// }
/// impl SystemSet for Game {}
/// struct Paused;
///
/// let mut schedule = Schedule::new();
/// schedule.configure_sets((Game::Input, Game::Simulate, Game::Present).chain());
/// schedule.configure_sets(Game::Simulate.run_if(not(resource_exists::<Paused>)));
/// ```
pub trait IntoSystemSetConfigs: Sized {
    /// The configs, in order.
    fn into_set_configs(self) -> SystemSetConfigs;

    /// Orders the elements one after another, in tuple order.
    fn chain(self) -> SystemSetConfigs {
        let mut configs = self.into_set_configs();
        let mut start = 0;
        for k in 0..configs.groups.len() {
            let len = configs.groups[k];
            if k > 0 {
                let previous_len = configs.groups[k - 1];
                let previous: Vec<SetKey> =
                    configs.sets[start - previous_len..start].iter().map(|s| s.key.clone()).collect();
                for set in &mut configs.sets[start..start + len] {
                    set.after.extend(previous.iter().cloned());
                }
            }
            start += len;
        }
        configs
    }

    /// Runs the systems of these sets before `set` (a set, or a system
    /// function).
    fn before<M>(self, set: impl IntoSystemSet<M>) -> SystemSetConfigs {
        let key = set.into_set_key();
        self.into_set_configs().each(|s| s.before.push(key.clone()))
    }

    /// Runs the systems of these sets after `set`.
    fn after<M>(self, set: impl IntoSystemSet<M>) -> SystemSetConfigs {
        let key = set.into_set_key();
        self.into_set_configs().each(|s| s.after.push(key.clone()))
    }

    /// Nests these sets in `set`: its ordering and conditions apply to
    /// their systems.
    fn in_set(self, set: impl SystemSet) -> SystemSetConfigs {
        let key = SetKey::Named(set.intern());
        self.into_set_configs().each(|s| s.parents.push(key.clone()))
    }

    /// Runs the systems of these sets only when `condition` says so;
    /// evaluated at most once per schedule run, when the first of their
    /// systems is about to run.
    fn run_if<M>(self, condition: impl Condition<M>) -> SystemSetConfigs {
        let mut configs = self.into_set_configs();
        let condition = condition.into_run_condition();
        if let [single] = &mut configs.sets[..] {
            single.conditions.push(condition);
            return configs;
        }
        let key = SetKey::anonymous();
        for set in &mut configs.sets {
            set.parents.push(key.clone());
        }
        let mut parent = SetConfig::new(key);
        parent.conditions.push(condition);
        configs.extra.push(parent);
        configs
    }
}

impl<S: SystemSet> IntoSystemSetConfigs for S {
    fn into_set_configs(self) -> SystemSetConfigs {
        SystemSetConfigs {
            sets: vec![SetConfig::new(SetKey::Named(self.intern()))],
            groups: vec![1],
            extra: Vec::new(),
        }
    }
}

impl IntoSystemSetConfigs for SystemSetConfigs {
    fn into_set_configs(self) -> SystemSetConfigs {
        self
    }
}

macro_rules! tuple_set_configs {
    ($($s:ident),*) => {
        #[allow(non_snake_case, reason = "the macro binds tuple elements to their type parameter names")]
        impl<$($s: IntoSystemSetConfigs),*> IntoSystemSetConfigs for ($($s,)*) {
            fn into_set_configs(self) -> SystemSetConfigs {
                let ($($s,)*) = self;
                SystemSetConfigs::from_elements(vec![$($s.into_set_configs()),*])
            }
        }
    };
}

tuple_set_configs!(S0);
tuple_set_configs!(S0, S1);
tuple_set_configs!(S0, S1, S2);
tuple_set_configs!(S0, S1, S2, S3);
tuple_set_configs!(S0, S1, S2, S3, S4);
tuple_set_configs!(S0, S1, S2, S3, S4, S5);
tuple_set_configs!(S0, S1, S2, S3, S4, S5, S6);
tuple_set_configs!(S0, S1, S2, S3, S4, S5, S6, S7);
tuple_set_configs!(S0, S1, S2, S3, S4, S5, S6, S7, S8);
tuple_set_configs!(S0, S1, S2, S3, S4, S5, S6, S7, S8, S9);
tuple_set_configs!(S0, S1, S2, S3, S4, S5, S6, S7, S8, S9, S10);
tuple_set_configs!(S0, S1, S2, S3, S4, S5, S6, S7, S8, S9, S10, S11);
