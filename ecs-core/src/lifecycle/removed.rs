//! Removal detection: [`RemovedComponents<T>`].

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use crate::storage::component::{Component, ComponentId};
use crate::storage::entity::Entity;
use crate::storage::tick::TickWindow;
use crate::system::{SystemMeta, SystemParam};
use crate::world::World;

/// The default of [`World::set_removal_log_limit`]: 1 << 20 removals (16
/// MiB) per component type.
pub const DEFAULT_REMOVAL_LOG_LIMIT: usize = 1 << 20;

/// The log of one component's removals: (entity, world tick), in tick
/// order, kept until every live reader has passed an entry, or until more
/// than `limit` newer entries are kept.
#[derive(Debug, Default)]
pub(crate) struct RemovedLog {
    entries: Vec<(Entity, u64)>,
    /// Each reader's position: the tick of its latest run.
    readers: Vec<Weak<AtomicU64>>,
    /// Length at which the next trim is tried (doubles, so trimming is
    /// amortised O(1) per entry).
    trim_at: usize,
    /// Entries dropped before every reader passed them (the limit).
    dropped: u64,
}

impl RemovedLog {
    pub(crate) fn add_reader(&mut self) -> Arc<AtomicU64> {
        let reader = Arc::new(AtomicU64::new(0));
        self.readers.push(Arc::downgrade(&reader));
        reader
    }

    pub(crate) fn push(&mut self, entity: Entity, tick: u64, limit: usize) {
        self.entries.push((entity, tick));
        if self.entries.len() >= self.trim_at.max(64) {
            self.trim(limit);
        }
    }

    /// Drops the entries every live reader has passed, and the oldest ones
    /// past the `limit` newest whoever has not passed them.
    pub(crate) fn trim(&mut self, limit: usize) {
        self.readers.retain(|r| r.strong_count() > 0);
        let passed = self.readers.iter().filter_map(Weak::upgrade).map(|r| r.load(Ordering::Relaxed)).min();
        let mut keep_from = match passed {
            Some(tick) => self.entries.partition_point(|&(_, t)| t <= tick),
            None => self.entries.len(),
        };
        let over = (self.entries.len() - keep_from).saturating_sub(limit);
        keep_from += over;
        self.dropped += over as u64;
        self.entries.drain(..keep_from);
        // Doubling keeps trims amortised O(1) an entry; near the limit a
        // trim every quarter of it keeps the log under 1.25 times it.
        self.trim_at = (2 * self.entries.len()).min(self.entries.len() + limit / 4);
    }

    /// Entries kept now.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

/// Removal detection outside systems (code that drives the world by hand,
/// like `QueryState`): each call to [`RemovedReader::read`] returns the
/// entities that lost `T` since the previous call (the first call: since
/// the reader was made).
///
/// ```
/// use ecs_core::{Component, World};
/// #[derive(Component)]
/// struct Pos(f32);
/// let mut world = World::new();
/// let mut reader = world.removed_reader::<Pos>();
/// let e = world.spawn((Pos(1.0),));
/// world.remove_one::<Pos>(e).unwrap();
/// assert_eq!(reader.read(&world).collect::<Vec<_>>(), vec![e]);
/// assert_eq!(reader.read(&world).count(), 0);
/// ```
pub struct RemovedReader<T: Component> {
    world_id: u64,
    state: RemovedState,
    _marker: PhantomData<fn() -> T>,
}

impl<T: Component> RemovedReader<T> {
    /// The entities that lost `T` since the previous call, in removal order.
    ///
    /// # Panics
    /// If `world` is not the world the reader was made for.
    pub fn read<'w>(&mut self, world: &'w World) -> impl Iterator<Item = Entity> + 'w {
        assert_eq!(self.world_id, world.id(), "a RemovedReader was used with a world it was not made for");
        // Removals are stamped with the world tick at the time; everything
        // stamped up to now is covered, and the tick moves on so later
        // removals are stamped newer (as a query run does).
        let this_run = world.change_tick();
        world.increment_change_tick_shared();
        let last_run = std::mem::replace(&mut self.state.last_run, this_run);
        self.state.reader.store(this_run, Ordering::Relaxed);
        let entries = world.lifecycle.removed.get(self.state.component.index()).map_or(&[][..], |log| &log.entries[..]);
        let start = entries.partition_point(|&(_, t)| t <= last_run);
        entries[start..].iter().take_while(move |&&(_, t)| t <= this_run).map(|&(e, _)| e)
    }
}

impl World {
    /// A reader of the removals of `T` from now on (see [`RemovedReader`]).
    pub fn removed_reader<T: Component>(&mut self) -> RemovedReader<T> {
        let component = self.register::<T>();
        let reader = self.lifecycle.add_removal_reader(component);
        self.lifecycle.component_mut(component).removal_tracked = true;
        self.refresh_lifecycle_flags(component);
        let last_run = self.change_tick();
        reader.store(last_run, Ordering::Relaxed);
        self.increment_change_tick();
        RemovedReader { world_id: self.id(), state: RemovedState { component, reader, last_run }, _marker: PhantomData }
    }

    /// How many removals of `T` the log keeps now (entries not yet passed
    /// by every reader, plus at most as many again awaiting the next trim).
    pub fn removed_log_len<T: Component>(&self) -> usize {
        self.components().id::<T>().and_then(|id| self.lifecycle.removed.get(id.index())).map_or(0, RemovedLog::len)
    }

    /// Bounds each removal log: once a reader falls more than `limit`
    /// removals of a type behind (it is paused by a run condition, or sits
    /// in a schedule that does not run), the oldest entries it has not read
    /// are dropped, and it never sees them. Readers that keep up lose
    /// nothing unless more than `limit` removals of one type happen between
    /// two of their runs. Default [`DEFAULT_REMOVAL_LOG_LIMIT`]; a log holds
    /// at most 1.25 times the limit.
    pub fn set_removal_log_limit(&mut self, limit: usize) {
        self.lifecycle.removal_log_limit = Some(limit.max(1));
    }

    /// Removals of `T` dropped by the log's limit before every reader read
    /// them (see [`World::set_removal_log_limit`]).
    pub fn removals_dropped<T: Component>(&self) -> u64 {
        self.components().id::<T>().and_then(|id| self.lifecycle.removed.get(id.index())).map_or(0, |log| log.dropped)
    }
}

/// Ties [`RemovedComponents`] to its state's lifetime and component type.
type RemovedMarker<'s, T> = (&'s (), fn() -> T);

/// The entities that lost component `T` (by remove or despawn) since this
/// system last ran: the same window rule as `Changed<T>`, so a system that
/// skipped runs sees every removal since its previous run. The log starts
/// when the first reader of `T` is created and keeps an entry until every
/// reader has run past it, or until it is older than the log's limit
/// allows ([`World::set_removal_log_limit`], 1 << 20 removals by default):
/// a reader that stops running for good does not make the log grow without
/// bound.
///
/// ```
/// use ecs_core::prelude::*;
/// use ecs_core::RemovedComponents;
/// #[derive(Component)]
/// struct Target;
/// #[derive(Default)]
/// struct Lost(Vec<Entity>);
///
/// let mut world = World::new();
/// world.insert_resource(Lost::default());
/// let mut schedule = Schedule::new();
/// schedule.add_systems(|mut removed: RemovedComponents<Target>, mut lost: ResMut<Lost>| {
///     lost.0.extend(removed.iter());
/// });
/// schedule.run(&mut world).unwrap();
/// let a = world.spawn((Target,));
/// let b = world.spawn((Target,));
/// world.remove_one::<Target>(a).unwrap();
/// world.despawn(b).unwrap();
/// schedule.run(&mut world).unwrap();
/// assert_eq!(world.resource::<Lost>().unwrap().0, vec![a, b]);
/// ```
pub struct RemovedComponents<'w, 's, T: Component> {
    entries: &'w [(Entity, u64)],
    last_run: u64,
    this_run: u64,
    _marker: PhantomData<RemovedMarker<'s, T>>,
}

impl<T: Component> RemovedComponents<'_, '_, T> {
    /// The entities, in removal order (an entity can appear more than once
    /// if it lost `T` several times).
    pub fn iter(&mut self) -> impl Iterator<Item = Entity> + '_ {
        let (last, this) = (self.last_run, self.this_run);
        let start = self.entries.partition_point(|&(_, t)| t <= last);
        self.entries[start..].iter().take_while(move |&&(_, t)| t <= this).map(|&(e, _)| e)
    }

    /// How many removals the window holds.
    pub fn len(&self) -> usize {
        let start = self.entries.partition_point(|&(_, t)| t <= self.last_run);
        let end = self.entries.partition_point(|&(_, t)| t <= self.this_run);
        end - start
    }

    /// Whether nothing was removed in the window.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A removal reader's state: the component, its position in the log, and
/// the tick of its previous run.
pub struct RemovedState {
    component: ComponentId,
    reader: Arc<AtomicU64>,
    last_run: u64,
}

// SAFETY: reads only the removal log, which changes only through `&mut
// World` (structural operations), never while systems run.
unsafe impl<T: Component> SystemParam for RemovedComponents<'_, '_, T> {
    type State = RemovedState;
    type Item<'w, 's> = RemovedComponents<'w, 's, T>;

    fn init_state(world: &mut World, _: &mut SystemMeta) -> RemovedState {
        let component = world.register::<T>();
        let reader = world.lifecycle.add_removal_reader(component);
        world.lifecycle.component_mut(component).removal_tracked = true;
        world.refresh_lifecycle_flags(component);
        RemovedState { component, reader, last_run: 0 }
    }

    unsafe fn get_param<'w, 's>(
        state: &'s mut RemovedState,
        world: &'w World,
        window: TickWindow,
    ) -> RemovedComponents<'w, 's, T> {
        // The run's 64-bit tick from its low 32 bits: the world tick is at
        // most a few ticks past it.
        let now = world.change_tick();
        let this_run = now - u64::from((now as u32).wrapping_sub(window.this_run().get()));
        let last_run = std::mem::replace(&mut state.last_run, this_run);
        state.reader.store(this_run, Ordering::Relaxed);
        let entries = world.lifecycle.removed.get(state.component.index()).map_or(&[][..], |log| &log.entries[..]);
        RemovedComponents { entries, last_run, this_run, _marker: PhantomData }
    }
}
