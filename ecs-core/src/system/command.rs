//! Deferred commands: structural changes recorded while systems run (also
//! in parallel, each system into its own queue) and applied at sync points
//! with exclusive world access, in a deterministic order.

use crate::error::StoreError;
use crate::storage::bundle::Bundle;
use crate::storage::entity::Entity;
use crate::world::World;

pub(crate) type Command = Box<dyn FnOnce(&mut World) -> Result<(), StoreError> + Send + Sync>;

/// A queue of recorded commands.
#[derive(Default)]
pub struct CommandQueue {
    commands: Vec<Command>,
}

impl std::fmt::Debug for CommandQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandQueue").field("len", &self.commands.len()).finish()
    }
}

impl CommandQueue {
    /// A command recorder for this queue; `world` hands out entity handles
    /// for deferred spawns.
    pub fn commands<'w, 's>(&'s mut self, world: &'w World) -> Commands<'w, 's> {
        Commands { queue: self, world }
    }

    /// Moves every command of `other` to the end of this queue.
    pub fn append(&mut self, other: &mut CommandQueue) {
        self.commands.append(&mut other.commands);
    }

    /// Queues one command.
    pub(crate) fn push(&mut self, command: Command) {
        self.commands.push(command);
    }

    /// Recorded commands not yet applied.
    pub fn len(&self) -> usize {
        self.commands.len()
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    /// Applies every command in recording order. A command that fails (a
    /// stale entity, a missing component) changes nothing and its error is
    /// returned; the rest still apply.
    ///
    /// If a command panics (a destructor, or a closure from
    /// [`Commands::add`]), the world is left as the structural operation
    /// guarantees (see [`World::despawn`], [`World::insert`]) and the
    /// commands after it stay queued, in order, for the next `apply`.
    pub fn apply(&mut self, world: &mut World) -> Vec<StoreError> {
        /// Puts the commands not yet applied back when dropped (after a
        /// panic; on the normal path none are left).
        struct Requeue<'a> {
            queue: &'a mut Vec<Command>,
            rest: std::vec::IntoIter<Command>,
        }
        impl Drop for Requeue<'_> {
            fn drop(&mut self) {
                self.queue.extend(self.rest.by_ref());
            }
        }
        let rest = std::mem::take(&mut self.commands).into_iter();
        let mut pending = Requeue { queue: &mut self.commands, rest };
        let mut errors = Vec::new();
        for command in pending.rest.by_ref() {
            if let Err(e) = command(world) {
                errors.push(e);
            }
        }
        errors
    }
}

/// Records structural changes to apply later.
///
/// ```
/// use ecs_core::{CommandQueue, Component, World};
/// #[derive(Component)]
/// struct Hp(u32);
/// let mut world = World::new();
/// let mut queue = CommandQueue::default();
/// let e = queue.commands(&world).spawn((Hp(3),));
/// assert!(!world.contains(e)); // not yet
/// assert!(queue.apply(&mut world).is_empty());
/// assert_eq!(world.get::<Hp>(e).map(|h| h.0), Ok(3));
/// ```
pub struct Commands<'w, 's> {
    queue: &'s mut CommandQueue,
    world: &'w World,
}

impl Commands<'_, '_> {
    /// Spawns an entity when applied; its handle is valid right away.
    pub fn spawn<B: Bundle>(&mut self, bundle: B) -> Entity {
        let entity = self.world.reserve_entity();
        self.queue.commands.push(Box::new(move |world: &mut World| world.spawn_reserved(entity, bundle).map(drop)));
        entity
    }

    /// Despawns an entity when applied (an error if it is gone by then).
    pub fn despawn(&mut self, entity: Entity) {
        self.queue.commands.push(Box::new(move |world: &mut World| world.despawn(entity)));
    }

    /// Inserts components when applied.
    pub fn insert<B: Bundle>(&mut self, entity: Entity, bundle: B) {
        self.queue.commands.push(Box::new(move |world: &mut World| world.insert(entity, bundle)));
    }

    /// Removes (and drops) components when applied.
    pub fn remove<B: Bundle>(&mut self, entity: Entity) {
        self.queue.commands.push(Box::new(move |world: &mut World| world.remove::<B>(entity).map(drop)));
    }

    /// Triggers a global event when applied (see [`World::trigger`]).
    pub fn trigger<E: crate::lifecycle::Event>(&mut self, event: E) {
        self.queue.commands.push(Box::new(move |world: &mut World| {
            world.trigger(event);
            Ok(())
        }));
    }

    /// Triggers an event at `target` when applied (see
    /// [`World::trigger_targets`]).
    pub fn trigger_targets<E: crate::lifecycle::Event>(&mut self, event: E, target: Entity) {
        self.queue.commands.push(Box::new(move |world: &mut World| {
            world.trigger_targets(event, target);
            Ok(())
        }));
    }

    /// Runs arbitrary code with exclusive world access when applied.
    pub fn add(&mut self, command: impl FnOnce(&mut World) -> Result<(), StoreError> + Send + Sync + 'static) {
        self.queue.commands.push(Box::new(command));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(crate::Component, Debug, PartialEq)]
    struct Hp(u32);
    #[derive(crate::Component, Debug, PartialEq)]
    struct Armour(u8);

    #[test]
    fn stale_commands_are_reported_not_applied_to_a_new_owner() {
        let mut world = World::new();
        let old = world.spawn((Hp(1),));
        let mut queue = CommandQueue::default();
        queue.commands(&world).insert(old, (Hp(9),));
        world.despawn(old).unwrap();
        let reuser = world.spawn((Hp(2),));
        assert_eq!(reuser.index(), old.index());
        let errors = queue.apply(&mut world);
        assert_eq!(errors, vec![StoreError::NoSuchEntity(old)]);
        assert_eq!(world.get::<Hp>(reuser), Ok(&Hp(2)));
    }

    #[test]
    fn spawns_keep_their_reserved_handles_in_order() {
        let mut world = World::new();
        let mut queue = CommandQueue::default();
        let mut c = queue.commands(&world);
        let a = c.spawn((Hp(1),));
        let b = c.spawn((Hp(2),));
        c.insert(a, Armour(5));
        c.despawn(b);
        // Direct spawns in between do not take the reserved indices.
        let direct = world.spawn((Hp(3),));
        assert!(direct != a && direct != b);
        assert!(queue.apply(&mut world).is_empty());
        assert_eq!(world.get::<Armour>(a), Ok(&Armour(5)));
        assert!(!world.contains(b));
        assert_eq!(world.len(), 2);
    }
}
