//! System sets: named groups of systems that can be ordered and gated as
//! one, and the type-erased labels sets and schedules are named by.
//!
//! A set is a value of a user type implementing [`SystemSet`] (usually a
//! fieldless enum). Systems join sets with `.in_set(set)`; sets are ordered
//! against each other, against systems and inside other sets with
//! [`Schedule::configure_sets`](crate::Schedule::configure_sets). Each
//! system function is also the implicit set of every system of its type, so
//! `.before(my_system)` orders against it.
//!
//! ```
//! use ecs_core::prelude::*;
//!
//! #[derive(Debug, Clone, PartialEq, Eq, Hash)]
//! enum Physics {
//!     Forces,
//!     Integrate,
//! }
//! impl SystemSet for Physics {}
//!
//! #[derive(Default)]
//! struct Log(Vec<&'static str>);
//! fn gravity(mut log: ResMut<Log>) {
//!     log.0.push("gravity");
//! }
//! fn step(mut log: ResMut<Log>) {
//!     log.0.push("step");
//! }
//!
//! let mut world = World::new();
//! world.insert_resource(Log::default());
//! let mut schedule = Schedule::new();
//! schedule.configure_sets((Physics::Forces, Physics::Integrate).chain());
//! // Added in the "wrong" order: the sets decide.
//! schedule.add_systems((step.in_set(Physics::Integrate), gravity.in_set(Physics::Forces)));
//! schedule.run(&mut world).unwrap();
//! assert_eq!(world.resource::<Log>().unwrap().0, ["gravity", "step"]);
//! ```

use std::any::{Any, TypeId};
use std::fmt::Debug;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::system::IntoSystem;

/// A value usable as a label: compared and hashed through `dyn`.
pub(crate) trait DynLabel: Any + Send + Sync + Debug {
    fn as_any(&self) -> &dyn Any;
    fn dyn_eq(&self, other: &dyn DynLabel) -> bool;
    fn dyn_hash(&self, state: &mut dyn Hasher);
}

impl<T: Any + Send + Sync + Debug + Eq + Hash> DynLabel for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn dyn_eq(&self, other: &dyn DynLabel) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
    fn dyn_hash(&self, mut state: &mut dyn Hasher) {
        TypeId::of::<T>().hash(&mut state);
        self.hash(&mut state);
    }
}

/// A type-erased label value, cheap to clone.
#[derive(Clone)]
pub(crate) struct Label(pub(crate) Arc<dyn DynLabel>);

impl PartialEq for Label {
    fn eq(&self, other: &Self) -> bool {
        self.0.dyn_eq(&*other.0)
    }
}

impl Eq for Label {}

impl Hash for Label {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.dyn_hash(state);
    }
}

impl Debug for Label {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A named group of systems (see the [module docs](self)). Implement it
/// (no methods) for a fieldless enum or unit struct that derives `Debug`,
/// `Clone`, `PartialEq`, `Eq` and `Hash`.
pub trait SystemSet: Debug + Clone + Eq + Hash + Send + Sync + 'static {
    /// The set, type-erased.
    fn intern(&self) -> InternedSystemSet {
        InternedSystemSet(Label(Arc::new(self.clone())))
    }
}

/// A [`SystemSet`] value, type-erased (compares and hashes as the value).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct InternedSystemSet(pub(crate) Label);

impl Debug for InternedSystemSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl SystemSet for InternedSystemSet {
    fn intern(&self) -> InternedSystemSet {
        self.clone()
    }
}

/// What a constraint, a membership or a run condition names: a user set,
/// every system of one function type, one system, or a group made by
/// `chain`/`run_if` on several systems.
#[doc(hidden)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum SetKey {
    /// A user set.
    Named(InternedSystemSet),
    /// Every system of this function type.
    SystemType(TypeId, &'static str),
    /// The one system with this unique id.
    Node(u64),
    /// An unnamed group.
    Anonymous(u64),
}

impl SetKey {
    /// A fresh key for an unnamed group.
    pub(crate) fn anonymous() -> SetKey {
        SetKey::Anonymous(next_uid())
    }

    /// Words for messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            SetKey::Named(set) => format!("set {set:?}"),
            SetKey::SystemType(_, name) => format!("systems {name}"),
            SetKey::Node(id) => format!("system #{id}"),
            SetKey::Anonymous(_) => "a group of systems (chain or run_if)".to_string(),
        }
    }
}

impl Debug for SetKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

static NEXT_UID: AtomicU64 = AtomicU64::new(1);

/// A process-unique id for a system config or an unnamed group.
pub(crate) fn next_uid() -> u64 {
    NEXT_UID.fetch_add(1, Ordering::Relaxed)
}

/// Marker of [`IntoSystemSet`] for [`SystemSet`] values.
pub struct IsSystemSet;
/// Marker of [`IntoSystemSet`] for system functions.
pub struct IsSystemFunction;

/// What `before`, `after` and `ambiguous_with` take: a [`SystemSet`] value,
/// or a system function (standing for every system of its type).
pub trait IntoSystemSet<Marker>: Sized {
    /// The key constraints are recorded under.
    #[doc(hidden)]
    fn into_set_key(self) -> SetKey;
}

impl<S: SystemSet> IntoSystemSet<IsSystemSet> for S {
    fn into_set_key(self) -> SetKey {
        SetKey::Named(self.intern())
    }
}

impl<M, F: IntoSystem<M> + 'static> IntoSystemSet<(IsSystemFunction, M)> for F {
    fn into_set_key(self) -> SetKey {
        SetKey::SystemType(TypeId::of::<F>(), std::any::type_name::<F>())
    }
}
