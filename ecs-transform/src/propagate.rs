//! The propagation system: `GlobalTransform = parent's global * local`,
//! parents before children, skipping every chunk with nothing to do.
//!
//! ## How one run works
//! A run sees the changes made since its previous run (the store's system
//! tick window), in three steps:
//!
//! 1. **Children whose own state changed** (`Changed<LocalTransform>`, or
//!    `Changed<ChildOf>` from a new or moved link; a new child is both):
//!    one read-only chunk pass over entities with [`ChildOf`] lists them;
//!    each gets its depth (walking up `ChildOf`, memoised within the run)
//!    and the list is sorted by depth. Nothing is computed yet: a parent
//!    may still move this frame.
//! 2. **Roots whose local changed** (or that became roots): one parallel
//!    chunk pass over entities without `ChildOf` computes global = local;
//!    each root whose global really changed hands it to its children.
//! 3. **Down the trees**, depth first from the roots of step 2, then from
//!    each step-1 entity in depth order: a child handed its parent's new
//!    global computes its own with `set_if_neq`, and only one whose global
//!    really changed hands it on. A step-1 entity reads its parent's global,
//!    which is final by then: any moving ancestor was a step-2 root or a
//!    shallower step-1 entity, and its walk has already passed through.
//!    When the roots hand down many children per chunk of children (at
//!    least 32, e.g. every root of a wide forest moving), those children
//!    are computed instead by one parallel pass over all chunks of
//!    children, which finds its rows' parent values by entity index.
//!
//! Steps 1 and 2 compare chunk ticks first, so a chunk whose locals and
//! links were not stamped since the last run is skipped without touching
//! its memory; step 3 visits only children of entities that really moved
//! (its dense pass reads every chunk of children, but only when most of
//! them have work). Every write is a `set_if_neq` of a final value,
//! so a frame where nothing moved writes nothing and skips every chunk, and
//! `Changed<GlobalTransform>` downstream lists exactly the entities whose
//! world transform changed. Each entity is computed at most twice per run.
//!
//! ## Parallelism
//! The root pass and the dense pass run over chunks on rayon. The walk of
//! step 3 is sequential: it reaches children through `Query::get_mut`,
//! which needs exclusive access to the query, and `ecs-core` has no safe
//! way to hand disjoint entities to several threads (this crate forbids
//! `unsafe`).
//!
//! No step recurses: a chain 10 000 deep is a stack of at most a few
//! entries, walked in a loop.

use std::collections::HashMap;
use std::sync::Mutex;

use ecs_core::{Added, Changed, Entity, Local, Or, Query, Schedule, With, Without};
use glam::Affine3A;

use crate::components::{ChildOf, Children, GlobalTransform, LocalTransform};

/// The roots whose global may need recomputing.
pub type RootQuery<'w, 's> = Query<
    'w,
    's,
    (Entity, &'static LocalTransform, &'static mut GlobalTransform, Option<&'static Children>),
    (Without<ChildOf>, Or<(Changed<LocalTransform>, Added<GlobalTransform>)>),
>;

/// Step 1: the children whose own local or link changed since the last run
/// (read-only, so the tick filter reads no column the walk writes).
pub type ChangedChildQuery<'w, 's> =
    Query<'w, 's, Entity, (With<ChildOf>, With<GlobalTransform>, Or<(Changed<LocalTransform>, Changed<ChildOf>)>)>;

/// The children, for the walk of step 3 (random access by entity) and the
/// dense pass (every chunk, when most children of roots move).
pub type ChildQuery<'w, 's> =
    Query<'w, 's, (&'static LocalTransform, &'static mut GlobalTransform, Option<&'static Children>), With<ChildOf>>;

/// Parent links, read to find the depth and the parent of step-1 entities.
pub type ParentQuery<'w, 's> = Query<'w, 's, &'static ChildOf>;

/// Reused buffers of [`propagate_transforms`].
#[derive(Debug, Default)]
pub struct PropagationScratch {
    /// Step 2's roots whose global changed and that have children.
    moved_roots: Vec<(Entity, Affine3A)>,
    /// Step 3's depth-first walk.
    walk: Walk,
    /// Step 1's entities with their depths.
    own: Vec<(usize, Entity)>,
    /// Dense pass: by entity index, the child and the index of its parent's
    /// new global in the walk's values.
    handed: Vec<Option<(Entity, u32)>>,
    depths: HashMap<Entity, usize>,
    path: Vec<Entity>,
}

impl PropagationScratch {
    /// The depth of `entity` (a root is 0), walking up `ChildOf` until an
    /// entity of known depth or a root. A parent that is gone counts as a
    /// root; a walk longer than `limit` (a cycle, impossible through the
    /// hierarchy functions) stops there.
    fn depth_of(&mut self, entity: Entity, parents: &ParentQuery, limit: usize) -> usize {
        self.path.clear();
        let mut current = entity;
        let base = loop {
            if let Some(&d) = self.depths.get(&current) {
                break d;
            }
            match parents.get(current) {
                Ok(link) if self.path.len() <= limit => {
                    self.path.push(current);
                    current = link.parent();
                }
                _ => break 0,
            }
        };
        let n = self.path.len();
        for (i, &e) in self.path.iter().enumerate() {
            self.depths.insert(e, base + n - i);
        }
        base + n
    }
}

/// A depth-first walk: a stack of (child, index of its parent's new global
/// in `values`), so a parent's value is stored once, not once per child.
#[derive(Debug, Default)]
struct Walk {
    stack: Vec<(Entity, u32)>,
    values: Vec<Affine3A>,
}

impl Walk {
    /// Pushes each child with `value`, last child first, so children are
    /// popped in their order (and mostly in memory order).
    #[inline]
    fn hand_down(&mut self, children: Option<&Children>, value: Affine3A) {
        if let Some(children) = children {
            let index = self.values.len() as u32;
            self.values.push(value);
            self.stack.extend(children.as_slice().iter().rev().map(|&c| (c, index)));
        }
    }

    /// Moves another walk's entries onto this one.
    fn append(&mut self, other: Walk) {
        let offset = self.values.len() as u32;
        self.values.extend(other.values);
        self.stack.extend(other.stack.into_iter().map(|(c, i)| (c, i + offset)));
    }

    /// Runs the walk to the end: each child computes its global from its
    /// parent's, and one whose global really changes hands it on.
    fn descend(&mut self, children: &mut ChildQuery) {
        while let Some((child, index)) = self.stack.pop() {
            let parent_value = self.values[index as usize];
            // A child without the transform components (or despawned
            // behind the hierarchy's back) ends the walk on this branch.
            let Ok((local, mut global, kids)) = children.get_mut(child) else {
                continue;
            };
            let value = parent_value * local.to_affine();
            if global.set_if_neq(GlobalTransform(value)) {
                self.hand_down(kids, value);
            }
        }
        self.values.clear();
    }
}

/// Handed-down children per chunk of children from which the roots'
/// children are computed by one parallel pass over every child chunk
/// instead of one random access each.
const DENSE_ROWS_PER_CHUNK: usize = 32;

/// Computes every child on `walk`'s stack (children of roots) in one
/// parallel pass over all chunks of children, looking each row up by entity
/// index in `handed`. Leaves the walk holding their own children.
fn dense_pass(children: &mut ChildQuery, walk: &mut Walk, handed: &mut Vec<Option<(Entity, u32)>>) {
    let Walk { stack, values } = &*walk;
    let end = stack.iter().map(|&(c, _)| c.index() as usize + 1).max().unwrap_or(0);
    if handed.len() < end {
        handed.resize(end, None);
    }
    for &(child, index) in stack {
        handed[child.index() as usize] = Some((child, index));
    }
    let next = Mutex::new(Walk::default());
    {
        let handed = &*handed;
        children.par_for_each_chunk_mut(|view| {
            let entities = view.entities();
            let mut out = Walk::default();
            // The filter is archetypal: the items are all rows, in order.
            for (row, (local, mut global, kids)) in view.items().enumerate() {
                let e = entities[row];
                let Some(Some((child, index))) = handed.get(e.index() as usize) else {
                    continue;
                };
                if *child != e {
                    continue;
                }
                let value = values[*index as usize] * local.to_affine();
                if global.set_if_neq(GlobalTransform(value)) {
                    out.hand_down(kids, value);
                }
            }
            if !out.stack.is_empty() {
                next.lock().unwrap_or_else(|e| e.into_inner()).append(out);
            }
        });
    }
    for &(child, _) in stack {
        handed[child.index() as usize] = None;
    }
    walk.stack.clear();
    walk.values.clear();
    walk.append(next.into_inner().unwrap_or_else(|e| e.into_inner()));
}

/// The propagation system (see the [module docs](self)). Add it with
/// [`add_transform_systems`] or directly to a [`Schedule`], after the systems
/// that write [`LocalTransform`]s.
///
/// ```
/// use ecs_core::{Schedule, World};
/// use ecs_transform::{GlobalTransform, LocalTransform, WorldHierarchyExt, add_transform_systems, transform_bundle};
/// use glam::Vec3;
///
/// let mut world = World::new();
/// let parent = world.spawn(transform_bundle(LocalTransform::from_xyz(1.0, 0.0, 0.0))).unwrap();
/// let child = world.spawn(transform_bundle(LocalTransform::from_xyz(0.0, 2.0, 0.0))).unwrap();
/// world.set_parent(child, parent).unwrap();
/// let mut schedule = Schedule::new();
/// add_transform_systems(&mut schedule);
/// schedule.run(&mut world).unwrap();
/// assert_eq!(world.get::<GlobalTransform>(child).unwrap().translation(), Vec3::new(1.0, 2.0, 0.0));
/// ```
pub fn propagate_transforms(
    mut roots: RootQuery,
    mut changed_children: ChangedChildQuery,
    mut children: ChildQuery,
    parents: ParentQuery,
    mut scratch: Local<PropagationScratch>,
) {
    let scratch = &mut *scratch;
    // Step 1: children whose own local or link changed, with their depths.
    let mut own = std::mem::take(&mut scratch.own);
    changed_children.for_each_chunk_mut(|view| {
        let entities = view.entities();
        if view.all_rows_pass() {
            own.extend(entities.iter().map(|&e| (0, e)));
        } else {
            own.extend(view.matching_rows().map(|row| (0, entities[row])));
        }
    });
    if !own.is_empty() {
        let limit = own.len().max(1 << 20);
        for entry in &mut own {
            entry.0 = scratch.depth_of(entry.1, &parents, limit);
        }
        scratch.depths.clear();
        own.sort_unstable_by_key(|&(depth, _)| depth);
    }
    // Step 2: roots, in parallel; the changed ones with children are noted
    // (entity and new global) and then handed to the walk.
    let moved = Mutex::new(std::mem::take(&mut scratch.moved_roots));
    roots.par_for_each_chunk_mut(|view| {
        let mut out = Vec::new();
        for (root, local, mut global, kids) in view.items() {
            let value = local.to_affine();
            if global.set_if_neq(GlobalTransform(value)) && kids.is_some() {
                out.push((root, value));
            }
        }
        if !out.is_empty() {
            moved.lock().unwrap_or_else(|e| e.into_inner()).extend(out);
        }
    });
    let mut moved = moved.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut walk = std::mem::take(&mut scratch.walk);
    for &(root, value) in &moved {
        if let Ok((_, _, _, kids)) = roots.get_mut(root) {
            walk.hand_down(kids, value);
        }
    }
    moved.clear();
    scratch.moved_roots = moved;
    // When the roots handed down many values per chunk of children, one
    // parallel pass over the children's chunks is cheaper than a random
    // access per child.
    let child_chunks = changed_children.stats().chunks_total as usize;
    if walk.stack.len() >= DENSE_ROWS_PER_CHUNK * child_chunks.max(1) {
        dense_pass(&mut children, &mut walk, &mut scratch.handed);
    }
    // Step 3: down the trees from the roots, then from the step-1 entities
    // in depth order; every ancestor of an entity is final when it is
    // computed.
    walk.descend(&mut children);
    for &(_, child) in &own {
        // The parent is final now. One without a global transform (or gone,
        // behind the hierarchy's back) counts as the identity.
        let parent_value = match parents.get(child) {
            Ok(link) => {
                let parent = link.parent();
                match children.get_mut(parent) {
                    Ok((_, global, _)) => global.0,
                    Err(_) => roots.get_mut(parent).map_or(Affine3A::IDENTITY, |(_, _, global, _)| global.0),
                }
            }
            Err(_) => continue,
        };
        let Ok((local, mut global, kids)) = children.get_mut(child) else {
            continue;
        };
        let value = parent_value * local.to_affine();
        if global.set_if_neq(GlobalTransform(value)) {
            walk.hand_down(kids, value);
            walk.descend(&mut children);
        }
    }
    own.clear();
    scratch.own = own;
    scratch.walk = walk;
}

/// Adds the transform systems to `schedule` (the "plugin"): today the one
/// [`propagate_transforms`] system. Order game systems that write
/// [`LocalTransform`] before it with `.before(propagate_transforms)`.
pub fn add_transform_systems(schedule: &mut Schedule) -> &mut Schedule {
    schedule.add_systems(propagate_transforms)
}
