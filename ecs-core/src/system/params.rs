//! System parameters besides `Query`: resources (`Res`, `ResMut`, and
//! `Option` of either for resources that may be missing), `Commands`,
//! `Local`, events, and tuples of parameters.

use std::any::TypeId;
use std::ops::{Deref, DerefMut};

use crate::query::ChunkStats;
use crate::query::change::{DetectChanges, DetectChangesMut};
use crate::storage::tick::{AtomicTick, Tick, TickWindow};
use crate::system::command::{CommandQueue, Commands};
use crate::system::event::{EventReader, EventWriter, Events};
use crate::world::World;

use crate::system::{SystemMeta, SystemParam};

/// Shared access to resource `T`.
///
/// A system with a `Res<T>` parameter is skipped (and the skip reported,
/// see [`crate::Schedule::skipped_systems`]) while `T` is not in the world;
/// take `Option<Res<T>>` to run either way.
///
/// ```
/// use ecs_core::prelude::*;
///
/// struct Gravity(f32);
/// fn report(g: Res<Gravity>, mut seen: Local<u32>) {
///     if g.is_changed() {
///         *seen += 1;
///     }
///     assert!(g.0 < 0.0);
/// }
/// let mut world = World::new();
/// world.insert_resource(Gravity(-9.8));
/// let mut schedule = Schedule::new();
/// schedule.add_systems(report);
/// schedule.run(&mut world).unwrap();
/// ```
pub struct Res<'w, T: Send + Sync + 'static> {
    value: &'w T,
    added: Tick,
    changed: Tick,
    window: TickWindow,
}

impl<'w, T: Send + Sync + 'static> Res<'w, T> {
    /// The resource as seen by a run with `window`, if present.
    fn fetch(world: &'w World, window: TickWindow) -> Option<Self> {
        let (value, added, changed) = world.resource_with_ticks::<T>()?;
        Some(Res { value, added, changed, window })
    }

    /// Whether the resource was written (or inserted) since the system last
    /// ran (the same as [`DetectChanges::is_changed`]).
    pub fn is_changed(&self) -> bool {
        self.window.contains(self.changed)
    }

    /// The plain borrow, for the whole of `'w`.
    pub fn into_inner(self) -> &'w T {
        self.value
    }
}

impl<T: Send + Sync + 'static> DetectChanges for Res<'_, T> {
    fn is_changed(&self) -> bool {
        self.window.contains(self.changed)
    }
    fn is_added(&self) -> bool {
        self.window.contains(self.added)
    }
    fn last_changed(&self) -> Tick {
        self.changed
    }
}

impl<T: Send + Sync + 'static> Deref for Res<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value
    }
}

fn missing_resource<T>() -> String {
    format!("resource {} is not in the world", std::any::type_name::<T>())
}

// SAFETY: records a read of `T` and only reads it.
unsafe impl<T: Send + Sync + 'static> SystemParam for Res<'_, T> {
    type State = ();
    type Item<'w, 's> = Res<'w, T>;

    fn init_state(_: &mut World, meta: &mut SystemMeta) {
        meta.add_resource(TypeId::of::<T>(), std::any::type_name::<T>(), false);
    }
    fn validate(_: &(), world: &World) -> Result<(), String> {
        world.contains_resource::<T>().then_some(()).ok_or_else(missing_resource::<T>)
    }
    unsafe fn get_param<'w, 's>(_: &'s mut (), world: &'w World, window: TickWindow) -> Self::Item<'w, 's> {
        Res::fetch(world, window).unwrap_or_else(|| panic!("{}", missing_resource::<T>()))
    }
}

/// `Res<T>` when `T` is present, `None` when it is not: the system runs
/// either way. The read of `T` is recorded whether or not it is present, so
/// the system still conflicts with writers of `T`.
///
/// ```
/// use ecs_core::prelude::*;
///
/// struct Debug;
/// fn draw(debug: Option<Res<Debug>>, mut frames: Local<u32>) {
///     *frames += 1;
///     if debug.is_some() { /* draw the overlay */ }
/// }
/// let mut world = World::new();
/// let mut schedule = Schedule::new();
/// schedule.add_systems(draw);
/// schedule.run(&mut world).unwrap(); // runs without the resource
/// assert!(schedule.skipped_systems().is_empty());
/// ```
// SAFETY: records a read of `T` and only reads it.
unsafe impl<T: Send + Sync + 'static> SystemParam for Option<Res<'_, T>> {
    type State = ();
    type Item<'w, 's> = Option<Res<'w, T>>;

    fn init_state(_: &mut World, meta: &mut SystemMeta) {
        meta.add_resource(TypeId::of::<T>(), std::any::type_name::<T>(), false);
    }
    unsafe fn get_param<'w, 's>(_: &'s mut (), world: &'w World, window: TickWindow) -> Self::Item<'w, 's> {
        Res::fetch(world, window)
    }
}

/// Exclusive access to resource `T`; stamped changed when written through.
///
/// A system with a `ResMut<T>` parameter is skipped (and the skip
/// reported) while `T` is not in the world; take `Option<ResMut<T>>` to run
/// either way.
///
/// ```
/// use ecs_core::prelude::*;
///
/// #[derive(PartialEq)]
/// struct Score(u32);
/// fn keep(mut score: ResMut<Score>) {
///     score.set_if_neq(Score(3)); // marks only when the value differs
/// }
/// let mut world = World::new();
/// world.insert_resource(Score(3));
/// let before = world.resource_ticks::<Score>().unwrap().1;
/// let mut schedule = Schedule::new();
/// schedule.add_systems(keep);
/// schedule.run(&mut world).unwrap();
/// assert_eq!(world.resource_ticks::<Score>().unwrap().1, before);
/// ```
pub struct ResMut<'w, T: Send + Sync + 'static> {
    value: &'w mut T,
    changed: &'w AtomicTick,
    added: Tick,
    window: TickWindow,
}

impl<'w, T: Send + Sync + 'static> ResMut<'w, T> {
    /// The resource as seen by a run with `window`, if present.
    ///
    /// # Safety
    /// For `'w` nothing else reads or writes `T`.
    unsafe fn fetch(world: &'w World, window: TickWindow) -> Option<Self> {
        // SAFETY: forwarded contract.
        let (value, added, changed) = unsafe { world.resource_unchecked_parts::<T>() }?;
        Some(ResMut { value, changed, added, window })
    }

    /// Gives up the wrapper, marking the resource changed (the caller may
    /// write through the returned borrow).
    pub fn into_inner(self) -> &'w mut T {
        self.changed.store(self.window.this_run());
        self.value
    }
}

impl<T: Send + Sync + 'static> DetectChanges for ResMut<'_, T> {
    fn is_changed(&self) -> bool {
        self.window.contains(self.changed.load())
    }
    fn is_added(&self) -> bool {
        self.window.contains(self.added)
    }
    fn last_changed(&self) -> Tick {
        self.changed.load()
    }
}

impl<T: Send + Sync + 'static> DetectChangesMut for ResMut<'_, T> {
    type Inner = T;
    fn set_changed(&mut self) {
        self.changed.store(self.window.this_run());
    }
    fn bypass_change_detection(&mut self) -> &mut T {
        self.value
    }
}

impl<T: Send + Sync + 'static> Deref for ResMut<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value
    }
}

impl<T: Send + Sync + 'static> DerefMut for ResMut<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.changed.store(self.window.this_run());
        self.value
    }
}

// SAFETY: records a write of `T`; the scheduler never runs another user of
// `T` at the same time.
unsafe impl<T: Send + Sync + 'static> SystemParam for ResMut<'_, T> {
    type State = ();
    type Item<'w, 's> = ResMut<'w, T>;

    fn init_state(_: &mut World, meta: &mut SystemMeta) {
        meta.add_resource(TypeId::of::<T>(), std::any::type_name::<T>(), true);
    }
    fn validate(_: &(), world: &World) -> Result<(), String> {
        world.contains_resource::<T>().then_some(()).ok_or_else(missing_resource::<T>)
    }
    unsafe fn get_param<'w, 's>(_: &'s mut (), world: &'w World, window: TickWindow) -> Self::Item<'w, 's> {
        // SAFETY: the recorded write access makes this the only user of `T`.
        unsafe { ResMut::fetch(world, window) }.unwrap_or_else(|| panic!("{}", missing_resource::<T>()))
    }
}

/// `ResMut<T>` when `T` is present, `None` when it is not: the system runs
/// either way. The write of `T` is recorded whether or not it is present,
/// so the system still conflicts with every other user of `T`.
///
/// ```
/// use ecs_core::prelude::*;
///
/// struct Score(u32);
/// fn add(score: Option<ResMut<Score>>) {
///     if let Some(mut score) = score {
///         score.0 += 1;
///     }
/// }
/// let mut world = World::new();
/// let mut schedule = Schedule::new();
/// schedule.add_systems(add);
/// schedule.run(&mut world).unwrap(); // nothing to add to
/// world.insert_resource(Score(0));
/// schedule.run(&mut world).unwrap();
/// assert_eq!(world.resource::<Score>().unwrap().0, 1);
/// ```
// SAFETY: records a write of `T`; the scheduler never runs another user of
// `T` at the same time.
unsafe impl<T: Send + Sync + 'static> SystemParam for Option<ResMut<'_, T>> {
    type State = ();
    type Item<'w, 's> = Option<ResMut<'w, T>>;

    fn init_state(_: &mut World, meta: &mut SystemMeta) {
        meta.add_resource(TypeId::of::<T>(), std::any::type_name::<T>(), true);
    }
    unsafe fn get_param<'w, 's>(_: &'s mut (), world: &'w World, window: TickWindow) -> Self::Item<'w, 's> {
        // SAFETY: the recorded write access makes this the only user of `T`.
        unsafe { ResMut::fetch(world, window) }
    }
}

// ----- Commands, Local, events ----------------------------------------------

// SAFETY: touches no component or resource while the system runs; the
// queue is applied with exclusive access at a sync point.
unsafe impl SystemParam for Commands<'_, '_> {
    type State = CommandQueue;
    type Item<'w, 's> = Commands<'w, 's>;

    fn init_state(_: &mut World, _: &mut SystemMeta) -> CommandQueue {
        CommandQueue::default()
    }
    unsafe fn get_param<'w, 's>(state: &'s mut CommandQueue, world: &'w World, _: TickWindow) -> Self::Item<'w, 's> {
        state.commands(world)
    }
    fn apply(state: &mut CommandQueue, world: &mut World, errors: &mut Vec<crate::StoreError>) {
        errors.extend(state.apply(world));
    }
}

/// A value built from the world: what a system's [`Local`] state starts
/// as. Every `Default` type is one; implement it (instead of `Default`) for
/// state that must look at or prepare the world first, e.g. register hooks.
pub trait FromWorld {
    /// Builds the value; may change the world (it runs when the system is
    /// initialized, with exclusive access).
    fn from_world(world: &mut World) -> Self;
}

impl<T: Default> FromWorld for T {
    fn from_world(_: &mut World) -> Self {
        T::default()
    }
}

/// State private to one system, kept between its runs; it starts as
/// [`FromWorld::from_world`] (`Default` for most types).
pub struct Local<'s, T: FromWorld + Send + Sync + 'static>(&'s mut T);

impl<T: FromWorld + Send + Sync + 'static> Deref for Local<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.0
    }
}

impl<T: FromWorld + Send + Sync + 'static> DerefMut for Local<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.0
    }
}

// SAFETY: touches nothing in the world while the system runs (`from_world`
// runs at initialization, with exclusive access).
unsafe impl<T: FromWorld + Send + Sync + 'static> SystemParam for Local<'_, T> {
    type State = T;
    type Item<'w, 's> = Local<'s, T>;

    fn init_state(world: &mut World, _: &mut SystemMeta) -> T {
        T::from_world(world)
    }
    unsafe fn get_param<'w, 's>(state: &'s mut T, _: &'w World, _: TickWindow) -> Self::Item<'w, 's> {
        Local(state)
    }
}

fn missing_events<E>() -> String {
    format!("events {} are not registered (call World::add_event)", std::any::type_name::<E>())
}

// SAFETY: records a read of the `Events<E>` resource and only reads it.
unsafe impl<E: Send + Sync + 'static> SystemParam for EventReader<'_, '_, E> {
    type State = u64;
    type Item<'w, 's> = EventReader<'w, 's, E>;

    fn init_state(_: &mut World, meta: &mut SystemMeta) -> u64 {
        meta.add_resource(TypeId::of::<Events<E>>(), std::any::type_name::<Events<E>>(), false);
        0
    }
    fn validate(_: &u64, world: &World) -> Result<(), String> {
        world.contains_resource::<Events<E>>().then_some(()).ok_or_else(missing_events::<E>)
    }
    unsafe fn get_param<'w, 's>(state: &'s mut u64, world: &'w World, _: TickWindow) -> Self::Item<'w, 's> {
        let events = world.resource::<Events<E>>().unwrap_or_else(|| panic!("{}", missing_events::<E>()));
        EventReader { events, cursor: state }
    }
}

// SAFETY: records a write of the `Events<E>` resource.
unsafe impl<E: Send + Sync + 'static> SystemParam for EventWriter<'_, E> {
    type State = ();
    type Item<'w, 's> = EventWriter<'w, E>;

    fn init_state(_: &mut World, meta: &mut SystemMeta) {
        meta.add_resource(TypeId::of::<Events<E>>(), std::any::type_name::<Events<E>>(), true);
    }
    fn validate(_: &(), world: &World) -> Result<(), String> {
        world.contains_resource::<Events<E>>().then_some(()).ok_or_else(missing_events::<E>)
    }
    unsafe fn get_param<'w, 's>(_: &'s mut (), world: &'w World, _: TickWindow) -> Self::Item<'w, 's> {
        // SAFETY: the recorded write access makes this the only user.
        let events = unsafe { world.resource_unchecked_mut::<Events<E>>() }
            .unwrap_or_else(|| panic!("{}", missing_events::<E>()));
        EventWriter { events }
    }
}

macro_rules! tuple_param {
    ($($name:ident $idx:tt),*) => {
        // SAFETY: each element records its own access.
        #[allow(clippy::unused_unit, non_snake_case, reason = "the macro binds tuple elements to their type parameter names, and the empty tuple returns ()")]
        unsafe impl<$($name: SystemParam),*> SystemParam for ($($name,)*) {
            type State = ($($name::State,)*);
            type Item<'w, 's> = ($($name::Item<'w, 's>,)*);

            fn init_state(_world: &mut World, _meta: &mut SystemMeta) -> Self::State {
                ($($name::init_state(_world, _meta),)*)
            }
            fn validate(_state: &Self::State, _world: &World) -> Result<(), String> {
                $( $name::validate(&_state.$idx, _world)?; )*
                Ok(())
            }
            unsafe fn get_param<'w, 's>(state: &'s mut Self::State, _world: &'w World, _window: TickWindow) -> Self::Item<'w, 's> {
                let ($($name,)*) = state;
                // SAFETY: forwarded contract; elements were checked against
                // each other when the system was built.
                ($( unsafe { $name::get_param($name, _world, _window) },)*)
            }
            fn apply(_state: &mut Self::State, _world: &mut World, _errors: &mut Vec<crate::StoreError>) {
                $( $name::apply(&mut _state.$idx, _world, _errors); )*
            }
            fn report(_state: &Self::State, _stats: &mut Vec<ChunkStats>) {
                $( $name::report(&_state.$idx, _stats); )*
            }
        }
    };
}

tuple_param!();
tuple_param!(A 0);
tuple_param!(A 0, B 1);
tuple_param!(A 0, B 1, C 2);
tuple_param!(A 0, B 1, C 2, D 3);
tuple_param!(A 0, B 1, C 2, D 3, E 4);
tuple_param!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_param!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_param!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
tuple_param!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
tuple_param!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
tuple_param!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
tuple_param!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
