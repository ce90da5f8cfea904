//! System parameters besides `Query`: resources (`Res`, `ResMut`),
//! `Commands`, `Local`, events, and tuples of parameters.

use std::any::TypeId;
use std::ops::{Deref, DerefMut};

use crate::query::ChunkStats;
use crate::storage::tick::{AtomicTick, Tick, TickWindow};
use crate::system::command::{CommandQueue, Commands};
use crate::system::event::{EventReader, EventWriter, Events};
use crate::world::World;

use crate::system::{SystemMeta, SystemParam};

/// Shared access to resource `T`.
pub struct Res<'w, T: Send + Sync + 'static> {
    value: &'w T,
    changed: Tick,
    window: TickWindow,
}

impl<T: Send + Sync + 'static> Res<'_, T> {
    /// Whether the resource was written since the system last ran.
    pub fn is_changed(&self) -> bool {
        self.window.contains(self.changed)
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
        let value = world.resource::<T>().unwrap_or_else(|| panic!("{}", missing_resource::<T>()));
        let changed = world.resource_ticks::<T>().map_or(Tick::default(), |(_, c)| c);
        Res { value, changed, window }
    }
}

/// Exclusive access to resource `T`; stamped changed when written through.
pub struct ResMut<'w, T: Send + Sync + 'static> {
    value: &'w mut T,
    changed: &'w AtomicTick,
    window: TickWindow,
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
        let (value, changed) =
            unsafe { world.resource_unchecked_parts::<T>() }.unwrap_or_else(|| panic!("{}", missing_resource::<T>()));
        ResMut { value, changed, window }
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

/// State private to one system, kept between its runs.
pub struct Local<'s, T: Default + Send + Sync + 'static>(&'s mut T);

impl<T: Default + Send + Sync + 'static> Deref for Local<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.0
    }
}

impl<T: Default + Send + Sync + 'static> DerefMut for Local<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.0
    }
}

// SAFETY: touches nothing in the world.
unsafe impl<T: Default + Send + Sync + 'static> SystemParam for Local<'_, T> {
    type State = T;
    type Item<'w, 's> = Local<'s, T>;

    fn init_state(_: &mut World, _: &mut SystemMeta) -> T {
        T::default()
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
        #[allow(clippy::unused_unit, non_snake_case)]
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
