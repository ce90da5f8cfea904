//! Entity groups: random access to many entities' rows, in parallel, group
//! by group.
//!
//! [`Query::get_mut`](crate::Query::get_mut) finds an entity's row from scratch on every call (the
//! entity table, the archetype's column cache, the chunk's column pointers)
//! and, taking `&mut self`, serves one entity at a time. Code that visits
//! the same set of entities every frame in a known order (the nodes of a
//! transform hierarchy, parents before children) can do better:
//!
//! - [`EntityGroups`] holds entities split into groups, no entity in two
//!   groups (checked when a group is added), with each entity's last known
//!   location cached;
//! - [`Query::par_for_each_group_mut`](crate::Query::par_for_each_group_mut) runs one task per selected group on
//!   rayon; each task reads and writes its own group's rows through
//!   [`GroupRows::get_mut`], which trusts the cached location only after
//!   checking that the row still holds the entity (a moved entity is found
//!   through the entity table instead), and reuses the chunk's column
//!   pointers while consecutive rows share a chunk.
//!
//! Because groups are disjoint and every access is checked against the row's
//! entity, two tasks never reach the same row. Writes mark rows exactly as
//! any `Mut<T>` does; chunk ticks are stamped once per chunk visit.
//!
//! ```
//! use ecs_core::{Component, EntityGroups, Query, Schedule, World};
//!
//! #[derive(Component, Debug, PartialEq)]
//! struct Pos(f32);
//!
//! let mut world = World::new();
//! let entities = world.spawn_batch((0..6).map(|i| (Pos(i as f32),)));
//! let mut groups = EntityGroups::new();
//! groups.push_group(&entities[..3]).unwrap();
//! groups.push_group(&entities[3..]).unwrap();
//! // An entity in two groups is refused.
//! assert_eq!(groups.push_group(&entities[2..4]), Err(entities[2]));
//!
//! world.insert_resource(groups);
//! let mut schedule = Schedule::new();
//! schedule.add_systems(|mut q: Query<&mut Pos>, groups: ecs_core::Res<EntityGroups>| {
//!     // Group 1 only: each row becomes the sum of the rows before it.
//!     q.par_for_each_group_mut(&groups, &[1], || (), |_, rows| {
//!         let mut sum = 0.0;
//!         for k in 0..rows.len() {
//!             let mut pos = rows.get_mut(k).unwrap();
//!             sum += pos.0;
//!             pos.0 = sum;
//!         }
//!     });
//! });
//! schedule.run(&mut world).unwrap();
//! let values: Vec<f32> = entities.iter().map(|&e| world.get::<Pos>(e).unwrap().0).collect();
//! assert_eq!(values, [0.0, 1.0, 2.0, 3.0, 7.0, 12.0]);
//! ```

use crate::query::fetch::QueryData;
use crate::query::filter::QueryFilter;
use crate::query::{QueryError, QueryState};
use crate::storage::archetype::ArchetypeId;
use crate::storage::entity::{Entity, EntityLocation};
use crate::storage::tick::TickWindow;
use crate::world::World;

/// A location no entity has: forces a lookup on first access.
const UNKNOWN: EntityLocation = EntityLocation { archetype: ArchetypeId(u32::MAX), chunk: 0, row: 0 };

/// Entities split into groups, no entity in two groups, with their last
/// known locations. See the [module docs](self).
#[derive(crate::Component, Debug, Default, Clone)]
pub struct EntityGroups {
    pub(crate) entities: Vec<Entity>,
    pub(crate) locations: Vec<EntityLocation>,
    /// `starts[g]..ends[g]` are group `g`'s entities (an empty range for a
    /// retired group, whose positions stay reserved until [`EntityGroups::clear`]).
    pub(crate) starts: Vec<u32>,
    pub(crate) ends: Vec<u32>,
    /// The entity indices held by some group.
    taken: Taken,
}

/// The set of entity indices held by some group: a bitset while the
/// largest index is small next to the number of entities held, a hash set
/// beyond that, so memory stays proportional to the entities held whatever
/// their indices (one handle with index `u32::MAX - 1` costs one entry, not
/// 512 MiB).
#[derive(Debug, Clone)]
enum Taken {
    Bits(Vec<u64>),
    Set(std::collections::HashSet<u32>),
}

impl Default for Taken {
    fn default() -> Self {
        Taken::Bits(Vec::new())
    }
}

/// Bitset words allowed for `held` entities: 64 words (4096 indices) plus
/// two words per entity held, i.e. at most 16 bytes per entity.
fn bitset_word_limit(held: usize) -> usize {
    64 + 2 * held
}

impl Taken {
    /// Makes room for indices below `max_index + 1` when `held` entities
    /// will be held, switching to a hash set when a bitset would be too large.
    fn prepare(&mut self, max_index: u32, held: usize) {
        if let Taken::Bits(bits) = self {
            let needed = max_index as usize / 64 + 1;
            if needed <= bitset_word_limit(held) {
                if bits.len() < needed {
                    bits.resize(needed, 0);
                }
            } else {
                let mut set = std::collections::HashSet::with_capacity(held);
                for (w, &word) in bits.iter().enumerate() {
                    let mut word = word;
                    while word != 0 {
                        set.insert((w * 64) as u32 + word.trailing_zeros());
                        word &= word - 1;
                    }
                }
                *self = Taken::Set(set);
            }
        }
    }

    /// Adds `index`; false if it was already there. [`Taken::prepare`] made
    /// room for it.
    fn insert(&mut self, index: u32) -> bool {
        match self {
            Taken::Bits(bits) => {
                let (word, bit) = (index as usize / 64, 1u64 << (index % 64));
                let fresh = bits[word] & bit == 0;
                bits[word] |= bit;
                fresh
            }
            Taken::Set(set) => set.insert(index),
        }
    }

    fn remove(&mut self, index: u32) {
        match self {
            Taken::Bits(bits) => bits[index as usize / 64] &= !(1u64 << (index % 64)),
            Taken::Set(set) => {
                set.remove(&index);
            }
        }
    }
}

impl EntityGroups {
    /// No groups.
    pub fn new() -> Self {
        EntityGroups::default()
    }

    /// Removes every group.
    pub fn clear(&mut self) {
        match &mut self.taken {
            Taken::Bits(bits) => {
                for &e in &self.entities {
                    bits[e.index() as usize / 64] = 0;
                }
            }
            Taken::Set(_) => self.taken = Taken::default(),
        }
        self.entities.clear();
        self.locations.clear();
        self.starts.clear();
        self.ends.clear();
    }

    /// Adds a group and returns its index. Refuses, adding nothing, a group
    /// naming an entity (by slot index) that is already in a group or twice
    /// in this one, returning that entity.
    ///
    /// Memory grows with the number of entities held, never with their
    /// indices. A handle the world never issued (or one despawned since) is
    /// accepted here and reported as [`QueryError::NoSuchEntity`] by
    /// [`GroupRows::get_mut`].
    pub fn push_group(&mut self, entities: &[Entity]) -> Result<usize, Entity> {
        if let Some(max_index) = entities.iter().map(|e| e.index()).max() {
            self.taken.prepare(max_index, self.entities.len() + entities.len());
        }
        for (i, &e) in entities.iter().enumerate() {
            if !self.taken.insert(e.index()) {
                for &undo in &entities[..i] {
                    self.taken.remove(undo.index());
                }
                return Err(e);
            }
        }
        self.starts.push(self.entities.len() as u32);
        self.entities.extend_from_slice(entities);
        self.locations.resize(self.entities.len(), UNKNOWN);
        self.ends.push(self.entities.len() as u32);
        Ok(self.starts.len() - 1)
    }

    /// Empties group `group`: its entities leave it (and may join a group
    /// pushed later), while the group keeps its index and its positions
    /// stay reserved, so every other group's [`EntityGroups::group_start`]
    /// and the per-entity side data of
    /// [`Query::par_for_each_group_with`](crate::Query::par_for_each_group_with)
    /// keep their places. [`EntityGroups::clear`] frees the positions.
    ///
    /// ```
    /// use ecs_core::{Component, EntityGroups, World};
    /// #[derive(Component)]
    /// struct Pos(f32);
    /// let mut world = World::new();
    /// let e = world.spawn_batch((0..4).map(|i| (Pos(i as f32),)));
    /// let mut groups = EntityGroups::new();
    /// groups.push_group(&e[..2]).unwrap();
    /// groups.push_group(&e[2..]).unwrap();
    /// groups.retire_group(0);
    /// assert!(groups.group(0).is_empty());
    /// // Its entities are free again; the positions are not reused.
    /// assert_eq!(groups.push_group(&e[..1]), Ok(2));
    /// assert_eq!(groups.group_start(2), 4);
    /// assert_eq!(groups.entity_count(), 5);
    /// ```
    ///
    /// # Panics
    /// If `group >= self.len()`.
    pub fn retire_group(&mut self, group: usize) {
        let (start, end) = (self.starts[group] as usize, self.ends[group] as usize);
        for &e in &self.entities[start..end] {
            self.taken.remove(e.index());
        }
        self.ends[group] = self.starts[group];
    }

    /// Frees the positions reserved by retired groups: every group's
    /// entities (and cached locations) move down to close the gaps, in
    /// order, so group `g` keeps its index and its entities' order, and
    /// [`EntityGroups::entity_count`] becomes the number of entities held.
    /// Callers holding per-position side data move it the same way: group
    /// `g`'s part starts at the new [`EntityGroups::group_start`]`(g)`.
    ///
    /// ```
    /// use ecs_core::{Component, EntityGroups, World};
    /// #[derive(Component)]
    /// struct Pos(f32);
    /// let mut world = World::new();
    /// let e = world.spawn_batch((0..5).map(|i| (Pos(i as f32),)));
    /// let mut groups = EntityGroups::new();
    /// groups.push_group(&e[..2]).unwrap();
    /// groups.push_group(&e[2..4]).unwrap();
    /// groups.push_group(&e[4..]).unwrap();
    /// groups.retire_group(1);
    /// assert_eq!((groups.entity_count(), groups.group_start(2)), (5, 4));
    /// groups.compact();
    /// assert_eq!((groups.entity_count(), groups.group_start(2)), (3, 2));
    /// assert_eq!(groups.group(2), &e[4..]);
    /// ```
    pub fn compact(&mut self) {
        let mut next = 0usize;
        for g in 0..self.starts.len() {
            let (start, end) = (self.starts[g] as usize, self.ends[g] as usize);
            self.entities.copy_within(start..end, next);
            self.locations.copy_within(start..end, next);
            self.starts[g] = next as u32;
            next += end - start;
            self.ends[g] = next as u32;
        }
        self.entities.truncate(next);
        self.locations.truncate(next);
    }

    /// Number of groups (retired ones included).
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// Whether there are no groups.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Positions in all groups: the entities they hold, plus the reserved
    /// positions of retired groups.
    pub fn entity_count(&self) -> usize {
        self.entities.len()
    }

    /// The entities of group `group`, in the order they were added.
    ///
    /// # Panics
    /// If `group >= self.len()`.
    pub fn group(&self, group: usize) -> &[Entity] {
        &self.entities[self.starts[group] as usize..self.ends[group] as usize]
    }

    /// Where group `group` starts among all groups' entities (group `g`'s
    /// `k`-th entity is entity number `group_start(g) + k` overall).
    ///
    /// # Panics
    /// If `group >= self.len()`.
    pub fn group_start(&self, group: usize) -> usize {
        self.starts[group] as usize
    }

    /// The cached location of every entity in all groups, in order (entity
    /// `group_start(g) + k` is group `g`'s `k`-th): where each entity was
    /// when [`EntityGroups::update_locations`] last ran, or
    /// [`ArchetypeId`]`(u32::MAX)` for one never located (or despawned by
    /// then). A location may be stale: the entity may have moved since, and
    /// [`GroupRows::get_mut`] checks it against the row before use. Code
    /// that walks the groups can compare them, e.g. to find which entities
    /// share a chunk, without a lookup in the world.
    ///
    /// ```
    /// use ecs_core::{Component, EntityGroups, World};
    /// #[derive(Component)]
    /// struct Pos(f32);
    /// let mut world = World::new();
    /// let entities = world.spawn_batch((0..3).map(|i| (Pos(i as f32),)));
    /// let mut groups = EntityGroups::new();
    /// groups.push_group(&entities).unwrap();
    /// groups.update_locations(&world);
    /// for (&e, loc) in groups.entities().iter().zip(groups.locations()) {
    ///     assert_eq!(world.location(e).unwrap(), *loc);
    /// }
    /// ```
    pub fn locations(&self) -> &[EntityLocation] {
        &self.locations
    }

    /// The entities of all groups, in order (group `g` is
    /// `group_start(g)..group_start(g) + group(g).len()` of it; a retired
    /// group's reserved positions still show the entities it held).
    pub fn entities(&self) -> &[Entity] {
        &self.entities
    }

    /// Caches the current location of every entity (done lazily by access
    /// anyway: a stale location costs one entity-table lookup per access).
    pub fn update_locations(&mut self, world: &World) {
        self.update_locations_from(world, 0);
    }

    /// Caches the current location of the entities of group `first_group`
    /// and every group after it (the groups pushed since some point),
    /// leaving the others' cached locations as they are.
    ///
    /// # Panics
    /// If `first_group > self.len()`.
    pub fn update_locations_from(&mut self, world: &World, first_group: usize) {
        assert!(first_group <= self.len(), "group {first_group} of {}", self.len());
        let from = self.starts.get(first_group).map_or(self.entities.len(), |&s| s as usize);
        for (loc, &e) in self.locations[from..].iter_mut().zip(&self.entities[from..]) {
            *loc = world.location(e).unwrap_or(UNKNOWN);
        }
    }
}

/// The chunk a [`GroupRows`] fetched last: its column pointers and the
/// chunk marks its items record into.
struct Current<'w, Q: QueryData> {
    archetype: ArchetypeId,
    chunk: u32,
    /// The chunk's entity column.
    entities: &'w [Entity],
    fetch: Q::Fetch<'w>,
    marks: Q::Marks,
}

/// One group's rows inside [`Query::par_for_each_group_mut`](crate::Query::par_for_each_group_mut): entity `k` of
/// the group is reached with [`GroupRows::get_mut`].
pub struct GroupRows<'w, Q: QueryData + 'static, F: QueryFilter + 'static> {
    world: &'w World,
    state: &'w QueryState<Q, F>,
    entities: &'w [Entity],
    locations: &'w [EntityLocation],
    group: usize,
    window: TickWindow,
    current: Option<Current<'w, Q>>,
}

impl<Q: QueryData + 'static, F: QueryFilter + 'static> Drop for GroupRows<'_, Q, F> {
    /// Stamps the chunk ticks of the rows written in the current chunk, so
    /// a panic in the task's closure leaves no row tick newer than its
    /// chunk tick.
    fn drop(&mut self) {
        self.flush();
    }
}

impl<'w, Q: QueryData + 'static, F: QueryFilter + 'static> GroupRows<'w, Q, F> {
    /// One group's rows, no chunk fetched yet.
    pub(crate) fn new(
        world: &'w World,
        state: &'w QueryState<Q, F>,
        entities: &'w [Entity],
        locations: &'w [EntityLocation],
        group: usize,
        window: TickWindow,
    ) -> Self {
        GroupRows { world, state, entities, locations, group, window, current: None }
    }

    /// The group's index.
    pub fn group(&self) -> usize {
        self.group
    }

    /// Entities in the group.
    pub fn len(&self) -> usize {
        self.entities.len()
    }

    /// Whether the group is empty.
    pub fn is_empty(&self) -> bool {
        self.entities.is_empty()
    }

    /// The group's entities, in order.
    pub fn entities(&self) -> &'w [Entity] {
        self.entities
    }

    /// Stamps the chunk ticks of the columns written in the current chunk.
    fn flush(&mut self) {
        if let Some(current) = self.current.take() {
            Q::flush_marks(&current.fetch, &current.marks);
        }
    }

    /// The data of the group's `k`-th entity (tick filters not applied);
    /// writes mark the row as any `Mut<T>` does.
    ///
    /// # Errors
    /// [`QueryError::NoSuchEntity`] if the entity was despawned,
    /// [`QueryError::NoMatch`] if it does not match the query.
    ///
    /// # Panics
    /// If `k >= self.len()`.
    #[inline(always)]
    pub fn get_mut(&mut self, k: usize) -> Result<Q::Item<'_>, QueryError> {
        let entity = self.entities[k];
        let cached = self.locations[k];
        // Fast path: the cached location is in the chunk fetched last and
        // its row still holds the entity.
        let fast = self.current.as_ref().is_some_and(|c| {
            c.archetype == cached.archetype
                && c.chunk == cached.chunk
                && c.entities.get(cached.row as usize) == Some(&entity)
        });
        let row = if fast { cached.row } else { self.locate(entity, cached)? };
        let current = self.current.as_mut().expect("a chunk is fetched");
        // SAFETY: `current.marks` lives in `self`, which the returned item
        // borrows mutably, so the marks outlive the item; they are flushed
        // when the chunk changes or the group's task ends.
        unsafe { Q::redirect_marks(&mut current.fetch, &mut current.marks) };
        // SAFETY: the row is live and holds `entity` (checked against the
        // chunk's entity column, which no one changes while the query's
        // access is held). `entity` is in no other group (checked by
        // `EntityGroups::push_group`), each selected group runs in one task
        // only, and `&mut self` keeps this the only item of this group, so
        // no other item for this row is alive.
        let item = unsafe { Q::item(&current.fetch, row as usize) };
        Ok(Q::shrink(item))
    }

    /// Finds `entity`'s row (from `cached` if the row still holds it, else
    /// from the entity table) and makes its chunk the current one.
    #[cold]
    #[inline(never)]
    fn locate(&mut self, entity: Entity, cached: EntityLocation) -> Result<u32, QueryError> {
        let archetypes = self.world.archetypes();
        let holds = |loc: EntityLocation| {
            archetypes.get(loc.archetype.index()).is_some_and(|a| {
                (loc.chunk as usize) < a.chunk_count()
                    && a.chunk_entities(loc.chunk as usize).get(loc.row as usize) == Some(&entity)
            })
        };
        let loc = if holds(cached) {
            cached
        } else {
            self.world.location(entity).map_err(|_| QueryError::NoSuchEntity(entity))?
        };
        let reuse = self.current.as_ref().is_some_and(|c| c.archetype == loc.archetype && c.chunk == loc.chunk);
        if !reuse {
            let cache = self.state.cache_of(loc.archetype).ok_or(QueryError::NoMatch(entity))?;
            self.flush();
            let archetype = &archetypes[loc.archetype.index()];
            // SAFETY: the archetype matched the query (`cache_of`), the
            // chunk is in range (it holds the entity), and the system that
            // owns the `Query` holds its access for `'w`.
            let fetch = unsafe { Q::fetch(cache, archetype, loc.chunk as usize, self.window) };
            let marks = Q::new_marks(&fetch);
            let entities = archetype.chunk_entities(loc.chunk as usize);
            self.current = Some(Current { archetype: loc.archetype, chunk: loc.chunk, entities, fetch, marks });
        }
        Ok(loc.row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Changed, Query, Schedule, With};

    #[derive(crate::Component, Debug, PartialEq, Clone, Copy)]
    struct Pos(u32);
    #[derive(crate::Component)]
    struct Tag;

    #[test]
    fn groups_refuse_shared_entities_and_roll_back() {
        let mut world = World::new();
        let e: Vec<Entity> = (0..5).map(|i| world.spawn((Pos(i),))).collect();
        let mut groups = EntityGroups::new();
        assert_eq!(groups.push_group(&e[0..2]), Ok(0));
        assert_eq!(groups.push_group(&[e[2], e[3], e[2]]), Err(e[2]));
        assert_eq!(groups.push_group(&[e[3], e[1]]), Err(e[1]));
        // The refused groups left nothing behind: e[2] and e[3] are free.
        assert_eq!(groups.push_group(&e[2..5]), Ok(1));
        assert_eq!(groups.len(), 2);
        assert_eq!(groups.entity_count(), 5);
        assert_eq!(groups.group(1), &e[2..5]);
        assert_eq!(groups.group_start(1), 2);
        groups.clear();
        assert!(groups.is_empty());
        assert_eq!(groups.push_group(&e), Ok(0));
    }

    #[test]
    fn retired_groups_are_empty_and_keep_every_other_position() {
        let mut world = World::new();
        let e: Vec<Entity> = (0..10).map(|i| world.spawn((Pos(i),))).collect();
        let mut groups = EntityGroups::new();
        groups.push_group(&e[0..3]).unwrap();
        groups.push_group(&e[3..6]).unwrap();
        groups.push_group(&e[6..8]).unwrap();
        groups.retire_group(1);
        groups.retire_group(1);
        assert_eq!(groups.len(), 3);
        assert!(groups.group(1).is_empty());
        assert_eq!(groups.group_start(2), 6);
        // The retired entities are free; the others are not (and the
        // refused group takes nothing: e[4] stays out of every group).
        assert_eq!(groups.push_group(&[e[4], e[6]]), Err(e[6]));
        assert_eq!(groups.push_group(&[e[5], e[3], e[8]]), Ok(3));
        assert_eq!((groups.group_start(3), groups.entity_count()), (8, 11));
        groups.update_locations_from(&world, 3);
        assert_eq!(groups.locations()[8], world.location(e[5]).unwrap());
        assert_eq!(groups.locations()[0].archetype, UNKNOWN.archetype, "earlier groups untouched");
        // Every selected group's rows and side values line up, the retired
        // group's included (it has none), and each entity is reached once.
        let mut side: Vec<u32> = (0..11).collect();
        let mut state = world.query::<&mut Pos>();
        let window = crate::TickWindow::new(0, world.change_tick());
        let mut query = Query { world: &world, state: &mut state, window };
        query.par_for_each_group_with(
            &groups,
            &[3, 1, 0, 2],
            &mut side,
            || (),
            |_, rows, side| {
                assert_eq!(rows.len(), side.len());
                for (k, value) in side.iter_mut().enumerate() {
                    let mut pos = rows.get_mut(k).unwrap();
                    pos.0 += 100;
                    *value += 1000 * pos.0;
                }
            },
        );
        let got: Vec<u32> = e.iter().map(|&x| world.get::<Pos>(x).unwrap().0).collect();
        assert_eq!(got, [100, 101, 102, 103, 4, 105, 106, 107, 108, 9]);
        // Positions 3..6 (the retired group's) were not handed out.
        assert_eq!(&side[3..6], &[3, 4, 5]);
        assert_eq!(side[8], 8 + 1000 * 105);
        assert_eq!(side[10], 10 + 1000 * 108);
        // Compacting closes the gap: same groups, same order, same cached
        // locations, no reserved positions.
        let before: Vec<(Vec<Entity>, Vec<EntityLocation>)> = (0..groups.len())
            .map(|g| {
                let range = groups.group_start(g)..groups.group_start(g) + groups.group(g).len();
                (groups.group(g).to_vec(), groups.locations()[range].to_vec())
            })
            .collect();
        groups.compact();
        assert_eq!(groups.entity_count(), 8);
        assert_eq!((groups.group_start(1), groups.group_start(2), groups.group_start(3)), (3, 3, 5));
        for (g, (entities, locations)) in before.iter().enumerate() {
            let range = groups.group_start(g)..groups.group_start(g) + groups.group(g).len();
            assert_eq!(groups.group(g), &entities[..]);
            assert_eq!(&groups.locations()[range], &locations[..]);
        }
        assert_eq!(groups.push_group(&[e[4]]), Ok(4));
        assert_eq!(groups.group_start(4), 8);
        groups.clear();
        assert_eq!(groups.push_group(&e), Ok(0));
    }

    #[test]
    fn moved_despawned_and_unmatched_entities_are_found_or_reported() {
        let mut world = World::new();
        let e: Vec<Entity> = (0..300).map(|i| world.spawn((Pos(i),))).collect();
        let plain = world.spawn((Pos(1000),));
        let mut groups = EntityGroups::new();
        groups.push_group(&e[0..150]).unwrap();
        groups.push_group(&e[150..300]).unwrap();
        groups.push_group(&[plain]).unwrap();
        groups.update_locations(&world);
        // Move rows behind the cache's back: a despawn swaps the chunk's
        // last row into the hole, an insert moves an entity to another
        // archetype.
        world.despawn(e[3]).unwrap();
        world.insert_one(e[200], Tag).unwrap();
        world.insert_one(e[7], Tag).unwrap();
        world.remove_one::<Pos>(plain).unwrap();
        world.insert_resource(groups);
        let mut schedule = Schedule::new();
        schedule.add_systems(|mut q: Query<&mut Pos>, groups: crate::Res<EntityGroups>| {
            q.par_for_each_group_mut(&groups, &[2, 0, 1, 0], Vec::new, |seen: &mut Vec<u32>, rows| {
                for k in 0..rows.len() {
                    let entity = rows.entities()[k];
                    match rows.get_mut(k) {
                        Ok(mut pos) => {
                            assert_eq!(pos.0, entity.index(), "row of another entity");
                            pos.0 += 1;
                            seen.push(pos.0);
                        }
                        Err(QueryError::NoSuchEntity(e)) => assert_eq!(e.index(), 3),
                        Err(QueryError::NoMatch(e)) => assert_eq!(e.index(), 300),
                        Err(other) => panic!("{other}"),
                    }
                }
            });
        });
        schedule.run(&mut world).unwrap();
        for (i, &entity) in e.iter().enumerate() {
            if i != 3 {
                assert_eq!(world.get::<Pos>(entity), Ok(&Pos(i as u32 + 1)), "entity {i}");
            }
        }
    }

    #[test]
    fn writes_mark_rows_and_chunks_exactly() {
        let mut world = World::new();
        let e: Vec<Entity> = (0..400).map(|i| world.spawn((Pos(i), Tag))).collect();
        let mut groups = EntityGroups::new();
        for pair in e.chunks(2) {
            groups.push_group(pair).unwrap();
        }
        let mut changed = world.query_filtered::<Entity, Changed<Pos>>();
        changed.iter(&world).count();
        world.insert_resource(groups);
        let mut schedule = Schedule::new();
        // Select every 10th group; write only the first entity of each, and
        // only through `set_if_neq` with a new value.
        let selected: Vec<u32> = (0..200).step_by(10).collect();
        schedule.add_systems(move |mut q: Query<&mut Pos, With<Tag>>, groups: crate::Res<EntityGroups>| {
            q.par_for_each_group_mut(
                &groups,
                &selected,
                || (),
                |_, rows| {
                    let first = rows.get_mut(0).unwrap().0;
                    rows.get_mut(0).unwrap().set_if_neq(Pos(first + 1));
                    let second = rows.get_mut(1).unwrap().0;
                    rows.get_mut(1).unwrap().set_if_neq(Pos(second));
                },
            );
        });
        schedule.run(&mut world).unwrap();
        let mut got: Vec<Entity> = changed.iter(&world).collect();
        got.sort();
        let want: Vec<Entity> = (0..400).step_by(20).map(|i| e[i]).collect();
        assert_eq!(got, want);
        assert_eq!(world.get::<Pos>(e[20]), Ok(&Pos(21)));
        assert_eq!(world.get::<Pos>(e[21]), Ok(&Pos(21)));
        // The chunk marks were flushed: every chunk with a write was visited.
        let stats = changed.stats();
        assert_eq!(stats.chunks_visited(), stats.chunks_total);
    }

    #[test]
    fn count_fingerprints_follow_membership() {
        let mut world = World::new();
        world.spawn((Pos(0),));
        let b = world.spawn((Pos(1), Tag));
        world.spawn((Tag,));
        world.insert_resource(Vec::<(usize, usize)>::new());
        let mut schedule = Schedule::new();
        schedule.add_systems(|q: Query<&Pos>, mut out: crate::ResMut<Vec<(usize, usize)>>| {
            out.push((q.matched_entity_count(), q.matched_archetype_count()));
            assert!(q.component_id::<Pos>().is_some() && q.component_id::<Tag>().is_some());
            assert!(q.component_id::<EntityGroups>().is_none());
        });
        schedule.run(&mut world).unwrap();
        world.despawn(b).unwrap();
        schedule.run(&mut world).unwrap();
        assert_eq!(world.resource::<Vec<(usize, usize)>>().unwrap(), &vec![(2, 2), (1, 2)]);
    }

    #[test]
    #[should_panic(expected = "group 5 of 1 selected")]
    fn selecting_a_missing_group_panics() {
        let mut world = World::new();
        let e = world.spawn((Pos(0),));
        let mut groups = EntityGroups::new();
        groups.push_group(&[e]).unwrap();
        let mut state = world.query::<&mut Pos>();
        let window = crate::TickWindow::new(0, world.change_tick());
        let mut query = Query { world: &world, state: &mut state, window };
        query.par_for_each_group_mut(&groups, &[5], || (), |_, _| {});
    }
}
