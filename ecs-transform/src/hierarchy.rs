//! Building and tearing down hierarchies so that [`ChildOf`] and
//! [`Children`] stay consistent.
//!
//! Every change goes through [`WorldHierarchyExt`] (immediate, with
//! `&mut World`) or [`CommandsHierarchyExt`] (deferred, from systems):
//!
//! - `set_parent` attaches or moves a child; a link that would close a cycle
//!   is refused with [`HierarchyError::Cycle`] and nothing changes.
//! - `remove_parent` makes a child a root again.
//! - `despawn_with` removes an entity and, by [`DespawnMode`], its whole
//!   subtree or nothing more (its children become roots). No `ChildOf` is
//!   left pointing at a despawned entity.
//!
//! All walks are iterative (explicit stacks), so a chain 10 000 deep is fine.
//! Each edit stamps what propagation needs to see: a new or moved link
//! stamps the child's `ChildOf` (added or changed), a detached entity has
//! its `LocalTransform` marked changed, so the next propagation recomputes
//! the entity and, through it, its subtree.

use ecs_core::{Commands, Entity, StoreError, World};
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
/// let [a, b, c] = [(); 3].map(|_| world.spawn(()).unwrap());
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

/// Removes `child` from `parent`'s children, dropping the component with
/// the last child. A dead or childless parent is left alone.
fn unlink(world: &mut World, parent: Entity, child: Entity) -> Result<(), StoreError> {
    let now_empty = match world.get_mut::<Children>(parent) {
        Ok(mut children) => {
            if let Some(i) = children.0.iter().position(|&c| c == child) {
                children.0.remove(i);
            }
            children.0.is_empty()
        }
        Err(_) => return Ok(()),
    };
    if now_empty {
        world.remove_one::<Children>(parent)?;
    }
    Ok(())
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
        for e in [child, parent] {
            if !self.contains(e) {
                return Err(HierarchyError::NoSuchEntity(e));
            }
        }
        // Walk up from the new parent; meeting `child` means a cycle. A
        // child without children is nobody's ancestor, so only `parent ==
        // child` can close a cycle then (building a chain stays linear). The
        // step bound keeps a corrupted store (impossible through this API)
        // from hanging the walk.
        if parent == child {
            return Err(HierarchyError::Cycle { child, parent });
        }
        let is_leaf = !self.has::<Children>(child).unwrap_or(false);
        let mut ancestor = if is_leaf { None } else { Some(parent) };
        let mut steps = 0u64;
        while let Some(a) = ancestor {
            if a == child || steps > u64::from(self.len()) {
                return Err(HierarchyError::Cycle { child, parent });
            }
            ancestor = self.parent_of(a);
            steps += 1;
        }
        let old = self.parent_of(child);
        if old == Some(parent) {
            return Ok(());
        }
        if let Some(old) = old {
            unlink(self, old, child)?;
        }
        self.insert_one(child, ChildOf(parent))?;
        match self.get_mut::<Children>(parent) {
            Ok(mut children) => children.0.push(child),
            Err(_) => self.insert_one(parent, Children(smallvec![child]))?,
        }
        Ok(())
    }

    fn remove_parent(&mut self, child: Entity) -> Result<Option<Entity>, HierarchyError> {
        if !self.contains(child) {
            return Err(HierarchyError::NoSuchEntity(child));
        }
        let Some(parent) = self.parent_of(child) else {
            return Ok(None);
        };
        unlink(self, parent, child)?;
        make_root(self, child)?;
        Ok(Some(parent))
    }

    fn despawn_with(&mut self, entity: Entity, mode: DespawnMode) -> Result<usize, HierarchyError> {
        if !self.contains(entity) {
            return Err(HierarchyError::NoSuchEntity(entity));
        }
        if let Some(parent) = self.parent_of(entity) {
            unlink(self, parent, entity)?;
        }
        match mode {
            DespawnMode::Subtree => {
                let mut stack = vec![entity];
                let mut despawned = 0;
                while let Some(e) = stack.pop() {
                    stack.extend_from_slice(self.children_of(e));
                    // A child despawned behind the hierarchy's back is
                    // simply skipped.
                    if self.despawn(e).is_ok() {
                        despawned += 1;
                    }
                }
                Ok(despawned)
            }
            DespawnMode::DetachChildren => {
                let children = self.children_of(entity).to_vec();
                for child in children {
                    if self.contains(child) {
                        make_root(self, child)?;
                    }
                }
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
            if !world.contains_resource::<HierarchyErrors>() {
                world.insert_resource(HierarchyErrors::default());
            }
            if let Some(errors) = world.resource_mut::<HierarchyErrors>() {
                errors.0.push(error);
            }
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
        world.spawn(crate::transform_bundle(LocalTransform::IDENTITY)).unwrap()
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
