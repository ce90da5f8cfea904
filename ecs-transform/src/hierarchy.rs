//! Building and tearing down hierarchies so that [`ChildOf`] and
//! [`Children`] stay consistent.
//!
//! [`ChildOf`] is the source of truth and [`Children`] follows it through
//! component hooks (registered by [`init_hierarchy`], which every function
//! here and the propagation system call; call it yourself before spawning
//! `ChildOf` bundles into a world that has used none of them, or let it
//! repair the lists later):
//!
//! - inserting `ChildOf(parent)` (in a spawn or insert bundle, or through
//!   `set_parent`) appends the child to the parent's `Children`; a link to a
//!   dead parent or one that would close a cycle is undone and reported in
//!   [`HierarchyErrors`] ([`HierarchyError::NoSuchEntity`],
//!   [`HierarchyError::Cycle`]);
//! - replacing or removing `ChildOf` (re-parenting, `remove_parent`,
//!   despawning the child) takes the child out of the old parent's list;
//! - despawning a parent (or removing its `Children`) makes its live
//!   children roots, so no `ChildOf` points at a despawned entity.
//!
//! Structural follow-ups (adding or dropping `Children` on the parent)
//! are deferred commands that run as soon as the operation completes.
//!
//! Costs: a link is appended without searching the list (each `ChildOf`
//! insert is linked once, and replacing the link has already taken the
//! child out of its old list), so a parent with 100 000 children is built
//! in linear time, by `set_parent` one child at a time or by one batch of
//! `ChildOf` bundles. Links that must wait for a command (the parent has no
//! list yet, or the child has children and needs a cycle check) wait
//! together for one command, in insert order. Unlinking searches the
//! parent's list from both ends, so a subtree despawned children first (as
//! `despawn_with` does) takes each child from the end of its list; a child
//! in the middle of a long list costs a search and a shift of the list, as
//! in bevy.
//!
//! [`WorldHierarchyExt`] (immediate) and [`CommandsHierarchyExt`] (deferred)
//! add checked edits on top: `set_parent` refuses a cycle with
//! [`HierarchyError::Cycle`] before changing anything, `remove_parent` makes
//! a child a root, and `despawn_with` removes an entity and, by
//! [`DespawnMode`], its whole subtree or nothing more.
//!
//! All walks are iterative (explicit stacks), so a chain 10 000 deep is fine.
//! Each edit stamps what propagation needs to see: a new or moved link
//! stamps the child's `ChildOf` (added or changed), a detached entity has
//! its `LocalTransform` marked changed, so the next propagation recomputes
//! the entity and, through it, its subtree.

use ecs_core::{Allow, BoundedLog, Commands, DeferredWorld, Disabled, Entity, FromWorld, StoreError, World};
use smallvec::smallvec;

use crate::components::{ChildOf, Children, LocalTransform};

/// Why a hierarchy edit was refused. A refused edit changes nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HierarchyError {
    /// The entity is not alive.
    NoSuchEntity(Entity),
    /// Making `parent` the parent of `child` would close a cycle (`parent` is
    /// `child` or one of its descendants).
    Cycle {
        /// The entity to attach.
        child: Entity,
        /// The requested parent.
        parent: Entity,
    },
    /// The store refused a structural change.
    Store(StoreError),
    /// Found by propagation: `child`'s [`ChildOf`] names `parent`, which is
    /// not alive (despawned with `World::despawn` instead of
    /// [`WorldHierarchyExt::despawn_with`]). `child` is propagated as a
    /// root until it is given a new parent or made a root. Reported once,
    /// by the first propagation that computes `child` (its local or link
    /// changed) after `parent` died.
    DanglingParent {
        /// The entity with the broken link.
        child: Entity,
        /// The dead parent it names.
        parent: Entity,
    },
    /// Found by propagation: the [`ChildOf`] links above `entity` loop (a
    /// link copied by hand, not made by [`WorldHierarchyExt::set_parent`]).
    /// The entities on and below the loop are not propagated. Only links
    /// between entities with both transform components make a loop: an
    /// entity without them cuts the chain, and the child below it is
    /// propagated from the identity, like the child of a root. A loop is
    /// reported once: not again while it holds an entity reported on a
    /// loop before.
    CycleFound {
        /// An entity on or below the loop.
        entity: Entity,
    },
}

impl std::fmt::Display for HierarchyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HierarchyError::NoSuchEntity(e) => write!(f, "entity {e} does not exist"),
            HierarchyError::Cycle { child, parent } => {
                write!(f, "making {parent} the parent of {child} would close a cycle ({parent} is {child} or below it)")
            }
            HierarchyError::Store(e) => write!(f, "{e}"),
            HierarchyError::DanglingParent { child, parent } => write!(
                f,
                "{child} names {parent} as its parent, but {parent} was despawned; {child} is propagated as a root until it is re-parented or made a root"
            ),
            HierarchyError::CycleFound { entity } => {
                write!(f, "the ChildOf links above {entity} form a loop; it and its subtree are not propagated")
            }
        }
    }
}

impl std::error::Error for HierarchyError {}

impl From<StoreError> for HierarchyError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NoSuchEntity(e) => HierarchyError::NoSuchEntity(e),
            other => HierarchyError::Store(other),
        }
    }
}

/// What despawning a parent does to its descendants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DespawnMode {
    /// Despawn the entity and every descendant: every entity its
    /// `Children` list reaches, each once (lists made to loop by links
    /// written by hand included).
    #[default]
    Subtree,
    /// Despawn only the entity; its children become roots (their subtrees
    /// stay attached to them).
    DetachChildren,
}

/// Hierarchy errors of deferred commands, kept as a resource (the store's
/// command queue reports only [`StoreError`]s), and the broken links the
/// propagation system found ([`HierarchyError::DanglingParent`],
/// [`HierarchyError::CycleFound`]; each reported once). Read and clear it
/// ([`HierarchyErrors::take`]) after a schedule run.
///
/// Each error is also reported through [`World::report_error`] (source
/// [`HIERARCHY_ERROR_SOURCE`]): inside an [`ecs_core::App`] it reaches the
/// app's error handler after the schedule that met it.
///
/// It keeps the newest [`HierarchyErrors::LIMIT`] errors and counts the
/// older ones it dropped ([`HierarchyErrors::dropped`]), so a game that
/// never reads it (and issues a failing command every frame) does not grow
/// it without bound.
///
/// ```
/// use ecs_core::{CommandQueue, World};
/// use ecs_transform::{CommandsHierarchyExt, HierarchyError, HierarchyErrors};
///
/// let mut world = World::new();
/// let (a, b) = (world.spawn(()), world.spawn(()));
/// let mut queue = CommandQueue::default();
/// for _ in 0..HierarchyErrors::LIMIT + 2 {
///     let mut commands = queue.commands(&world);
///     commands.set_parent(b, a);
///     commands.set_parent(a, b); // refused: a loop
/// }
/// assert!(queue.apply(&mut world).is_empty());
/// let errors = world.resource_mut::<HierarchyErrors>().unwrap();
/// assert_eq!((errors.len(), errors.dropped()), (HierarchyErrors::LIMIT, 2));
/// assert!(errors.take().iter().all(|e| *e == HierarchyError::Cycle { child: a, parent: b }));
/// ```
#[derive(Debug)]
pub struct HierarchyErrors {
    log: BoundedLog<HierarchyError>,
}

impl Default for HierarchyErrors {
    fn default() -> Self {
        HierarchyErrors { log: BoundedLog::new(Self::LIMIT) }
    }
}

impl HierarchyErrors {
    /// How many errors are kept: past it, the oldest is dropped for each
    /// new one.
    pub const LIMIT: usize = 1024;

    /// Records an error (dropping the oldest kept one past [`Self::LIMIT`]).
    pub fn push(&mut self, error: HierarchyError) {
        self.log.push(error);
    }

    /// The errors kept, oldest first.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &HierarchyError> + '_ {
        self.log.iter()
    }

    /// Errors kept.
    pub fn len(&self) -> usize {
        self.log.len()
    }

    /// Whether no error is kept.
    pub fn is_empty(&self) -> bool {
        self.log.is_empty()
    }

    /// Takes the errors kept, oldest first, leaving none.
    pub fn take(&mut self) -> Vec<HierarchyError> {
        self.log.take()
    }

    /// Errors dropped to stay within [`Self::LIMIT`], over the resource's
    /// life.
    pub fn dropped(&self) -> u64 {
        self.log.dropped()
    }
}

/// Hierarchy edits with immediate effect.
///
/// ```
/// use ecs_core::World;
/// use ecs_transform::{ChildOf, Children, DespawnMode, HierarchyError, WorldHierarchyExt};
///
/// let mut world = World::new();
/// let [a, b, c] = [(); 3].map(|_| world.spawn(()));
/// world.set_parent(b, a).unwrap();
/// world.set_parent(c, b).unwrap();
/// assert_eq!(world.set_parent(a, c), Err(HierarchyError::Cycle { child: a, parent: c }));
/// assert_eq!(world.get::<Children>(a).unwrap().as_slice(), &[b]);
/// assert_eq!(world.despawn_with(a, DespawnMode::Subtree), Ok(3));
/// assert!(world.is_empty());
/// ```
pub trait WorldHierarchyExt {
    /// Makes `parent` the parent of `child`, detaching it from a previous
    /// parent. Refuses a link that would close a cycle.
    fn set_parent(&mut self, child: Entity, parent: Entity) -> Result<(), HierarchyError>;
    /// Makes `child` a root; returns its former parent, if any.
    fn remove_parent(&mut self, child: Entity) -> Result<Option<Entity>, HierarchyError>;
    /// Despawns `entity` and, by `mode`, its subtree or nothing more.
    /// Returns how many entities were despawned.
    fn despawn_with(&mut self, entity: Entity, mode: DespawnMode) -> Result<usize, HierarchyError>;
    /// The parent of `entity`, if it has one.
    fn parent_of(&self, entity: Entity) -> Option<Entity>;
    /// The children of `entity` (empty if none).
    fn children_of(&self, entity: Entity) -> &[Entity];
}

/// Marks that the hierarchy hooks are registered in a world, and holds the
/// links a hook could not complete in place, in hook order, until the one
/// command that completes them ([`link_pending`]) runs.
#[derive(Default)]
struct HierarchyHooks {
    /// `(child, parent)` per `ChildOf` insert still to link.
    pending: Vec<(Entity, Entity)>,
    /// Whether a [`link_pending`] command is queued.
    drain_queued: bool,
    /// Scratch of [`link_pending`]: one bit per entity index (all clear
    /// between runs).
    seen: Vec<u64>,
}

/// Proof that a world has the hierarchy hooks: as a system's
/// `Local<HierarchyHooksInstalled>` it registers them (and repairs the
/// lists) when the system is initialized, so a schedule that propagates
/// keeps [`Children`] in step from its first run.
#[derive(Debug)]
pub struct HierarchyHooksInstalled(());

impl FromWorld for HierarchyHooksInstalled {
    fn from_world(world: &mut World) -> Self {
        init_hierarchy(world);
        HierarchyHooksInstalled(())
    }
}

/// Registers the hooks that keep [`Children`] in step with [`ChildOf`] (once
/// per world; later calls return at once) and rebuilds every `Children`
/// list from the `ChildOf` links already present, so a world that spawned
/// `ChildOf` bundles before the hooks existed is repaired.
pub fn init_hierarchy(world: &mut World) {
    if world.contains_resource::<HierarchyHooks>() {
        return;
    }
    world.insert_resource(HierarchyHooks::default());
    world.register_component_hooks::<ChildOf>().on_insert(child_linked).on_replace(child_unlinked);
    world.register_component_hooks::<Children>().on_remove(parent_removed);
    // Repair: every live link, in entity order, becomes a list entry.
    // Disabled entities are part of the hierarchy like the others.
    let mut links = world.query_filtered::<(Entity, &ChildOf), Allow<Disabled>>();
    let pairs: Vec<(Entity, Entity)> = links.iter(world).map(|(e, c)| (e, c.0)).collect();
    let mut lists = world.query_filtered::<&mut Children, Allow<Disabled>>();
    lists.for_each_mut(world, |mut children| children.0.clear());
    for (child, parent) in pairs {
        link(world, child, parent);
    }
    drop_empty_lists(world);
}

/// Appends `child` to `parent`'s list (adding the component if needed), or
/// undoes the link if the parent is dead or the link closes a cycle.
fn link(world: &mut World, child: Entity, parent: Entity) {
    let refused = if !world.contains(parent) {
        Some(HierarchyError::NoSuchEntity(parent))
    } else if closes_cycle(world, child, parent) {
        Some(HierarchyError::Cycle { child, parent })
    } else {
        None
    };
    if let Some(error) = refused {
        if world.get::<ChildOf>(child).is_ok_and(|c| c.0 == parent) {
            let _ = world.remove_one::<ChildOf>(child);
        }
        push_errors(world, [error]);
        return;
    }
    // No search for the child in the list: each `ChildOf` insert is linked
    // once, and replacing or removing the link took the child out of its
    // old parent's list (a parent with 100 000 children is built in linear
    // time).
    match world.get_mut::<Children>(parent) {
        Ok(mut children) => children.0.push(child),
        Err(_) => {
            let _ = world.insert_one(parent, Children(smallvec![child]));
        }
    }
}

/// Whether `parent` is `child` or below it. A child without children is
/// nobody's ancestor, so the walk is skipped for leaves (building a chain
/// stays linear). The step bound keeps a corrupted store from hanging.
fn closes_cycle(world: &World, child: Entity, parent: Entity) -> bool {
    if parent == child {
        return true;
    }
    if !world.has::<Children>(child).unwrap_or(false) {
        return false;
    }
    let mut ancestor = Some(parent);
    let mut steps = 0u64;
    while let Some(a) = ancestor {
        if a == child || steps > u64::from(world.len()) {
            return true;
        }
        ancestor = world.parent_of(a);
        steps += 1;
    }
    false
}

/// Records `errors` in [`HierarchyErrors`], inserting it first if needed,
/// and reports each through [`World::report_error`] (source
/// [`HIERARCHY_ERROR_SOURCE`]), so an app's error handler sees them.
pub(crate) fn push_errors(world: &mut World, errors: impl IntoIterator<Item = HierarchyError>) {
    if !world.contains_resource::<HierarchyErrors>() {
        world.insert_resource(HierarchyErrors::default());
    }
    for error in errors {
        world.report_error(HIERARCHY_ERROR_SOURCE, &error);
        if let Some(list) = world.resource_mut::<HierarchyErrors>() {
            list.log.push(error);
        }
    }
}

/// The source of the hierarchy's reports to an app's error handler
/// ([`ecs_core::app::ErrorReport::Other`]).
pub const HIERARCHY_ERROR_SOURCE: &str = "hierarchy";

/// Removes the `Children` components that lost their last child.
fn drop_empty_lists(world: &mut World) {
    let mut lists = world.query_filtered::<(Entity, &Children), Allow<Disabled>>();
    let empty: Vec<Entity> = lists.iter(world).filter(|(_, c)| c.0.is_empty()).map(|(e, _)| e).collect();
    for e in empty {
        let _ = world.remove_one::<Children>(e);
    }
}

/// `ChildOf` was written: link the child to its parent. The parent's list
/// may need a structural change, so such a link waits in
/// [`HierarchyHooks::pending`] for a deferred command (it runs as soon as
/// the operation completes).
fn child_linked(mut world: DeferredWorld<'_>, child: Entity) {
    let Ok(&ChildOf(parent)) = world.get::<ChildOf>(child) else { return };
    let Some(waiting) = world.resource::<HierarchyHooks>().map(|h| !h.pending.is_empty()) else {
        // The hooks come with the resource, which nothing else removes.
        return;
    };
    // The common case (a leaf joins a parent that has children) needs no
    // structural change and no cycle walk. While earlier links wait, this
    // one waits behind them, so lists keep the order of the inserts.
    let leaf = child != parent && world.get::<Children>(child).is_err();
    if leaf
        && !waiting
        && let Ok(mut children) = world.get_mut::<Children>(parent)
    {
        children.0.push(child);
        return;
    }
    let Some(hooks) = world.resource_mut::<HierarchyHooks>() else { return };
    hooks.pending.push((child, parent));
    if !std::mem::replace(&mut hooks.drain_queued, true) {
        world.commands().add(link_pending);
    }
}

/// Links the children waiting in [`HierarchyHooks::pending`], in order. A
/// child whose link was written more than once before this ran has several
/// entries; only its last one counts (as if each insert had been linked at
/// once), and only if its `ChildOf` still names that parent.
///
/// A panic in the middle (a user's hook on `Children`) puts the links not
/// yet made back in front of the queue; the next link queued runs them.
fn link_pending(world: &mut World) -> Result<(), StoreError> {
    let Some(hooks) = world.resource_mut::<HierarchyHooks>() else { return Ok(()) };
    hooks.drain_queued = false;
    let mut pending = std::mem::take(&mut hooks.pending);
    if pending.len() > 1 {
        // Each child's last entry, kept in place; the earlier ones dropped.
        let seen = &mut hooks.seen;
        let mut keep = pending.len();
        for i in (0..pending.len()).rev() {
            let index = pending[i].0.index() as usize;
            let (word, bit) = (index / 64, 1u64 << (index % 64));
            if seen.len() <= word {
                seen.resize(word + 1, 0);
            }
            if seen[word] & bit == 0 {
                seen[word] |= bit;
                keep -= 1;
                pending[keep] = pending[i];
            }
        }
        for &(child, _) in &pending[keep..] {
            seen[child.index() as usize / 64] = 0;
        }
        pending.drain(..keep);
    }

    /// Gives the buffer back, with the entries not yet run.
    struct Drain<'w> {
        world: &'w mut World,
        pending: Vec<(Entity, Entity)>,
        next: usize,
    }
    impl Drop for Drain<'_> {
        fn drop(&mut self) {
            let Some(hooks) = self.world.resource_mut::<HierarchyHooks>() else { return };
            // Only a panic leaves entries; any queued meanwhile go behind.
            let mut rest = self.pending.split_off(self.next);
            rest.append(&mut hooks.pending);
            if rest.is_empty() {
                self.pending.clear();
                hooks.pending = std::mem::take(&mut self.pending);
            } else {
                hooks.pending = rest;
            }
        }
    }
    let mut drain = Drain { world, pending, next: 0 };
    while drain.next < drain.pending.len() {
        let (child, parent) = drain.pending[drain.next];
        drain.next += 1;
        // Still the same link by the time it runs?
        if drain.world.get::<ChildOf>(child).is_ok_and(|c| c.0 == parent) {
            link(drain.world, child, parent);
        }
    }
    Ok(())
}

/// `ChildOf` is about to be replaced or removed: take the child out of its
/// old parent's list (dropping the list with its last child, deferred).
fn child_unlinked(mut world: DeferredWorld<'_>, child: Entity) {
    let Ok(&ChildOf(parent)) = world.get::<ChildOf>(child) else { return };
    let now_empty = match world.get_mut::<Children>(parent) {
        Ok(mut children) => {
            if let Some(i) = find_child(&children.0, child) {
                children.0.remove(i);
            }
            children.0.is_empty()
        }
        Err(_) => false,
    };
    if now_empty {
        world.commands().add(move |world: &mut World| {
            if world.get::<Children>(parent).is_ok_and(|c| c.0.is_empty()) {
                world.remove_one::<Children>(parent)?;
            }
            Ok(())
        });
    }
}

/// Where `child` is in `list`, searched from both ends at once: the
/// first child and the latest one are found at once (a subtree despawned
/// children first takes each from the end of its parent's list).
pub(crate) fn find_child(list: &[Entity], child: Entity) -> Option<usize> {
    let (mut front, mut back) = (0, list.len());
    while front < back {
        if list[front] == child {
            return Some(front);
        }
        back -= 1;
        if list[back] == child {
            return Some(back);
        }
        front += 1;
    }
    None
}

/// A parent's `Children` is about to go (despawn, or removed by hand): its
/// live children that still name it become roots.
fn parent_removed(mut world: DeferredWorld<'_>, parent: Entity) {
    let Ok(children) = world.get::<Children>(parent) else { return };
    let orphans: Vec<Entity> = children.0.to_vec();
    world.commands().add(move |world: &mut World| {
        for child in orphans {
            if world.get::<ChildOf>(child).is_ok_and(|c| c.0 == parent) {
                make_root(world, child)?;
            }
        }
        Ok(())
    });
}

/// Drops `ChildOf` from `entity` and marks its local transform changed so
/// it is recomputed as a root.
fn make_root(world: &mut World, entity: Entity) -> Result<(), StoreError> {
    if world.has::<ChildOf>(entity)? {
        world.remove_one::<ChildOf>(entity)?;
    }
    if let Ok(mut local) = world.get_mut::<LocalTransform>(entity) {
        local.set_changed();
    }
    Ok(())
}

impl WorldHierarchyExt for World {
    fn set_parent(&mut self, child: Entity, parent: Entity) -> Result<(), HierarchyError> {
        init_hierarchy(self);
        for e in [child, parent] {
            if !self.contains(e) {
                return Err(HierarchyError::NoSuchEntity(e));
            }
        }
        if closes_cycle(self, child, parent) {
            return Err(HierarchyError::Cycle { child, parent });
        }
        if self.parent_of(child) == Some(parent) {
            return Ok(());
        }
        // The hooks unlink the old parent and link the new one.
        self.insert_one(child, ChildOf(parent))?;
        Ok(())
    }

    fn remove_parent(&mut self, child: Entity) -> Result<Option<Entity>, HierarchyError> {
        init_hierarchy(self);
        if !self.contains(child) {
            return Err(HierarchyError::NoSuchEntity(child));
        }
        let Some(parent) = self.parent_of(child) else {
            return Ok(None);
        };
        make_root(self, child)?;
        Ok(Some(parent))
    }

    fn despawn_with(&mut self, entity: Entity, mode: DespawnMode) -> Result<usize, HierarchyError> {
        init_hierarchy(self);
        if !self.contains(entity) {
            return Err(HierarchyError::NoSuchEntity(entity));
        }
        match mode {
            DespawnMode::Subtree => {
                // Children before parents, so no despawn leaves orphans to
                // re-root. Lists kept by the hooks form a tree; lists that
                // name an entity twice (links written by hand can make them
                // loop) make the list longer than the world, and the walk
                // starts again, marking what it met.
                let mut order = vec![entity];
                let mut i = 0;
                while i < order.len() {
                    let e = order[i];
                    order.extend_from_slice(self.children_of(e));
                    if order.len() > self.len() as usize {
                        order = reached_once(self, entity);
                        break;
                    }
                    i += 1;
                }
                let mut despawned = 0;
                for &e in order.iter().rev() {
                    // A child despawned behind the hierarchy's back is
                    // simply skipped.
                    if self.despawn(e).is_ok() {
                        despawned += 1;
                    }
                }
                Ok(despawned)
            }
            DespawnMode::DetachChildren => {
                // The hooks make the children roots.
                self.despawn(entity)?;
                Ok(1)
            }
        }
    }

    fn parent_of(&self, entity: Entity) -> Option<Entity> {
        self.get::<ChildOf>(entity).ok().map(ChildOf::parent)
    }

    fn children_of(&self, entity: Entity) -> &[Entity] {
        self.get::<Children>(entity).map_or(&[], Children::as_slice)
    }
}

/// `entity` and every entity its `Children` lists reach, each once,
/// parents before children (for lists that are not a tree).
fn reached_once(world: &World, entity: Entity) -> Vec<Entity> {
    let mut order = vec![entity];
    let mut seen: std::collections::HashSet<Entity> = order.iter().copied().collect();
    let mut i = 0;
    while i < order.len() {
        for &c in world.children_of(order[i]) {
            if seen.insert(c) {
                order.push(c);
            }
        }
        i += 1;
    }
    order
}

/// Records a hierarchy error of a deferred command in [`HierarchyErrors`].
fn report(world: &mut World, result: Result<(), HierarchyError>) -> Result<(), StoreError> {
    match result {
        Ok(()) => Ok(()),
        Err(HierarchyError::NoSuchEntity(e)) => Err(StoreError::NoSuchEntity(e)),
        Err(HierarchyError::Store(e)) => Err(e),
        Err(error) => {
            push_errors(world, [error]);
            Ok(())
        }
    }
}

/// Deferred hierarchy edits for systems. Applied at the schedule's sync
/// point with the same rules as [`WorldHierarchyExt`]. A stale entity comes
/// back as the command's [`StoreError`]; a refused cycle, which the store's
/// error type cannot express, is recorded in the [`HierarchyErrors`]
/// resource.
pub trait CommandsHierarchyExt {
    /// Deferred [`WorldHierarchyExt::set_parent`].
    fn set_parent(&mut self, child: Entity, parent: Entity);
    /// Deferred [`WorldHierarchyExt::remove_parent`].
    fn remove_parent(&mut self, child: Entity);
    /// Deferred [`WorldHierarchyExt::despawn_with`].
    fn despawn_with(&mut self, entity: Entity, mode: DespawnMode);
}

impl CommandsHierarchyExt for Commands<'_, '_> {
    fn set_parent(&mut self, child: Entity, parent: Entity) {
        self.add(move |world: &mut World| {
            let result = world.set_parent(child, parent);
            report(world, result)
        });
    }

    fn remove_parent(&mut self, child: Entity) {
        self.add(move |world: &mut World| {
            let result = world.remove_parent(child).map(drop);
            report(world, result)
        });
    }

    fn despawn_with(&mut self, entity: Entity, mode: DespawnMode) {
        self.add(move |world: &mut World| {
            let result = world.despawn_with(entity, mode).map(drop);
            report(world, result)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ecs_core::CommandQueue;

    fn spawn(world: &mut World) -> Entity {
        world.spawn(crate::transform_bundle(LocalTransform::IDENTITY))
    }

    /// Transforms and a link to `parent`, for batches.
    fn child_bundle(parent: Entity) -> (LocalTransform, crate::GlobalTransform, ChildOf) {
        let (l, g) = crate::transform_bundle(LocalTransform::IDENTITY);
        (l, g, ChildOf(parent))
    }

    #[test]
    fn reparenting_moves_the_child_between_children_lists() {
        let mut world = World::new();
        let [a, b, c] = [(); 3].map(|_| spawn(&mut world));
        world.set_parent(c, a).unwrap();
        assert_eq!(world.children_of(a), &[c]);
        world.set_parent(c, b).unwrap();
        assert_eq!(world.children_of(a), &[] as &[Entity]);
        assert!(!world.has::<Children>(a).unwrap());
        assert_eq!(world.children_of(b), &[c]);
        assert_eq!(world.parent_of(c), Some(b));
        assert_eq!(world.remove_parent(c), Ok(Some(b)));
        assert_eq!(world.parent_of(c), None);
        assert!(!world.has::<Children>(b).unwrap());
        assert_eq!(world.remove_parent(c), Ok(None));
    }

    #[test]
    fn cycles_are_refused_and_change_nothing() {
        let mut world = World::new();
        let [a, b, c] = [(); 3].map(|_| spawn(&mut world));
        world.set_parent(b, a).unwrap();
        world.set_parent(c, b).unwrap();
        assert_eq!(world.set_parent(a, a), Err(HierarchyError::Cycle { child: a, parent: a }));
        assert_eq!(world.set_parent(a, c), Err(HierarchyError::Cycle { child: a, parent: c }));
        assert_eq!(world.set_parent(b, c), Err(HierarchyError::Cycle { child: b, parent: c }));
        assert_eq!(world.parent_of(a), None);
        assert_eq!(world.parent_of(b), Some(a));
        assert_eq!(world.children_of(b), &[c]);
        // Moving a node to a non-descendant is fine.
        world.set_parent(c, a).unwrap();
        assert_eq!(world.children_of(a), &[b, c]);
    }

    #[test]
    fn dead_entities_are_errors() {
        let mut world = World::new();
        let a = spawn(&mut world);
        let dead = spawn(&mut world);
        world.despawn(dead).unwrap();
        assert_eq!(world.set_parent(a, dead), Err(HierarchyError::NoSuchEntity(dead)));
        assert_eq!(world.set_parent(dead, a), Err(HierarchyError::NoSuchEntity(dead)));
        assert_eq!(world.despawn_with(dead, DespawnMode::Subtree), Err(HierarchyError::NoSuchEntity(dead)));
        assert!(!world.has::<Children>(a).unwrap());
    }

    #[test]
    fn despawn_detach_leaves_no_dangling_child_of() {
        let mut world = World::new();
        let [root, mid, leaf, other] = [(); 4].map(|_| spawn(&mut world));
        world.set_parent(mid, root).unwrap();
        world.set_parent(leaf, mid).unwrap();
        world.set_parent(other, root).unwrap();
        assert_eq!(world.despawn_with(mid, DespawnMode::DetachChildren), Ok(1));
        assert_eq!(world.parent_of(leaf), None);
        assert_eq!(world.children_of(root), &[other]);
        assert_eq!(world.despawn_with(root, DespawnMode::Subtree), Ok(2));
        assert!(world.contains(leaf));
        assert_eq!(world.len(), 1);
    }

    #[test]
    fn despawning_a_subtree_ends_on_lists_that_loop() {
        // r -> p -> c, then c's link written by hand to name `other`: p's
        // list still names c. Made c's child, p is then in c's list and c
        // in p's: the lists loop.
        let mut world = World::new();
        let [r, p, c, other] = [(); 4].map(|_| spawn(&mut world));
        world.set_parent(p, r).unwrap();
        world.set_parent(c, p).unwrap();
        world.get_mut::<ChildOf>(c).unwrap().0 = other;
        world.set_parent(p, c).unwrap();
        assert_eq!(world.children_of(p), &[c]);
        assert_eq!(world.children_of(c), &[p]);
        // Both reached, each despawned once.
        assert_eq!(world.despawn_with(p, DespawnMode::Subtree), Ok(2));
        assert!(!world.contains(c));
        assert!(world.contains(r) && world.contains(other));
        // A loop of links and lists through the entity (y's list copied
        // onto b): each despawned once.
        let [a, b, y] = [(); 3].map(|_| spawn(&mut world));
        world.set_parent(a, y).unwrap();
        world.set_parent(b, a).unwrap();
        world.get_mut::<ChildOf>(a).unwrap().0 = b;
        let list = world.get::<Children>(y).unwrap().clone();
        world.insert_one(b, list).unwrap();
        assert_eq!(world.children_of(b), &[a]);
        assert_eq!(world.despawn_with(a, DespawnMode::Subtree), Ok(2));
        assert!(!world.contains(b));
        assert!(world.contains(y));
    }

    #[test]
    fn deep_chains_do_not_overflow() {
        let mut world = World::new();
        let mut parent = spawn(&mut world);
        let root = parent;
        for _ in 0..10_000 {
            let child = spawn(&mut world);
            world.set_parent(child, parent).unwrap();
            parent = child;
        }
        assert!(matches!(world.set_parent(root, parent), Err(HierarchyError::Cycle { .. })));
        assert_eq!(world.despawn_with(root, DespawnMode::Subtree), Ok(10_001));
        assert!(world.is_empty());
    }

    #[test]
    fn commands_apply_and_record_cycles() {
        let mut world = World::new();
        let [a, b] = [(); 2].map(|_| spawn(&mut world));
        let mut queue = CommandQueue::default();
        {
            let mut commands = queue.commands(&world);
            commands.set_parent(b, a);
            commands.set_parent(a, b);
        }
        assert!(queue.apply(&mut world).is_empty());
        assert_eq!(world.parent_of(b), Some(a));
        assert_eq!(world.parent_of(a), None);
        let errors = world.resource::<HierarchyErrors>().unwrap();
        assert_eq!(errors.iter().cloned().collect::<Vec<_>>(), vec![HierarchyError::Cycle { child: a, parent: b }]);
        {
            let mut commands = queue.commands(&world);
            commands.despawn_with(a, DespawnMode::DetachChildren);
            commands.remove_parent(a);
        }
        assert_eq!(queue.apply(&mut world), vec![StoreError::NoSuchEntity(a)]);
        assert_eq!(world.parent_of(b), None);
    }

    /// A command queued by a hook runs while the world flushes, so the
    /// links its inserts queue wait until it returns.
    #[derive(Clone, Copy)]
    struct InsertsLinks(&'static [(usize, usize)]);
    impl ecs_core::Component for InsertsLinks {}

    struct Nodes(Vec<Entity>);

    fn insert_links(mut world: DeferredWorld<'_>, entity: Entity) {
        let Ok(&InsertsLinks(links)) = world.get::<InsertsLinks>(entity) else { return };
        world.commands().add(move |world: &mut World| {
            let nodes = world.resource::<Nodes>().unwrap().0.clone();
            for &(child, parent) in links {
                world.insert_one(nodes[child], ChildOf(nodes[parent]))?;
            }
            Ok(())
        });
    }

    /// A world with `n` nodes (in the `Nodes` resource) and the
    /// `InsertsLinks` hook.
    fn world_with_link_hook(n: usize) -> (World, Vec<Entity>) {
        let mut world = World::new();
        init_hierarchy(&mut world);
        world.register_component_hooks::<InsertsLinks>().on_insert(insert_links);
        let nodes: Vec<Entity> = (0..n).map(|_| spawn(&mut world)).collect();
        world.insert_resource(Nodes(nodes.clone()));
        (world, nodes)
    }

    #[test]
    fn a_link_written_twice_before_it_is_made_is_listed_once() {
        let (mut world, n) = world_with_link_hook(3);
        // Node 0 has no list yet: both inserts wait for one command.
        world.spawn((InsertsLinks(&[(1, 0), (1, 0), (2, 0), (1, 0)]),));
        // Listed once, where its last insert puts it (after node 2), as
        // if each insert had been linked at once.
        assert_eq!(world.children_of(n[0]), &[n[2], n[1]]);
        assert!(world.take_lifecycle_errors().is_empty());
        // Re-parented and back before the links are made: one entry, under
        // the parent named last.
        world.spawn((InsertsLinks(&[(1, 1), (1, 2), (2, 1), (1, 0)]),));
        assert_eq!(world.children_of(n[0]), &[n[1]]);
        assert_eq!(world.children_of(n[1]), &[n[2]]);
        world.spawn((InsertsLinks(&[(2, 0), (1, 2), (1, 0)]),));
        assert_eq!(world.children_of(n[0]), &[n[2], n[1]]);
        assert_eq!(world.children_of(n[1]), &[] as &[Entity]);
        assert_eq!(world.children_of(n[2]), &[] as &[Entity]);
        // An entry dropped for a later one is not linked, so the self-link
        // in between is not reported.
        assert!(world.resource::<HierarchyErrors>().is_none_or(HierarchyErrors::is_empty));
        assert_eq!(world.despawn_with(n[0], DespawnMode::Subtree), Ok(3));
        // The three hook carriers are left.
        assert_eq!(world.len(), 3);
    }

    #[test]
    fn links_made_later_keep_the_order_of_the_inserts() {
        let (mut world, n) = world_with_link_hook(5);
        world.set_parent(n[1], n[0]).unwrap();
        world.set_parent(n[4], n[3]).unwrap();
        // Node 3 has children, so its link waits (a cycle check); the leaf
        // 2 queued after it must not go first.
        world.spawn((InsertsLinks(&[(3, 0), (2, 0)]),));
        assert_eq!(world.children_of(n[0]), &[n[1], n[3], n[2]]);
        // A batch under a parent without a list: spawn order.
        let batch = world.spawn_batch((0..100).map(|_| child_bundle(n[4])));
        assert_eq!(world.children_of(n[4]), &batch[..]);
    }

    struct PanicOnInsert(bool);

    fn children_inserted(mut world: DeferredWorld<'_>, _: Entity) {
        if let Some(armed) = world.resource_mut::<PanicOnInsert>()
            && std::mem::take(&mut armed.0)
        {
            panic!("a user's hook on Children");
        }
    }

    #[test]
    fn a_panic_while_links_are_made_keeps_the_rest_for_the_next_link() {
        let mut world = World::new();
        init_hierarchy(&mut world);
        world.register_component_hooks::<Children>().on_insert(children_inserted);
        world.insert_resource(PanicOnInsert(true));
        let [p, q, x] = [(); 3].map(|_| spawn(&mut world));
        let batch = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            world.spawn_batch((0..10).map(|_| child_bundle(p)))
        }));
        assert!(batch.is_err());
        // The first link was made when the hook panicked; the others wait.
        assert_eq!(world.children_of(p).len(), 1);
        let kids: Vec<Entity> =
            world.query_filtered::<Entity, ()>().iter(&world).filter(|&e| world.parent_of(e) == Some(p)).collect();
        assert_eq!(kids.len(), 10);
        world.set_parent(x, q).unwrap();
        assert_eq!(world.children_of(p), &kids[..]);
        assert_eq!(world.children_of(q), &[x]);
        // Every link is made once: nothing is left over for later links.
        world.set_parent(x, p).unwrap();
        assert_eq!(world.children_of(p).len(), 11);
        assert_eq!(world.despawn_with(p, DespawnMode::Subtree), Ok(12));
        assert_eq!(world.len(), 1);
    }

    #[test]
    fn find_child_finds_every_entry_from_either_end() {
        let mut world = World::new();
        for n in 0..6 {
            let list: Vec<Entity> = (0..n).map(|_| spawn(&mut world)).collect();
            for (i, &e) in list.iter().enumerate() {
                assert_eq!(find_child(&list, e), Some(i));
            }
            let absent = spawn(&mut world);
            assert_eq!(find_child(&list, absent), None);
        }
    }

    #[test]
    fn a_big_parent_keeps_its_list_exact_through_links_and_removals() {
        let mut world = World::new();
        let root = spawn(&mut world);
        let mut model: Vec<Entity> = world.spawn_batch((0..3000).map(|_| child_bundle(root)));
        init_hierarchy(&mut world);
        assert_eq!(world.children_of(root), &model[..]);
        let more: Vec<Entity> = (0..1000).map(|_| spawn(&mut world)).collect();
        for &e in &more {
            world.set_parent(e, root).unwrap();
            model.push(e);
        }
        assert_eq!(world.children_of(root), &model[..]);
        // Removals from the front, the back and the middle, in a scrambled
        // order, some by despawn and some by re-linking to the same parent
        // (which moves the child to the end).
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for step in 0..1500 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let i = match step % 3 {
                0 => 0,
                1 => model.len() - 1,
                _ => (state % model.len() as u64) as usize,
            };
            let e = model.remove(i);
            if step % 5 == 0 {
                world.insert_one(e, ChildOf(root)).unwrap();
                model.push(e);
            } else {
                world.despawn(e).unwrap();
            }
        }
        assert_eq!(world.children_of(root), &model[..]);
    }
}
