//! The world: entities, their archetypes and chunks, and the change clock.

use std::any::TypeId;
use std::collections::HashMap;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU64, Ordering};

use smallvec::SmallVec;

use crate::error::StoreError;
use crate::lifecycle::LifecycleKind;
use crate::query::QueryState;
use crate::query::change::Mut;
use crate::query::fetch::QueryData;
use crate::query::filter::QueryFilter;
use crate::storage::archetype::{Archetype, ArchetypeId};
use crate::storage::bundle::{Bundle, BundleIds, BundlePtrs};
use crate::storage::component::{Component, ComponentId, Components, TypeIdMap};
use crate::storage::edges::MovePlan;
use crate::storage::entity::{Entities, Entity, EntityLocation};
use crate::storage::tick::{CHECK_TICK_THRESHOLD, Tick, TickWindow};
use crate::system::resource::Resources;

/// What a bundle type resolves to, cached per bundle type.
#[derive(Clone, Debug)]
struct BundleMeta {
    /// Component ids in tuple order.
    ids: BundleIds,
    /// The archetype a spawn of this bundle lands in, and the column of each
    /// tuple element there.
    spawn: Option<(ArchetypeId, SmallVec<[usize; 8]>)>,
}

static NEXT_WORLD_ID: AtomicU64 = AtomicU64::new(1);

/// The store: entities, their components in chunked archetypes, and the
/// world's change tick.
///
/// ```
/// use ecs_core::{Component, World};
/// #[derive(Component, Debug, PartialEq)]
/// struct Pos(f32);
/// #[derive(Component)]
/// struct Vel(f32);
///
/// let mut world = World::new();
/// let e = world.spawn((Pos(0.0), Vel(2.0)));
/// world.get_mut::<Pos>(e).unwrap().0 += 1.0;
/// assert_eq!(world.get::<Pos>(e), Ok(&Pos(1.0)));
/// world.despawn(e).unwrap();
/// assert!(world.get::<Pos>(e).is_err());
/// ```
pub struct World {
    id: u64,
    entities: Entities,
    components: Components,
    archetypes: Vec<Archetype>,
    archetype_ids: HashMap<Box<[ComponentId]>, ArchetypeId>,
    bundles: TypeIdMap<BundleMeta>,
    plans: Vec<MovePlan>,
    /// The latest insert plan looked up (see [`LastPlan`]).
    last_insert: LastPlan,
    /// The latest remove plan looked up.
    last_remove: LastPlan,
    resources: Resources,
    event_updaters: Vec<fn(&mut World)>,
    change_tick: AtomicU64,
    last_check_tick: u64,
    pub(crate) lifecycle: crate::lifecycle::Lifecycle,
    /// What went wrong in schedules run through [`World::run_schedule`],
    /// and what [`World::report_error`] reported, until taken.
    pub(crate) error_reports: crate::error::BoundedLog<crate::app::ErrorReport>,
}

impl Default for World {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("entities", &self.entities.len())
            .field("archetypes", &self.archetypes.len())
            .field("change_tick", &self.change_tick())
            .finish()
    }
}

/// The move plan of the latest insert (or remove) of bundle type `key` from
/// archetype `src`, so a run of the same structural change over entities
/// of one archetype (tagging every entity a query found, a state that
/// comes and goes) finds its plan without reading the source archetype's
/// edges. A hit needs only the entity's location, so the rest of the move
/// does not wait for a load of the archetype's edge list first (in
/// `ecs-bench suite`'s `add_remove` that wait was about a fifth of the
/// time). Plans and edges are never dropped or changed, so an entry stays
/// right for the world's lifetime.
#[derive(Clone, Copy)]
struct LastPlan {
    src: ArchetypeId,
    key: TypeId,
    plan: u32,
}

impl LastPlan {
    /// Matches nothing: no archetype has this id.
    const NONE: LastPlan = LastPlan { src: ArchetypeId(u32::MAX), key: TypeId::of::<()>(), plan: 0 };

    #[inline(always)]
    fn get(&self, src: ArchetypeId, key: TypeId) -> Option<usize> {
        (self.src == src && self.key == key).then_some(self.plan as usize)
    }
}

/// Stamps rows `start..start + count` of a chunk as spawned at `now` when
/// dropped.
struct StampOnDrop<'a> {
    arch: &'a mut Archetype,
    chunk: usize,
    start: usize,
    count: usize,
    now: Tick,
}

impl Drop for StampOnDrop<'_> {
    fn drop(&mut self) {
        self.arch.stamp_new_rows(self.chunk, self.start, self.count, self.now);
    }
}

/// Takes a despawned entity's row out of its chunk when dropped: after the
/// row's values were dropped, or while a panicking destructor unwinds, so
/// no row outlives its values.
struct RemoveRow<'a> {
    arch: &'a mut Archetype,
    entities: &'a mut Entities,
    loc: EntityLocation,
    now: Tick,
}

impl Drop for RemoveRow<'_> {
    fn drop(&mut self) {
        let (chunk, row) = (self.loc.chunk as usize, self.loc.row as usize);
        // SAFETY: the row is live and `drop_row` dropped every value in it
        // (a panicking destructor does not stop the others).
        if let Some(moved) = unsafe { self.arch.swap_remove(chunk, row, self.now) } {
            self.entities.set_location(moved, self.loc);
        }
    }
}

/// Finishes an insert when dropped (see [`World::insert`]): writes the
/// bundle after the replaced values were dropped, also while a panicking
/// destructor unwinds.
struct FinishInsert<'a, B: Bundle> {
    world: &'a mut World,
    entity: Entity,
    loc: EntityLocation,
    plan_index: usize,
    bundle: ManuallyDrop<B>,
}

impl<B: Bundle> Drop for FinishInsert<'_, B> {
    fn drop(&mut self) {
        // SAFETY: the bundle is taken once, here, and never used again.
        let bundle = unsafe { ManuallyDrop::take(&mut self.bundle) };
        // SAFETY: `World::insert` made this guard with the entity's location
        // and `B`'s plan from it, and dropped the replaced values before
        // letting it go (or while unwinding from that).
        unsafe { self.world.write_insert(self.entity, self.loc, self.plan_index, bundle) };
    }
}

impl World {
    /// An empty world at tick 1.
    pub fn new() -> World {
        let components = Components::default();
        let empty = Archetype::new(ArchetypeId::EMPTY, &[], &components).expect("the empty archetype always fits");
        let mut archetype_ids = HashMap::new();
        archetype_ids.insert(Box::from([] as [ComponentId; 0]), ArchetypeId::EMPTY);
        World {
            id: NEXT_WORLD_ID.fetch_add(1, Ordering::Relaxed),
            entities: Entities::default(),
            components,
            archetypes: vec![empty],
            archetype_ids,
            bundles: TypeIdMap::default(),
            plans: Vec::new(),
            last_insert: LastPlan::NONE,
            last_remove: LastPlan::NONE,
            event_updaters: Vec::new(),
            resources: Resources::default(),
            change_tick: AtomicU64::new(1),
            last_check_tick: 1,
            lifecycle: crate::lifecycle::Lifecycle::default(),
            error_reports: crate::error::BoundedLog::new(crate::app::DEFAULT_REPORT_LIMIT),
        }
    }

    /// A process-unique id, so a query state can refuse a world it was not
    /// made for.
    #[inline]
    pub fn id(&self) -> u64 {
        self.id
    }

    // ----- ticks -------------------------------------------------------

    /// The world's change tick: monotonic, 64 bits. Writes made now are
    /// stamped with its low 32 bits.
    #[inline]
    pub fn change_tick(&self) -> u64 {
        self.change_tick.load(Ordering::Relaxed)
    }

    #[inline]
    pub(crate) fn now(&self) -> Tick {
        Tick::new(self.change_tick() as u32)
    }

    /// Advances the world tick by one and returns the new value. Systems get
    /// this before every run; code that drives queries by hand calls it
    /// between a writer and a reader, so the reader's run sees the writes
    /// (a run sees stamps in `(last_run, this_run]`).
    ///
    /// Also clamps old stamps when due (see [`crate::storage::tick`]).
    pub fn increment_change_tick(&mut self) -> u64 {
        *self.change_tick.get_mut() += 1;
        self.check_change_ticks();
        self.change_tick()
    }

    /// Advances the tick through a shared borrow (for schedulers running
    /// systems in parallel). The caller must call
    /// [`World::check_change_ticks`] at least every
    /// [`CHECK_TICK_THRESHOLD`] ticks, e.g. at each sync point.
    pub fn increment_change_tick_shared(&self) -> u64 {
        self.change_tick.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Advances the tick by `ticks` as if that many runs had happened with
    /// no writes, clamping stored stamps along the way.
    pub fn advance_change_tick_by(&mut self, ticks: u64) {
        let mut left = ticks;
        while left > 0 {
            let step = left.min(CHECK_TICK_THRESHOLD as u64 / 2);
            *self.change_tick.get_mut() += step;
            left -= step;
            self.check_change_ticks();
        }
    }

    /// Clamps every stored stamp older than [`crate::storage::tick::MAX_CHANGE_AGE`]
    /// so the 32-bit stamps never alias across a wrap. Cheap to call often:
    /// it does nothing until [`CHECK_TICK_THRESHOLD`] ticks have passed.
    pub fn check_change_ticks(&mut self) {
        let now = self.change_tick();
        if now - self.last_check_tick < CHECK_TICK_THRESHOLD as u64 / 2 {
            return;
        }
        let tick = Tick::new(now as u32);
        for archetype in &mut self.archetypes {
            archetype.check_change_ticks(tick);
        }
        self.resources.check_change_ticks(tick);
        self.last_check_tick = now;
    }

    /// Checks the store's invariants and says which one is broken: every
    /// live entity's location names a live row holding that entity, every
    /// live row belongs to a live entity, lengths add up, and no row's
    /// change ticks are newer than its chunk's. What the panic-safety tests
    /// assert after every caught panic; also useful when debugging.
    /// Cost: one pass over every entity and every row tick.
    pub fn check_consistency(&self) -> Result<(), String> {
        let now = self.now();
        let mut rows = 0usize;
        for arch in &self.archetypes {
            arch.check_consistency(now)?;
            for chunk in 0..arch.chunk_count() {
                for (row, &entity) in arch.chunk_entities(chunk).iter().enumerate() {
                    let want = EntityLocation { archetype: arch.id(), chunk: chunk as u32, row: row as u32 };
                    match self.entities.location(entity) {
                        Ok(loc) if loc == want => {}
                        Ok(loc) => return Err(format!("entity {entity} is stored at {want:?} but located at {loc:?}")),
                        Err(_) => return Err(format!("row {want:?} holds entity {entity}, which is not alive")),
                    }
                }
            }
            rows += arch.len();
        }
        let mut live = 0usize;
        for (entity, loc) in self.entities.iter_live() {
            live += 1;
            let holds = self.archetypes.get(loc.archetype.index()).is_some_and(|a| {
                (loc.chunk as usize) < a.chunk_count()
                    && a.chunk_entities(loc.chunk as usize).get(loc.row as usize) == Some(&entity)
            });
            if !holds {
                return Err(format!("live entity {entity} is located at {loc:?}, which does not hold it"));
            }
        }
        if live != rows || live != self.entities.len() as usize {
            return Err(format!("{live} live entity slots, {rows} stored rows, a count of {}", self.entities.len()));
        }
        Ok(())
    }

    // ----- structure ---------------------------------------------------

    /// The component registry.
    pub fn components(&self) -> &Components {
        &self.components
    }

    /// Registers `T` and returns its id.
    pub fn register<T: Component>(&mut self) -> ComponentId {
        self.components.register::<T>()
    }

    /// All archetypes, by id.
    #[inline]
    pub fn archetypes(&self) -> &[Archetype] {
        &self.archetypes
    }

    pub(crate) fn archetypes_mut(&mut self) -> &mut [Archetype] {
        &mut self.archetypes
    }

    /// Live entities.
    pub fn len(&self) -> u32 {
        self.entities.len()
    }

    /// Whether no entity is alive.
    pub fn is_empty(&self) -> bool {
        self.entities.len() == 0
    }

    /// Whether `entity` is alive.
    #[inline]
    pub fn contains(&self, entity: Entity) -> bool {
        self.entities.location(entity).is_ok()
    }

    /// Where a live entity's row is.
    #[inline]
    pub fn location(&self, entity: Entity) -> Result<EntityLocation, StoreError> {
        self.entities.location(entity)
    }

    /// [`World::location`] as an `Option` (see `Entities::get_location`).
    #[inline]
    pub(crate) fn get_location(&self, entity: Entity) -> Option<EntityLocation> {
        self.entities.get_location(entity)
    }

    /// The archetype `id` names, without a bounds check.
    ///
    /// # Safety
    /// `id` is an archetype of this world (as every location and move plan
    /// of this world names).
    #[inline(always)]
    unsafe fn archetype_unchecked(&self, id: ArchetypeId) -> &Archetype {
        debug_assert!(id.index() < self.archetypes.len());
        // SAFETY: the caller's contract.
        unsafe { self.archetypes.get_unchecked(id.index()) }
    }

    /// Move plan `index`, without a bounds check.
    ///
    /// # Safety
    /// `index` came from an archetype's edges of this world.
    #[inline(always)]
    unsafe fn plan_unchecked(&self, index: usize) -> &MovePlan {
        debug_assert!(index < self.plans.len());
        // SAFETY: the caller's contract; edges only hold indices of pushed
        // plans, and plans are never removed.
        unsafe { self.plans.get_unchecked(index) }
    }

    fn archetype_for(&mut self, sorted: &[ComponentId]) -> Result<ArchetypeId, StoreError> {
        if let Some(&id) = self.archetype_ids.get(sorted) {
            return Ok(id);
        }
        let id = ArchetypeId(self.archetypes.len() as u32);
        let mut archetype = Archetype::new(id, sorted, &self.components)?;
        archetype.lifecycle = self.lifecycle_flags_of(sorted);
        self.archetypes.push(archetype);
        self.archetype_ids.insert(sorted.into(), id);
        Ok(id)
    }

    fn bundle_meta<B: Bundle>(&mut self) -> Result<&mut BundleMeta, StoreError> {
        let key = TypeId::of::<B>();
        if !self.bundles.contains_key(&key) {
            let mut ids = BundleIds::new();
            B::register_components(&mut self.components, &mut ids);
            let mut sorted = ids.clone();
            sorted.sort_unstable();
            if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
                return Err(StoreError::DuplicateComponent(self.components.info(w[0]).name()));
            }
            self.bundles.insert(key, BundleMeta { ids, spawn: None });
        }
        Ok(self.bundles.get_mut(&key).expect("inserted above"))
    }

    /// The spawn target of bundle `B`: archetype and column per element.
    fn spawn_target<B: Bundle>(&mut self) -> Result<(ArchetypeId, SmallVec<[usize; 8]>), StoreError> {
        let meta = self.bundle_meta::<B>()?;
        if let Some(target) = &meta.spawn {
            return Ok(target.clone());
        }
        let ids = meta.ids.clone();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        let archetype = self.archetype_for(&sorted)?;
        let arch = &self.archetypes[archetype.index()];
        let columns: SmallVec<[usize; 8]> =
            ids.iter().map(|&c| arch.column_of(c).expect("archetype holds its bundle")).collect();
        let target = (archetype, columns);
        self.bundles.get_mut(&TypeId::of::<B>()).expect("cached").spawn = Some(target.clone());
        Ok(target)
    }

    /// Spawns an entity with the components of `bundle` and returns it.
    ///
    /// # Panics
    /// If the bundle's types are unusable: it names a component twice, or
    /// one row of its component set does not fit in a 16 KiB chunk (errors
    /// that depend only on the types, so a program either always or never
    /// hits them; the message names the types). [`World::try_spawn`]
    /// returns them instead.
    #[track_caller]
    pub fn spawn<B: Bundle>(&mut self, bundle: B) -> Entity {
        match self.spawn_with(bundle, None) {
            Ok(entity) => entity,
            Err(e) => panic!("cannot spawn a {}: {e}", std::any::type_name::<B>()),
        }
    }

    /// [`World::spawn`] that returns the type errors instead of panicking.
    /// Fails, changing nothing, if the bundle names a component twice or one
    /// row of its component set does not fit in a 16 KiB chunk.
    pub fn try_spawn<B: Bundle>(&mut self, bundle: B) -> Result<Entity, StoreError> {
        self.spawn_with(bundle, None)
    }

    /// Spawns a bundle as an entity handed out earlier by
    /// [`World::reserve_entity`] (what deferred spawn commands use).
    pub fn spawn_reserved<B: Bundle>(&mut self, entity: Entity, bundle: B) -> Result<Entity, StoreError> {
        if !self.entities.is_reserved(entity) {
            return Err(StoreError::NoSuchEntity(entity));
        }
        self.spawn_with(bundle, Some(entity))
    }

    /// Hands out an entity handle through a shared borrow, to be spawned
    /// later with [`World::spawn_reserved`]. Until then the handle is not
    /// alive.
    pub fn reserve_entity(&self) -> Entity {
        self.entities.reserve()
    }

    fn spawn_with<B: Bundle>(&mut self, bundle: B, reserved: Option<Entity>) -> Result<Entity, StoreError> {
        let key = TypeId::of::<B>();
        // The cached target, borrowed (not cloned) beside the archetypes
        // and the entity table; the first spawn of `B` computes it.
        let (archetype, columns) = match self.bundles.get(&key).and_then(|meta| meta.spawn.as_ref()) {
            Some(target) => target,
            None => {
                self.spawn_target::<B>()?;
                self.bundles.get(&key).and_then(|meta| meta.spawn.as_ref()).expect("spawn_target caches it")
            }
        };
        let archetype = *archetype;
        let now = self.now();
        let arch = &mut self.archetypes[archetype.index()];
        let (chunk, _) = arch.open_chunk(now);
        let row = arch.chunk_len(chunk);
        let mut ptrs = BundlePtrs::new();
        for &c in columns {
            ptrs.push(arch.column_ptr(c, chunk));
        }
        let location = EntityLocation { archetype, chunk: chunk as u32, row: row as u32 };
        let entity = match reserved {
            Some(entity) => {
                self.entities.alloc_reserved(entity, location)?;
                entity
            }
            None => self.entities.alloc(location),
        };
        // SAFETY: `ptrs` are the columns of `B`'s components in tuple order in
        // the chunk `open_chunk` returned, and `row` is its first free row;
        // the entity column slot `row` is free as well. `commit_rows` then
        // makes exactly that one initialised row live.
        unsafe {
            bundle.write(ptrs.as_slice(), row);
            arch.chunks[chunk].entities_ptr().add(row).write(entity);
            arch.commit_rows(chunk, 1);
        }
        arch.stamp_new_rows(chunk, row, 1, now);
        if arch.lifecycle & (LifecycleKind::Add.bit() | LifecycleKind::Insert.bit()) != 0 {
            self.spawned_lifecycle(archetype, &[entity]);
        }
        Ok(entity)
    }

    /// The lifecycle slow path after spawning `entities` into `archetype`:
    /// `on_add` then `on_insert` for every component, entity by entity.
    #[cold]
    fn spawned_lifecycle(&mut self, archetype: ArchetypeId, entities: &[Entity]) {
        let arch = &self.archetypes[archetype.index()];
        let components: SmallVec<[ComponentId; 16]> = arch.components().iter().copied().collect();
        let kinds: SmallVec<[LifecycleKind; 2]> =
            [LifecycleKind::Add, LifecycleKind::Insert].into_iter().filter(|k| arch.lifecycle & k.bit() != 0).collect();
        for &entity in entities {
            for &kind in &kinds {
                self.run_lifecycle(kind, entity, &components);
            }
        }
        self.flush_lifecycle();
    }

    /// Spawns one entity per bundle, filling whole chunks at a time.
    /// Returns the new entities in order.
    ///
    /// # Panics
    /// As [`World::spawn`]; [`World::try_spawn_batch`] returns the errors.
    #[track_caller]
    pub fn spawn_batch<B, I>(&mut self, bundles: I) -> Vec<Entity>
    where
        B: Bundle,
        I: IntoIterator<Item = B>,
    {
        match self.try_spawn_batch(bundles) {
            Ok(entities) => entities,
            Err(e) => panic!("cannot spawn a batch of {}: {e}", std::any::type_name::<B>()),
        }
    }

    /// [`World::spawn_batch`] that returns the type errors instead of
    /// panicking (nothing is spawned then).
    pub fn try_spawn_batch<B, I>(&mut self, bundles: I) -> Result<Vec<Entity>, StoreError>
    where
        B: Bundle,
        I: IntoIterator<Item = B>,
    {
        let (archetype, columns) = self.spawn_target::<B>()?;
        let now = self.now();
        let mut bundles = bundles.into_iter();
        let hint = bundles.size_hint().0;
        let mut spawned = Vec::with_capacity(hint);
        self.entities.reserve_capacity(hint);
        let listened = self.archetypes[archetype.index()].lifecycle
            & (LifecycleKind::Add.bit() | LifecycleKind::Insert.bit())
            != 0;
        let entities = &mut self.entities;
        let arch = &mut self.archetypes[archetype.index()];
        arch.reserve_rows(hint);
        let mut fill = || {
            loop {
                let mut next = bundles.next();
                if next.is_none() {
                    break;
                }
                let (chunk, free) = arch.open_chunk(now);
                let start = arch.chunk_len(chunk);
                let mut ptrs = BundlePtrs::new();
                for &c in &columns {
                    ptrs.push(arch.column_ptr(c, chunk));
                }
                let ptrs = ptrs.as_slice();
                // Stamps the rows committed in this chunk when the batch moves
                // on, or when the user's iterator panics (then the rows already
                // spawned still carry correct ticks).
                let mut rows = StampOnDrop { arch: &mut *arch, chunk, start, count: 0, now };
                while let Some(bundle) = next {
                    let row = start + rows.count;
                    let entity = entities.alloc(EntityLocation { archetype, chunk: chunk as u32, row: row as u32 });
                    // SAFETY: `row < start + free`, a free row of this chunk, and
                    // `ptrs` are `B`'s columns in tuple order. The row is
                    // committed before the user's iterator runs again, so a panic
                    // there leaves no entity pointing at an uncommitted row.
                    unsafe {
                        bundle.write(ptrs, row);
                        rows.arch.chunks[chunk].entities_ptr().add(row).write(entity);
                        rows.arch.commit_rows(chunk, 1);
                    }
                    spawned.push(entity);
                    rows.count += 1;
                    if rows.count == free {
                        break;
                    }
                    next = bundles.next();
                }
            }
        };
        if !listened {
            fill();
            return Ok(spawned);
        }
        // Listeners: the hooks of the entities spawned so far run even when
        // the user's iterator panics part-way, before the panic goes on.
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(fill));
        self.spawned_lifecycle(archetype, &spawned);
        if let Err(panic) = outcome {
            std::panic::resume_unwind(panic);
        }
        Ok(spawned)
    }

    /// Despawns an entity, dropping its components.
    ///
    /// If a component's destructor panics, the entity is still fully gone
    /// when the panic leaves this call: every other component was dropped,
    /// the row was removed, and the handle is stale.
    pub fn despawn(&mut self, entity: Entity) -> Result<(), StoreError> {
        let lifecycle = self.entities.location(entity).map(|loc| self.archetypes[loc.archetype.index()].lifecycle)?;
        if lifecycle & (LifecycleKind::Replace.bit() | LifecycleKind::Remove.bit()) != 0 {
            self.despawn_lifecycle(entity);
        }
        let loc = self.entities.free(entity)?;
        let (chunk, row) = (loc.chunk as usize, loc.row as usize);
        // The row is removed after its values are dropped, also when a
        // destructor panics (the guard's drop runs while the panic unwinds).
        let now = self.now();
        let remove =
            RemoveRow { arch: &mut self.archetypes[loc.archetype.index()], entities: &mut self.entities, loc, now };
        // SAFETY: the location comes from a live entity; its values are
        // dropped once here and `remove` takes the row out right after, so
        // they are never read again.
        unsafe { remove.arch.drop_row(chunk, row) };
        drop(remove);
        if lifecycle != 0 {
            self.flush_lifecycle();
        }
        Ok(())
    }

    /// The lifecycle slow path before a despawn: `on_replace` then
    /// `on_remove` for every component, and the removal logs.
    #[cold]
    fn despawn_lifecycle(&mut self, entity: Entity) {
        let Ok(loc) = self.entities.location(entity) else { return };
        let arch = &self.archetypes[loc.archetype.index()];
        let flags = arch.lifecycle;
        let components: SmallVec<[ComponentId; 16]> = arch.components().iter().copied().collect();
        for kind in [LifecycleKind::Replace, LifecycleKind::Remove] {
            if flags & kind.bit() != 0 {
                self.run_lifecycle(kind, entity, &components);
            }
        }
    }

    /// Despawns every entity, dropping their components. Resources,
    /// registered components, archetypes and their chunks stay (the chunks
    /// are reused by later spawns).
    ///
    /// Every entity is gone before the first destructor runs; if one
    /// panics, the other values are still dropped before the panic leaves
    /// this call.
    pub fn clear_entities(&mut self) {
        let removing = LifecycleKind::Replace.bit() | LifecycleKind::Remove.bit();
        if self.archetypes.iter().any(|a| a.lifecycle & removing != 0 && !a.is_empty()) {
            // Listeners see every entity go, one by one.
            let listened: Vec<Entity> = self
                .archetypes
                .iter()
                .filter(|a| a.lifecycle & removing != 0)
                .flat_map(|a| (0..a.chunk_count()).flat_map(move |c| a.chunk_entities(c).iter().copied()))
                .collect();
            for entity in listened {
                self.despawn_lifecycle(entity);
            }
        }
        let mut taken = Vec::with_capacity(self.archetypes.len());
        for arch in &mut self.archetypes {
            for chunk in 0..arch.chunk_count() {
                for &entity in arch.chunk_entities(chunk) {
                    self.entities.free(entity).expect("a stored row holds a live entity");
                }
            }
            taken.push(arch.take_rows());
        }
        let archetypes = &self.archetypes;
        crate::storage::unwind::for_each_finishing(0..archetypes.len(), |a| {
            // SAFETY: `take_rows` just emptied these chunks and nothing was
            // added since.
            unsafe { archetypes[a].drop_rows(&taken[a]) };
        });
        self.flush_lifecycle();
    }

    /// Moves a live entity's row along a cached plan. Values of components
    /// both archetypes hold are moved with their ticks; columns only the
    /// destination has are left unwritten and stamped added and changed now.
    ///
    /// # Safety
    /// `plan` was made for the entity's archetype and leads to another one
    /// (not back to it, as an empty bundle's plan does). Values of components the
    /// source has and the destination lacks must already be dead (moved out
    /// or dropped). The caller must write every fresh column before anything
    /// else reads the row.
    #[inline(always)]
    unsafe fn move_entity(&mut self, entity: Entity, loc: EntityLocation, plan: usize) -> EntityLocation {
        let now = self.now();
        debug_assert!(plan < self.plans.len());
        // SAFETY: plan indices come from the archetypes' edges, which only
        // hold indices of pushed plans.
        let plan = unsafe { self.plans.get_unchecked(plan) };
        let (s, d) = (loc.archetype.index(), plan.dst.index());
        debug_assert!(s != d && s < self.archetypes.len() && d < self.archetypes.len());
        let archetypes = self.archetypes.as_mut_ptr();
        // SAFETY: both are archetypes of this world (a location and a plan
        // only name existing ones), and distinct (the caller's contract), so
        // the two borrows do not overlap.
        let (src, dst_arch) = unsafe { (&mut *archetypes.add(s), &mut *archetypes.add(d)) };
        // SAFETY: the plan was made for these two archetypes, the row is the
        // entity's live row, and the caller's contract covers dead values
        // and the fresh columns.
        let (dc, dr, moved) = unsafe { src.move_row(dst_arch, plan, loc.chunk as usize, loc.row as usize, now) };
        let new_loc = EntityLocation { archetype: plan.dst, chunk: dc as u32, row: dr as u32 };
        // SAFETY: `moved` and `entity` are live entities.
        unsafe {
            if let Some(moved) = moved {
                self.entities.set_location_unchecked(moved, loc);
            }
            self.entities.set_location_unchecked(entity, new_loc);
        }
        new_loc
    }

    /// The cached insert plan of bundle `B` from archetype `src`.
    #[inline(always)]
    fn insert_plan<B: Bundle>(&mut self, src: ArchetypeId) -> Result<usize, StoreError> {
        let key = TypeId::of::<B>();
        if let Some(plan) = self.last_insert.get(src, key) {
            return Ok(plan);
        }
        let plan = match self.archetypes[src.index()].insert_edges.get(&key) {
            Some(plan) => plan as usize,
            None => self.new_insert_plan::<B>(src)?,
        };
        self.last_insert = LastPlan { src, key, plan: plan as u32 };
        Ok(plan)
    }

    /// Makes and caches the insert plan of bundle `B` from archetype `src`.
    #[cold]
    #[inline(never)]
    fn new_insert_plan<B: Bundle>(&mut self, src: ArchetypeId) -> Result<usize, StoreError> {
        let key = TypeId::of::<B>();
        let ids = self.bundle_meta::<B>()?.ids.clone();
        let mut set: SmallVec<[ComponentId; 16]> = self.archetypes[src.index()].components().iter().copied().collect();
        set.extend(ids.iter().copied());
        set.sort_unstable();
        set.dedup();
        let dst = self.archetype_for(&set)?;
        let plan = MovePlan::new(&self.archetypes[src.index()], &self.archetypes[dst.index()], &ids, true);
        self.plans.push(plan);
        let index = self.plans.len() - 1;
        self.archetypes[src.index()].insert_edges.insert(key, index as u32);
        Ok(index)
    }

    /// The cached remove plan of bundle `B` from archetype `src`; an error
    /// naming the first component the archetype lacks.
    #[inline(always)]
    fn remove_plan<B: Bundle>(&mut self, entity: Entity, src: ArchetypeId) -> Result<usize, StoreError> {
        let key = TypeId::of::<B>();
        if let Some(plan) = self.last_remove.get(src, key) {
            return Ok(plan);
        }
        let plan = match self.archetypes[src.index()].remove_edges.get(&key) {
            Some(plan) => plan as usize,
            None => self.new_remove_plan::<B>(entity, src)?,
        };
        self.last_remove = LastPlan { src, key, plan: plan as u32 };
        Ok(plan)
    }

    /// Makes and caches the remove plan of bundle `B` from archetype `src`.
    #[cold]
    #[inline(never)]
    fn new_remove_plan<B: Bundle>(&mut self, entity: Entity, src: ArchetypeId) -> Result<usize, StoreError> {
        let key = TypeId::of::<B>();
        let mut ids = BundleIds::new();
        B::component_ids(&self.components, &mut ids)
            .map_err(|component| StoreError::MissingComponent { entity, component })?;
        let arch = &self.archetypes[src.index()];
        if let Some(&missing) = ids.iter().find(|&&id| !arch.contains(id)) {
            return Err(StoreError::MissingComponent { entity, component: self.components.info(missing).name() });
        }
        let set: SmallVec<[ComponentId; 16]> = arch.components().iter().copied().filter(|c| !ids.contains(c)).collect();
        if set.len() + ids.len() != arch.components().len() {
            return Err(StoreError::DuplicateComponent(self.components.info(ids[0]).name()));
        }
        let dst = self.archetype_for(&set)?;
        let plan = MovePlan::new(&self.archetypes[src.index()], &self.archetypes[dst.index()], &ids, false);
        self.plans.push(plan);
        let index = self.plans.len() - 1;
        self.archetypes[src.index()].remove_edges.insert(key, index as u32);
        Ok(index)
    }

    /// Adds the components of `bundle` to a live entity, replacing values it
    /// already has (those count as changed, not added).
    ///
    /// If the destructor of a replaced value panics, the insert still
    /// completes before the panic leaves this call: every replaced value was
    /// dropped once and the entity holds all of `bundle`.
    pub fn insert<B: Bundle>(&mut self, entity: Entity, bundle: B) -> Result<(), StoreError> {
        let Some(loc) = self.entities.get_location(entity) else { return Err(StoreError::NoSuchEntity(entity)) };
        let plan_index = self.insert_plan::<B>(loc.archetype)?;
        // SAFETY: the location and the plan are this world's.
        let lifecycle = unsafe {
            let dst = self.plan_unchecked(plan_index).dst;
            self.archetype_unchecked(loc.archetype).lifecycle | self.archetype_unchecked(dst).lifecycle
        };
        if lifecycle != 0 {
            self.insert_listened(entity, loc, plan_index, bundle, lifecycle);
        } else {
            self.insert_along(entity, loc, plan_index, bundle);
        }
        Ok(())
    }

    /// An insert along a plan, without lifecycle listeners.
    #[inline(always)]
    fn insert_along<B: Bundle>(&mut self, entity: Entity, loc: EntityLocation, plan_index: usize, bundle: B) {
        // SAFETY: `plan_index` is `B`'s insert plan of this world.
        if !unsafe { self.plan_unchecked(plan_index) }.drops_replaced {
            // Nothing replaced has a destructor: no user code runs, so no
            // guard is needed.
            // SAFETY: `plan_index` is `B`'s insert plan from the entity's
            // archetype and the replaced values need no drop.
            unsafe { self.write_insert(entity, loc, plan_index, bundle) };
            return;
        }
        let (chunk, row) = (loc.chunk as usize, loc.row as usize);
        // Values the entity already has are dropped first; `finish` writes
        // the new ones when it drops: right after, or while a panicking
        // destructor unwinds, so the row never keeps a dropped value.
        let finish = FinishInsert { world: self, entity, loc, plan_index, bundle: ManuallyDrop::new(bundle) };
        let world = &*finish.world;
        let plan = &world.plans[plan_index];
        let src = &world.archetypes[loc.archetype.index()];
        crate::storage::unwind::for_each_finishing(0..plan.bundle.len(), |i| {
            if let (_, Some(col)) = plan.bundle[i] {
                // SAFETY: the row is live and holds this value; `finish`
                // overwrites it without reading it, and each column is
                // visited once.
                unsafe { src.drop_value(col as usize, chunk, row) };
            }
        });
        drop(finish);
    }

    /// An insert with lifecycle listeners: `Replace` before, `Add` and
    /// `Insert` after, then the queued lifecycle work.
    #[cold]
    #[inline(never)]
    fn insert_listened<B: Bundle>(
        &mut self,
        entity: Entity,
        loc: EntityLocation,
        plan_index: usize,
        bundle: B,
        lifecycle: u8,
    ) {
        if lifecycle & LifecycleKind::Replace.bit() != 0 {
            self.insert_lifecycle(entity, plan_index, LifecycleKind::Replace);
        }
        self.insert_along(entity, loc, plan_index, bundle);
        for kind in [LifecycleKind::Add, LifecycleKind::Insert] {
            if lifecycle & kind.bit() != 0 {
                self.insert_lifecycle(entity, plan_index, kind);
            }
        }
        self.flush_lifecycle();
    }

    /// The lifecycle slow path of an insert along plan `plan_index`:
    /// `Replace` for the values that exist (before the change), `Add` for
    /// the new ones and `Insert` for all (after it), in bundle order.
    #[cold]
    fn insert_lifecycle(&mut self, entity: Entity, plan_index: usize, kind: LifecycleKind) {
        let plan = &self.plans[plan_index];
        let dst = &self.archetypes[plan.dst.index()];
        let components: SmallVec<[ComponentId; 16]> = plan
            .bundle
            .iter()
            .filter(|(_, existing)| match kind {
                LifecycleKind::Replace => existing.is_some(),
                LifecycleKind::Add => existing.is_none(),
                _ => true,
            })
            .map(|&(col, _)| dst.components()[col as usize])
            .collect();
        self.run_lifecycle(kind, entity, &components);
    }

    /// The second half of [`World::insert`]: moves the row if the bundle
    /// adds components, then writes the bundle.
    ///
    /// # Safety
    /// `plan_index` is `B`'s insert plan from the entity's archetype, `loc`
    /// the entity's location, and the values the bundle replaces were
    /// dropped (or need no drop).
    #[inline(always)]
    unsafe fn write_insert<B: Bundle>(&mut self, entity: Entity, loc: EntityLocation, plan_index: usize, bundle: B) {
        let now = self.now();
        // SAFETY: `plan_index` is `B`'s insert plan of this world.
        let dst_id = unsafe { self.plan_unchecked(plan_index) }.dst;
        let new_loc = if dst_id == loc.archetype {
            loc
        } else {
            // SAFETY: the plan was made for this archetype and leads to
            // another; the destination is a superset of the source, so no
            // source value is left behind; the fresh columns are written
            // below.
            unsafe { self.move_entity(entity, loc, plan_index) }
        };
        let (chunk, row) = (new_loc.chunk as usize, new_loc.row as usize);
        let mut ptrs = BundlePtrs::new();
        // SAFETY: as above; the plan's destination is this world's.
        let plan = unsafe { self.plans.get_unchecked(plan_index) };
        // SAFETY: the plan's destination is an archetype of this world.
        let dst = unsafe { self.archetypes.get_unchecked_mut(dst_id.index()) };
        for &(col, existing) in plan.bundle.iter() {
            // SAFETY: the plan's columns are the destination's, and `chunk`
            // holds the entity's row.
            ptrs.push(unsafe { dst.column_ptr_unchecked(col as usize, chunk) });
            if existing.is_some() {
                dst.mark_row_changed(col as usize, chunk, row, now);
            }
        }
        // SAFETY: each pointer is the column of the matching tuple element;
        // the slots hold either dropped values or fresh, unwritten memory.
        unsafe { bundle.write(ptrs.as_slice(), row) };
    }

    /// Adds one component (see [`World::insert`]).
    pub fn insert_one<T: Component>(&mut self, entity: Entity, component: T) -> Result<(), StoreError> {
        self.insert(entity, (component,))
    }

    /// Removes the components of `B` from a live entity and returns them.
    /// Fails, changing nothing, if the entity lacks any of them.
    pub fn remove<B: Bundle>(&mut self, entity: Entity) -> Result<B, StoreError> {
        let Some(loc) = self.entities.get_location(entity) else { return Err(StoreError::NoSuchEntity(entity)) };
        let plan_index = self.remove_plan::<B>(entity, loc.archetype)?;
        // SAFETY: the location is this world's.
        if unsafe { self.archetype_unchecked(loc.archetype) }.lifecycle != 0 {
            return Ok(self.remove_listened(entity, loc, plan_index));
        }
        // SAFETY: the plan is `B`'s remove plan from the entity's archetype.
        Ok(unsafe { self.remove_along(entity, loc, plan_index) })
    }

    /// Moves `B`'s values out of the row and the row to the plan's
    /// destination.
    ///
    /// # Safety
    /// `plan_index` is `B`'s remove plan from the archetype of `loc`, the
    /// entity's location.
    #[inline(always)]
    unsafe fn remove_along<B: Bundle>(&mut self, entity: Entity, loc: EntityLocation, plan_index: usize) -> B {
        // SAFETY: the location and the plan are this world's.
        let (src, plan) = unsafe { (self.archetype_unchecked(loc.archetype), self.plan_unchecked(plan_index)) };
        let mut ptrs = BundlePtrs::new();
        for &(col, _) in plan.bundle.iter() {
            // SAFETY: the plan's columns are the source's, and `loc.chunk`
            // holds the entity's row.
            ptrs.push(unsafe { src.column_ptr_unchecked(col as usize, loc.chunk as usize) });
        }
        // SAFETY: the row is live and every pointer is the column of the
        // matching tuple element; the values are moved out here and the row
        // is moved (without them) right after.
        let bundle = unsafe { B::read(ptrs.as_slice(), loc.row as usize) };
        // An empty bundle removes nothing and leaves the row where it is.
        if plan.dst != loc.archetype {
            // SAFETY: the plan was made for this archetype; the removed
            // values were moved out above; the destination is a subset of
            // the source, so it has no fresh columns.
            unsafe { self.move_entity(entity, loc, plan_index) };
        }
        bundle
    }

    /// A remove with lifecycle listeners: `Replace` and `Remove` before the
    /// change (the values are still there), then the queued lifecycle work.
    #[cold]
    #[inline(never)]
    fn remove_listened<B: Bundle>(&mut self, entity: Entity, loc: EntityLocation, plan_index: usize) -> B {
        let src = &self.archetypes[loc.archetype.index()];
        let flags = src.lifecycle;
        let components: SmallVec<[ComponentId; 16]> =
            self.plans[plan_index].bundle.iter().map(|&(col, _)| src.components()[col as usize]).collect();
        for kind in [LifecycleKind::Replace, LifecycleKind::Remove] {
            if flags & kind.bit() != 0 {
                self.run_lifecycle(kind, entity, &components);
            }
        }
        // SAFETY: the plan is `B`'s remove plan from the entity's archetype;
        // hooks change no structure, so `loc` still holds.
        let bundle = unsafe { self.remove_along(entity, loc, plan_index) };
        self.flush_lifecycle();
        bundle
    }

    /// Removes one component and returns it (see [`World::remove`]).
    pub fn remove_one<T: Component>(&mut self, entity: Entity) -> Result<T, StoreError> {
        self.remove::<(T,)>(entity).map(|(t,)| t)
    }

    fn column_for<T: Component>(&self, entity: Entity) -> Result<(EntityLocation, usize), StoreError> {
        let loc = self.entities.location(entity)?;
        let missing = || StoreError::MissingComponent { entity, component: std::any::type_name::<T>() };
        let id = self.components.id::<T>().ok_or_else(missing)?;
        let col = self.archetypes[loc.archetype.index()].column_of(id).ok_or_else(missing)?;
        Ok((loc, col))
    }

    /// A shared borrow of one component of a live entity.
    pub fn get<T: Component>(&self, entity: Entity) -> Result<&T, StoreError> {
        let (loc, col) = self.column_for::<T>(entity)?;
        let arch = &self.archetypes[loc.archetype.index()];
        // SAFETY: the row is live (so its chunk is allocated and the row is
        // below capacity), the column holds `T`, and `&self` forbids any
        // write for the borrow's lifetime.
        Ok(unsafe { &*arch.typed_value_ptr::<T>(col, loc.chunk as usize, loc.row as usize) })
    }

    /// A mutable borrow that marks the row changed at the current tick when
    /// written through. Its [`crate::DetectChanges`] window is the current
    /// tick alone: `is_changed`/`is_added` say whether the value was written
    /// or added at this tick.
    pub fn get_mut<T: Component>(&mut self, entity: Entity) -> Result<Mut<'_, T>, StoreError> {
        let (loc, col) = self.column_for::<T>(entity)?;
        let now = self.change_tick();
        let arch = &self.archetypes[loc.archetype.index()];
        let (chunk, row) = (loc.chunk as usize, loc.row as usize);
        // SAFETY: the row is live (its chunk allocated, the row below
        // capacity), `col` is a column of its archetype and holds `T`.
        let (ptr, cells) =
            unsafe { (arch.typed_value_ptr::<T>(col, chunk, row), arch.row_tick_cells_unchecked(col, chunk, row)) };
        // SAFETY: the row is live, the column holds `T`, and `&mut self`
        // makes this the only borrow of the world, so the value, the row
        // ticks and the chunk ticks are ours alone for the borrow; the chunk
        // tick is a shared tick cell (written atomically).
        Ok(unsafe {
            Mut::for_row(
                &mut *ptr,
                cells.changed.as_ptr(),
                cells.block,
                true,
                cells.chunk_changed.as_ptr(),
                false,
                TickWindow::new(now.saturating_sub(1), now),
                cells.added.as_ptr(),
                cells.chunk_all_changed,
            )
        })
    }

    /// Whether a live entity has component `T`.
    pub fn has<T: Component>(&self, entity: Entity) -> Result<bool, StoreError> {
        let loc = self.entities.location(entity)?;
        Ok(self.components.id::<T>().is_some_and(|id| self.archetypes[loc.archetype.index()].contains(id)))
    }

    /// The tick at which `entity`'s `T` was last changed (row stamp or the
    /// chunk's whole-column stamp, whichever is newer).
    pub fn changed_tick<T: Component>(&self, entity: Entity) -> Result<Tick, StoreError> {
        let (loc, col) = self.column_for::<T>(entity)?;
        Ok(self.archetypes[loc.archetype.index()].row_changed_tick(
            col,
            loc.chunk as usize,
            loc.row as usize,
            self.now(),
        ))
    }

    /// The tick at which `T` was added to `entity`.
    pub fn added_tick<T: Component>(&self, entity: Entity) -> Result<Tick, StoreError> {
        let (loc, col) = self.column_for::<T>(entity)?;
        Ok(self.archetypes[loc.archetype.index()].row_added_tick(col, loc.chunk as usize, loc.row as usize))
    }

    /// A new query state for data `Q`.
    ///
    /// # Panics
    /// If `Q` borrows a component mutably twice, or both mutably and
    /// shared (see [`QueryState::try_new`] for the non-panicking form).
    pub fn query<Q: QueryData>(&mut self) -> QueryState<Q, ()> {
        QueryState::new(self)
    }

    /// A new query state for data `Q` with filter `F`.
    ///
    /// # Panics
    /// As [`World::query`].
    pub fn query_filtered<Q: QueryData, F: QueryFilter>(&mut self) -> QueryState<Q, F> {
        QueryState::new(self)
    }

    // ----- resources ---------------------------------------------------

    /// Stores a resource (a typed singleton), returning the one it replaces.
    ///
    /// ```
    /// # use ecs_core::World;
    /// struct Gravity(f32);
    /// let mut world = World::new();
    /// world.insert_resource(Gravity(-9.8));
    /// world.resource_mut::<Gravity>().unwrap().0 = -1.6;
    /// assert_eq!(world.resource::<Gravity>().map(|g| g.0), Some(-1.6));
    /// ```
    pub fn insert_resource<R: Send + Sync + 'static>(&mut self, value: R) -> Option<R> {
        let now = self.now();
        self.resources.insert(value, now)
    }

    /// Removes a resource and returns it.
    pub fn remove_resource<R: Send + Sync + 'static>(&mut self) -> Option<R> {
        self.resources.remove::<R>()
    }

    /// A resource, if present.
    pub fn resource<R: Send + Sync + 'static>(&self) -> Option<&R> {
        self.resources.get::<R>()
    }

    /// A resource with its (added, changed) ticks, in one lookup.
    pub(crate) fn resource_with_ticks<R: Send + Sync + 'static>(&self) -> Option<(&R, Tick, Tick)> {
        self.resources.get_with_ticks::<R>()
    }

    /// A resource, mutably; stamps it changed at the current tick.
    pub fn resource_mut<R: Send + Sync + 'static>(&mut self) -> Option<&mut R> {
        let now = self.now();
        self.resources.get_mut::<R>(now)
    }

    /// A resource, mutably, through a shared borrow (for schedulers).
    ///
    /// # Safety
    /// For the borrow's lifetime nothing else reads or writes `R`.
    // Interior mutability through `UnsafeCell`; exclusivity is the caller's contract.
    #[allow(
        clippy::mut_from_ref,
        reason = "interior mutability through an UnsafeCell; exclusive access is the caller's contract (see # Safety)"
    )]
    pub unsafe fn resource_unchecked_mut<R: Send + Sync + 'static>(&self) -> Option<&mut R> {
        let now = self.now();
        // SAFETY: forwarded contract.
        unsafe { self.resources.get_unchecked_mut::<R>(now) }
    }

    /// A resource and its changed-tick cell, mutably, through a shared
    /// borrow (for `ResMut`, which stamps the tick on write).
    ///
    /// # Safety
    /// For the borrow's lifetime nothing else reads or writes `R`.
    // Interior mutability through `UnsafeCell`; exclusivity is the caller's contract.
    #[allow(
        clippy::mut_from_ref,
        reason = "interior mutability through an UnsafeCell; exclusive access is the caller's contract (see # Safety)"
    )]
    pub(crate) unsafe fn resource_unchecked_parts<R: Send + Sync + 'static>(
        &self,
    ) -> Option<(&mut R, Tick, &crate::storage::tick::AtomicTick)> {
        // SAFETY: forwarded contract.
        unsafe { self.resources.get_unchecked_parts::<R>() }
    }

    /// Registers event type `E`: stores an empty [`crate::Events<E>`]
    /// resource and has [`World::update_events`] age it.
    pub fn add_event<E: Send + Sync + 'static>(&mut self) {
        if !self.contains_resource::<crate::system::event::Events<E>>() {
            self.insert_resource(crate::system::event::Events::<E>::default());
            self.event_updaters.push(|world| {
                if let Some(events) = world.resource_mut::<crate::system::event::Events<E>>() {
                    events.update();
                }
            });
        }
    }

    /// Ages every registered event type by one update: events older than two
    /// updates are dropped. Schedules call this at the start of each run.
    pub fn update_events(&mut self) {
        let updaters = std::mem::take(&mut self.event_updaters);
        for update in &updaters {
            update(self);
        }
        self.event_updaters = updaters;
    }

    /// Whether a resource of type `R` is stored.
    pub fn contains_resource<R: Send + Sync + 'static>(&self) -> bool {
        self.resources.contains::<R>()
    }

    /// The (added, changed) ticks of a resource.
    pub fn resource_ticks<R: Send + Sync + 'static>(&self) -> Option<(Tick, Tick)> {
        self.resources.ticks::<R>()
    }

    pub(crate) fn components_mut(&mut self) -> &mut Components {
        &mut self.components
    }
}
