//! A small random scene shared by the integration tests.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

use ecs_core::{Entity, World};
use ecs_replication::codec::Value;
use ecs_replication::prelude::*;
use glam::{Quat, Vec3};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Position(pub Vec3);

impl AsPosition for Position {
    fn position(&self) -> Vec3 {
        self.0
    }
    fn from_position(p: Vec3) -> Self {
        Position(p)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rotation(pub Quat);

impl AsRotation for Rotation {
    fn rotation(&self) -> Quat {
        self.0
    }
    fn from_rotation(q: Quat) -> Self {
        Rotation(q)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Health(pub u32);

pub fn registry() -> Registry {
    Registry::new()
        .position::<Position>("position", 0.01, 20)
        .unwrap()
        .rotation::<Rotation>("rotation", 9)
        .unwrap()
        .pod::<Health>("health")
        .unwrap()
}

/// xorshift64*, deterministic.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0 | 1;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    pub fn point(&mut self, half: f32) -> Vec3 {
        Vec3::new((self.unit() * 2.0 - 1.0) * half, (self.unit() * 2.0 - 1.0) * half, 0.0)
    }
}

/// The random scene: live entities and the mutations applied to them.
pub struct Scene {
    pub live: Vec<Entity>,
    pub half: f32,
}

impl Scene {
    pub fn new(world: &mut World, rng: &mut Rng, count: usize, half: f32) -> Scene {
        let mut scene = Scene { live: Vec::new(), half };
        for _ in 0..count {
            scene.spawn(world, rng);
        }
        scene
    }

    pub fn spawn(&mut self, world: &mut World, rng: &mut Rng) {
        let p = rng.point(self.half);
        let q = Quat::from_rotation_z(rng.unit() * 6.0);
        let e = world.spawn((Replicated, Position(p), Rotation(q), Health(rng.below(100) as u32))).unwrap();
        self.live.push(e);
    }

    /// One tick of random spawns, despawns, moves and writes.
    pub fn mutate(&mut self, world: &mut World, rng: &mut Rng, max_entities: usize) {
        if self.live.len() < max_entities && rng.unit() < 0.3 {
            self.spawn(world, rng);
        }
        if !self.live.is_empty() && rng.unit() < 0.2 {
            let e = self.live.swap_remove(rng.below(self.live.len()));
            world.despawn(e).unwrap();
        }
        for &e in &self.live {
            let r = rng.unit();
            if r < 0.3 {
                let mut p = world.get_mut::<Position>(e).unwrap();
                let step = Vec3::new(rng.unit() - 0.5, rng.unit() - 0.5, 0.0) * 2.0;
                p.0 = (p.0 + step).clamp(Vec3::splat(-self.half), Vec3::splat(self.half));
            } else if r < 0.35 {
                world.get_mut::<Rotation>(e).unwrap().0 = Quat::from_rotation_z(rng.unit() * 6.0);
            } else if r < 0.4 {
                world.get_mut::<Health>(e).unwrap().0 = rng.below(1000) as u32;
            } else if r < 0.42 {
                // A jump (large delta or absolute).
                world.get_mut::<Position>(e).unwrap().0 = rng.point(self.half);
            }
        }
    }
}

/// What a client should hold: the server's quantized values of the
/// entities in its interest.
pub fn expected(server: &Server, id: ClientId) -> BTreeMap<u64, Vec<Option<Value>>> {
    server.entities().filter(|(net, _, _)| server.in_interest(id, *net)).map(|(net, _, v)| (net, v.to_vec())).collect()
}

/// What a client holds.
pub fn held(client: &Client) -> BTreeMap<u64, Vec<Option<Value>>> {
    client.entities().map(|(net, v)| (net, v.to_vec())).collect()
}

/// Every network id the server ever handed out, so far.
pub fn all_ids(server: &Server, seen: &mut BTreeSet<u64>) {
    seen.extend(server.entities().map(|(net, _, _)| net));
}
