//! Deferred commands: structural changes recorded while systems run (also
//! in parallel, each system into its own queue) and applied at sync points
//! with exclusive world access, in a deterministic order.

use crate::error::StoreError;
use crate::storage::bundle::Bundle;
use crate::storage::entity::Entity;
use crate::world::World;

/// The header of one recorded command in a [`CommandQueue`]'s bytes; the
/// command's closure follows it.
#[derive(Clone, Copy)]
struct Header {
    /// Moves the closure out of the bytes at the pointer and calls it with
    /// the world, or drops it when there is no world.
    run: unsafe fn(*mut u8, Option<&mut World>) -> Result<(), StoreError>,
    /// The closure's size in bytes.
    size: usize,
}

const HEADER: usize = size_of::<Header>();

/// Moves the `F` written at `payload` out and calls it with `world`, or
/// drops it when there is none.
///
/// # Safety
/// `payload` holds an `F` written by [`CommandQueue::push`] (unaligned) that
/// was not moved out yet; after this call it is moved out.
unsafe fn run_command<F>(payload: *mut u8, world: Option<&mut World>) -> Result<(), StoreError>
where
    F: FnOnce(&mut World) -> Result<(), StoreError>,
{
    // SAFETY: the caller's contract: an `F` lives at `payload`, possibly
    // unaligned, and is read (moved out) once.
    let command = unsafe { payload.cast::<F>().read_unaligned() };
    match world {
        Some(world) => command(world),
        None => {
            drop(command);
            Ok(())
        }
    }
}

/// The header of the record starting at `at` and a pointer to its
/// closure, which follows the header.
///
/// # Safety
/// A record written by [`CommandQueue::push`] starts at `at` in `bytes`.
unsafe fn record_at(bytes: &mut [std::mem::MaybeUninit<u8>], at: usize) -> (Header, *mut u8) {
    // SAFETY: the caller's contract: a header, then the closure's bytes,
    // lie at `at` inside `bytes`; the header is read unaligned.
    unsafe {
        let record = bytes.as_mut_ptr().add(at).cast::<u8>();
        (record.cast::<Header>().read_unaligned(), record.add(HEADER))
    }
}

/// A queue of recorded commands.
///
/// The commands are stored back to back in one byte buffer (a header with
/// the command's entry point, then its closure), not boxed one by one: a
/// system recording thousands of spawns makes no allocation per command,
/// and the buffer is reused from one apply to the next.
#[derive(Default)]
pub struct CommandQueue {
    /// Records: a [`Header`] then the closure's bytes, both unaligned.
    bytes: Vec<std::mem::MaybeUninit<u8>>,
    /// How many records `bytes` holds.
    len: usize,
}

impl std::fmt::Debug for CommandQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandQueue").field("len", &self.len).finish()
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
        self.bytes.extend_from_slice(&other.bytes);
        self.len += other.len;
        // The closures now belong to this queue's bytes.
        other.bytes.clear();
        other.len = 0;
    }

    /// Queues one command. The `Send + Sync` bound is what makes the queue
    /// (whose bytes hold the closures) `Send + Sync`.
    pub(crate) fn push<F>(&mut self, command: F)
    where
        F: FnOnce(&mut World) -> Result<(), StoreError> + Send + Sync + 'static,
    {
        let header = Header { run: run_command::<F>, size: size_of::<F>() };
        let at = self.bytes.len();
        let total = HEADER + size_of::<F>();
        self.bytes.reserve(total);
        // SAFETY: `reserve` made room for `total` bytes after `at`; both
        // values are written unaligned into that room (the buffer is bytes)
        // and the length then covers them. The closure is moved into the
        // bytes (not dropped here): `run_command::<F>` moves it out once,
        // when it is applied or when the queue drops it.
        unsafe {
            let p = self.bytes.as_mut_ptr().add(at).cast::<u8>();
            p.cast::<Header>().write_unaligned(header);
            p.add(HEADER).cast::<F>().write_unaligned(command);
            self.bytes.set_len(at + total);
        }
        self.len += 1;
    }

    /// Recorded commands not yet applied.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.len == 0
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
        /// The records being applied; on drop (normal or unwinding) the
        /// ones not applied yet go back to the front of the queue and the
        /// buffer is kept for reuse.
        struct Applying<'a> {
            queue: &'a mut CommandQueue,
            bytes: Vec<std::mem::MaybeUninit<u8>>,
            /// Where the next record starts; records before it were moved
            /// out.
            cursor: usize,
            left: usize,
        }
        impl Drop for Applying<'_> {
            fn drop(&mut self) {
                let rest = &self.bytes[self.cursor..];
                if !rest.is_empty() || !self.queue.bytes.is_empty() {
                    // After a panic: the records not applied, then whatever
                    // was queued meanwhile, in order.
                    let mut bytes = Vec::with_capacity(rest.len() + self.queue.bytes.len());
                    bytes.extend_from_slice(rest);
                    bytes.extend_from_slice(&self.queue.bytes);
                    self.queue.bytes = bytes;
                } else {
                    // Every record was moved out: keep the allocation.
                    self.bytes.clear();
                    self.queue.bytes = std::mem::take(&mut self.bytes);
                }
                self.queue.len += self.left;
            }
        }
        let bytes = std::mem::take(&mut self.bytes);
        let left = std::mem::take(&mut self.len);
        let mut applying = Applying { queue: self, bytes, cursor: 0, left };
        let mut errors = Vec::new();
        while applying.cursor < applying.bytes.len() {
            // SAFETY: records are written back to back by `push`, and
            // `cursor` moves from one to the next.
            let (header, closure) = unsafe { record_at(&mut applying.bytes, applying.cursor) };
            // Consumed before it runs: a panicking command is not run again.
            applying.cursor += HEADER + header.size;
            applying.left -= 1;
            // SAFETY: `closure` is the one `header.run` was made for, not
            // moved out yet (the cursor passes each record once).
            let result = unsafe { (header.run)(closure, Some(world)) };
            if let Err(e) = result {
                errors.push(e);
            }
        }
        errors
    }
}

impl Drop for CommandQueue {
    /// Drops the closures of the commands never applied (what they
    /// captured: bundles, events). If one of those destructors panics, the
    /// closures after it are still dropped while the panic unwinds, as
    /// `std`'s collections drop their elements.
    fn drop(&mut self) {
        let bytes = &mut self.bytes;
        let mut at = 0;
        crate::storage::unwind::for_each_finishing(0..self.len, |_| {
            // SAFETY: the queue holds `len` records back to back and `at`
            // moves past each before its closure is dropped, so each is
            // dropped once, also after a panicking one.
            unsafe {
                let (header, closure) = record_at(bytes, at);
                at += HEADER + header.size;
                let _ = (header.run)(closure, None);
            }
        });
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
        self.queue.push(move |world: &mut World| world.spawn_reserved(entity, bundle).map(drop));
        entity
    }

    /// Despawns an entity when applied (an error if it is gone by then).
    pub fn despawn(&mut self, entity: Entity) {
        self.queue.push(move |world: &mut World| world.despawn(entity));
    }

    /// Inserts components when applied.
    pub fn insert<B: Bundle>(&mut self, entity: Entity, bundle: B) {
        self.queue.push(move |world: &mut World| world.insert(entity, bundle));
    }

    /// Removes (and drops) components when applied.
    pub fn remove<B: Bundle>(&mut self, entity: Entity) {
        self.queue.push(move |world: &mut World| world.remove::<B>(entity).map(drop));
    }

    /// Triggers a global event when applied (see [`World::trigger`]).
    pub fn trigger<E: crate::lifecycle::Event>(&mut self, event: E) {
        self.queue.push(move |world: &mut World| {
            world.trigger(event);
            Ok(())
        });
    }

    /// Triggers an event at `target` when applied (see
    /// [`World::trigger_targets`]).
    pub fn trigger_targets<E: crate::lifecycle::Event>(&mut self, event: E, target: Entity) {
        self.queue.push(move |world: &mut World| {
            world.trigger_targets(event, target);
            Ok(())
        });
    }

    /// Runs arbitrary code with exclusive world access when applied.
    pub fn add(&mut self, command: impl FnOnce(&mut World) -> Result<(), StoreError> + Send + Sync + 'static) {
        self.queue.push(command);
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
