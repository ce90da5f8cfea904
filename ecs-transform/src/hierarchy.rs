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

use ecs_core::{Commands, DeferredWorld, Entity, FromWorld, StoreError, World};
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
    /// root until it is given a new parent or made a root.
    DanglingParent {
        /// The entity with the broken link.
        child: Entity,
        /// The dead parent it names.
        parent: Entity,
    },
    /// Found by propagation: the [`ChildOf`] links above `entity` loop (a
    /// link copied by hand, not made by [`WorldHierarchyExt::set_parent`]).
    /// The entities on and below the loop are not propagated.
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
    /// Despawn the entity and every descendant.
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
/// after a schedule run.
#[derive(Debug, Default)]
pub struct HierarchyErrors(pub Vec<HierarchyError>);

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

/// Marks that the hierarchy hooks are registered in a world.
struct HierarchyHooks;

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
    world.insert_resource(HierarchyHooks);
    world.register_component_hooks::<ChildOf>().on_insert(child_linked).on_replace(child_unlinked);
    world.register_component_hooks::<Children>().on_remove(parent_removed);
    // Repair: every live link, in entity order, becomes a list entry.
    let mut links = world.query::<(Entity, &ChildOf)>();
    let pairs: Vec<(Entity, Entity)> = links.iter(world).map(|(e, c)| (e, c.0)).collect();
    let mut lists = world.query::<&mut Children>();
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
        push_error(world, error);
        return;
    }
    match world.get_mut::<Children>(parent) {
        Ok(mut children) => {
            if !children.0.contains(&child) {
                children.0.push(child);
            }
        }
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

fn push_error(world: &mut World, error: HierarchyError) {
    if !world.contains_resource::<HierarchyErrors>() {
        world.insert_resource(HierarchyErrors::default());
    }
    if let Some(errors) = world.resource_mut::<HierarchyErrors>() {
        errors.0.push(error);
    }
}

/// Removes the `Children` components that lost their last child.
fn drop_empty_lists(world: &mut World) {
    let mut lists = world.query::<(Entity, &Children)>();
    let empty: Vec<Entity> = lists.iter(world).filter(|(_, c)| c.0.is_empty()).map(|(e, _)| e).collect();
    for e in empty {
        let _ = world.remove_one::<Children>(e);
    }
}

/// `ChildOf` was written: link the child to its parent. The parent's list
/// may need a structural change, so the link is a deferred command (it runs
/// as soon as the operation completes).
fn child_linked(mut world: DeferredWorld<'_>, child: Entity) {
    let Ok(&ChildOf(parent)) = world.get::<ChildOf>(child) else { return };
    // The common case (a leaf joins a parent that has children) needs no
    // structural change and no cycle walk.
    let leaf = child != parent && world.get::<Children>(child).is_err();
    if leaf && let Ok(mut children) = world.get_mut::<Children>(parent) {
        if !children.0.contains(&child) {
            children.0.push(child);
        }
        return;
    }
    world.commands().add(move |world: &mut World| {
        // Still the same link by the time it runs?
        if world.get::<ChildOf>(child).is_ok_and(|c| c.0 == parent) {
            link(world, child, parent);
        }
        Ok(())
    });
}

/// `ChildOf` is about to be replaced or removed: take the child out of its
/// old parent's list (dropping the list with its last child, deferred).
fn child_unlinked(mut world: DeferredWorld<'_>, child: Entity) {
    let Ok(&ChildOf(parent)) = world.get::<ChildOf>(child) else { return };
    let now_empty = match world.get_mut::<Children>(parent) {
        Ok(mut children) => {
            if let Some(i) = children.0.iter().position(|&c| c == child) {
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
                // re-root.
                let mut order = vec![entity];
                let mut i = 0;
                while i < order.len() {
                    let e = order[i];
                    order.extend_from_slice(self.children_of(e));
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

/// Records a hierarchy error of a deferred command in [`HierarchyErrors`].
fn report(world: &mut World, result: Result<(), HierarchyError>) -> Result<(), StoreError> {
    match result {
        Ok(()) => Ok(()),
        Err(HierarchyError::NoSuchEntity(e)) => Err(StoreError::NoSuchEntity(e)),
        Err(HierarchyError::Store(e)) => Err(e),
        Err(error) => {
            push_error(world, error);
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
        assert_eq!(errors.0, vec![HierarchyError::Cycle { child: a, parent: b }]);
        {
            let mut commands = queue.commands(&world);
            commands.despawn_with(a, DespawnMode::DetachChildren);
            commands.remove_parent(a);
        }
        assert_eq!(queue.apply(&mut world), vec![StoreError::NoSuchEntity(a)]);
        assert_eq!(world.parent_of(b), None);
    }
}
