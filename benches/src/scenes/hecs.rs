//! The scenes on `hecs` 0.11 (feature `peers`).
//!
//! hecs has neither parallel iteration nor change detection, so it has no
//! `heavy_compute` and no chunk-skip scene.

use glam::Vec3;
use hecs::{Entity, World};

use super::{
    ADD_REMOVE_ENTITIES, FRAG_PER_ARCHETYPE, Frame, SIMPLE_ENTITIES, define_components, for_each_frag_tag,
    simple_transform,
};

define_components!();

fn simple_bundle() -> (Transform, Pos, Rot, Vel) {
    (Transform(simple_transform()), Pos(Vec3::X), Rot(Vec3::X), Vel(Vec3::X))
}

/// `simple_insert`: a new world, 10k entities spawned in a batch, then dropped.
pub fn simple_insert() {
    let mut world = World::new();
    world.spawn_batch((0..SIMPLE_ENTITIES).map(|_| simple_bundle()));
    drop(world);
}

/// [`simple_insert`] as a [`Frame`].
#[derive(Debug, Default)]
pub struct SimpleInsert;

impl Frame for SimpleInsert {
    fn frame(&mut self) {
        simple_insert();
    }
}

/// `simple_iter`: 10k entities, `pos += vel`.
pub struct SimpleIter {
    world: World,
}

impl SimpleIter {
    /// Builds the world.
    pub fn new() -> Self {
        let mut world = World::new();
        world.spawn_batch((0..SIMPLE_ENTITIES).map(|_| simple_bundle()));
        Self { world }
    }
}

impl SimpleIter {
    /// The frame's work with a `for` loop over the query (`probe_iter`),
    /// the form a user writes first.
    pub fn for_loop(&mut self) {
        for (vel, pos) in self.world.query_mut::<(&Vel, &mut Pos)>() {
            pos.0 += vel.0;
        }
    }
}

impl Default for SimpleIter {
    fn default() -> Self {
        Self::new()
    }
}

impl Frame for SimpleIter {
    fn frame(&mut self) {
        // `for_each` runs hecs's own `fold` (internal iteration), its
        // fastest walk, as ours uses `for_each_mut`.
        self.world.query_mut::<(&Vel, &mut Pos)>().into_iter().for_each(|(vel, pos)| pos.0 += vel.0);
    }
}

/// `frag_iter`: 26 archetypes x 20 entities, `data *= 2`.
pub struct FragIter {
    world: World,
}

impl FragIter {
    /// Builds the world.
    pub fn new() -> Self {
        let mut world = World::new();
        macro_rules! spawn_tag {
            ($tag:ident) => {
                world.spawn_batch((0..FRAG_PER_ARCHETYPE).map(|_| (frag::$tag(0.0), Data(1.0))));
            };
        }
        for_each_frag_tag!(spawn_tag);
        Self { world }
    }
}

impl FragIter {
    /// The frame's work with a `for` loop over the query (`probe_iter`),
    /// the form a user writes first.
    pub fn for_loop(&mut self) {
        for data in self.world.query_mut::<&mut Data>() {
            data.0 *= 2.0;
        }
    }
}

impl Default for FragIter {
    fn default() -> Self {
        Self::new()
    }
}

impl Frame for FragIter {
    fn frame(&mut self) {
        self.world.query_mut::<&mut Data>().into_iter().for_each(|data| data.0 *= 2.0);
    }
}

/// `add_remove`: 10k entities with `A`; insert `B` on all, then remove it from all.
pub struct AddRemove {
    world: World,
    entities: Vec<Entity>,
}

impl AddRemove {
    /// Builds the world.
    pub fn new() -> Self {
        let mut world = World::new();
        let entities = world.spawn_batch((0..ADD_REMOVE_ENTITIES).map(|_| (A(0.0),))).collect();
        Self { world, entities }
    }

    /// `add_remove_wide`: the entities also carry the `simple_insert` bundle.
    pub fn wide() -> Self {
        let mut world = World::new();
        let entities = world
            .spawn_batch((0..ADD_REMOVE_ENTITIES).map(|_| {
                let (t, p, r, v) = simple_bundle();
                (t, p, r, v, A(0.0))
            }))
            .collect();
        Self { world, entities }
    }
}

impl Default for AddRemove {
    fn default() -> Self {
        Self::new()
    }
}

impl Frame for AddRemove {
    fn frame(&mut self) {
        for &e in &self.entities {
            // The entities were spawned above and are never despawned.
            let _ = self.world.insert_one(e, B(0.0));
        }
        for &e in &self.entities {
            let _ = self.world.remove_one::<B>(e);
        }
    }
}

/// `spawn_despawn`: each of 10k `(Pos, Vel)` entities despawned and
/// replaced by a new one, one call at a time.
pub struct SpawnDespawn {
    world: World,
    entities: Vec<Entity>,
}

impl SpawnDespawn {
    /// Builds the world.
    pub fn new() -> Self {
        let mut world = World::new();
        let entities = world.spawn_batch((0..ADD_REMOVE_ENTITIES).map(|_| (Pos(Vec3::X), Vel(Vec3::X)))).collect();
        Self { world, entities }
    }
}

impl Default for SpawnDespawn {
    fn default() -> Self {
        Self::new()
    }
}

impl Frame for SpawnDespawn {
    fn frame(&mut self) {
        for e in &mut self.entities {
            // Every handle is live: each frame replaces the ones it despawns.
            let _ = self.world.despawn(*e);
            *e = self.world.spawn((Pos(Vec3::X), Vel(Vec3::Y)));
        }
    }
}
