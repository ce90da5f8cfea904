//! A small random scene and a conditioned run shared by the integration
//! tests.
#![allow(dead_code, reason = "each test binary that includes this module uses only part of it")]

pub mod game;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use ecs_core::{Component, Entity, World};
use ecs_replication::codec::{EntryKind, Limits, Value, decode};
use ecs_replication::prelude::*;
use ecs_replication::transport::{LocalNetwork, pump_client, serve};
use glam::{Quat, Vec3};

#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Position(pub Vec3);

impl AsPosition for Position {
    fn position(&self) -> Vec3 {
        self.0
    }
    fn from_position(p: Vec3) -> Self {
        Position(p)
    }
}

#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Rotation(pub Quat);

impl AsRotation for Rotation {
    fn rotation(&self) -> Quat {
        self.0
    }
    fn from_rotation(q: Quat) -> Self {
        Rotation(q)
    }
}

#[derive(Component, Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
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
    /// Entities marked `Disabled` by [`Scene::toggle_disabled`].
    pub asleep: Vec<Entity>,
}

impl Scene {
    pub fn new(world: &mut World, rng: &mut Rng, count: usize, half: f32) -> Scene {
        let mut scene = Scene { live: Vec::new(), half, asleep: Vec::new() };
        for _ in 0..count {
            scene.spawn(world, rng);
        }
        scene
    }

    pub fn spawn(&mut self, world: &mut World, rng: &mut Rng) {
        let p = rng.point(self.half);
        let q = Quat::from_rotation_z(rng.unit() * 6.0);
        let e = world.spawn((Replicated, Position(p), Rotation(q), Health(rng.below(100) as u32)));
        self.live.push(e);
    }

    /// Disables a live entity, or enables a disabled one (written while
    /// disabled, or not), or despawns a disabled one, at random.
    #[allow(dead_code, reason = "used by some of the test files that include this module")]
    pub fn toggle_disabled(&mut self, world: &mut World, rng: &mut Rng) {
        let r = rng.unit();
        if r < 0.4 && !self.live.is_empty() {
            let e = self.live.swap_remove(rng.below(self.live.len()));
            world.insert_one(e, ecs_core::Disabled).unwrap();
            self.asleep.push(e);
        } else if r < 0.8 && !self.asleep.is_empty() {
            let e = self.asleep.swap_remove(rng.below(self.asleep.len()));
            if rng.unit() < 0.5 {
                world.get_mut::<Position>(e).unwrap().0 = rng.point(self.half);
            }
            world.remove_one::<ecs_core::Disabled>(e).unwrap();
            self.live.push(e);
        } else if r < 0.9 && !self.asleep.is_empty() {
            let e = self.asleep.swap_remove(rng.below(self.asleep.len()));
            world.despawn(e).unwrap();
        }
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
            } else if r < 0.33 {
                if let Ok(mut rot) = world.get_mut::<Rotation>(e) {
                    rot.0 = Quat::from_rotation_z(rng.unit() * 6.0);
                }
            } else if r < 0.35 {
                // A small turn: a delta of a few levels.
                if let Ok(mut rot) = world.get_mut::<Rotation>(e) {
                    rot.0 = (rot.0 * Quat::from_rotation_z(0.05)).normalize();
                }
            } else if r < 0.4 {
                if let Ok(mut hp) = world.get_mut::<Health>(e) {
                    hp.0 = rng.below(1000) as u32;
                }
            } else if r < 0.42 {
                // A jump (large delta or absolute).
                world.get_mut::<Position>(e).unwrap().0 = rng.point(self.half);
            } else if r < 0.43 {
                // Components come and go: removals are replicated.
                if world.remove_one::<Health>(e).is_err() {
                    world.insert_one(e, Health(rng.below(50) as u32)).unwrap();
                }
            } else if r < 0.44 && world.remove_one::<Rotation>(e).is_err() {
                world.insert_one(e, Rotation(Quat::from_rotation_z(rng.unit()))).unwrap();
            }
        }
    }
}

/// What a client should hold: the server's quantized values of the
/// entities in its interest.
pub fn expected(server: &Server, id: ClientId) -> BTreeMap<NetId, Vec<Option<Value>>> {
    server.entities().filter(|(net, _, _)| server.in_interest(id, *net)).map(|(net, _, v)| (net, v.to_vec())).collect()
}

/// What a client holds.
pub fn held(client: &Client) -> BTreeMap<NetId, Vec<Option<Value>>> {
    client.entities().map(|(net, v)| (net, v.to_vec())).collect()
}

/// Asserts with the crate's check helper that a client holds the server's
/// state of the entities in its interest and its world shows it.
pub fn assert_in_sync(server: &Server, id: ClientId, client: &Client, world: &World, when: &str) {
    let report = check_client(server, id, client, world, CheckOptions::default()).unwrap();
    assert!(report.is_match(), "{when}: {report}");
}

/// Every network id the server ever handed out, so far.
pub fn all_ids(server: &Server, seen: &mut BTreeSet<NetId>) {
    seen.extend(server.entities().map(|(net, _, _)| net));
}

pub const DT: Duration = Duration::from_millis(16);

/// A server, its world and scene, and clients over a [`LocalNetwork`].
pub struct Run {
    pub world: World,
    pub server: Server,
    pub net: LocalNetwork,
    pub clients: Vec<(ClientId, World, Client)>,
    pub scene: Scene,
    pub rng: Rng,
    pub seen: BTreeSet<NetId>,
}

impl Run {
    pub fn new(seed: u64, views: &[Option<View>], config: ServerConfig, entities: usize) -> Run {
        let mut rng = Rng(seed);
        let mut world = World::new();
        let scene = Scene::new(&mut world, &mut rng, entities, 20.0);
        let mut server = Server::new(&mut world, registry(), config);
        let mut net = LocalNetwork::new();
        let mut clients = Vec::new();
        for (i, view) in views.iter().enumerate() {
            let id = ClientId(100 + i as u64);
            server.add_client(id, *view).unwrap();
            net.connect(id, LinkConfig::clean(1), LinkConfig::clean(1), seed ^ i as u64);
            let mut cw = World::new();
            let client = Client::new(&mut cw, &registry());
            clients.push((id, cw, client));
        }
        Run { world, server, net, clients, scene, rng, seen: BTreeSet::new() }
    }

    pub fn set_links(&mut self, link: LinkConfig) {
        for (id, _, _) in &self.clients {
            self.net.set_links(*id, link, link);
        }
    }

    /// One tick: server step, every packet checked against interest, client
    /// steps, time advances. Returns the largest packet.
    pub fn step(&mut self, mutate: bool, max_entities: usize) -> usize {
        if mutate {
            self.scene.mutate(&mut self.world, &mut self.rng, max_entities);
        }
        serve(&mut self.server, &mut self.world, &mut self.net.server(), DT, None).unwrap();
        all_ids(&self.server, &mut self.seen);
        let schema = self.server.registry().schema().clone();
        let mut largest = 0;
        for (id, packet) in self.server.packets() {
            largest = largest.max(packet.len());
            let config = self.server.config();
            let ceiling = config.budget_bytes.max(config.catch_up_budget_bytes);
            assert!(packet.len() <= ceiling, "packet over the catch-up ceiling");
            // A client never receives an entity outside its interest.
            let decoded = decode(packet, &schema, Limits::default()).unwrap();
            // One entry per entity: a server packet never contradicts itself.
            let ids: BTreeSet<NetId> = decoded.entries.iter().map(|e| e.net_id).collect();
            assert_eq!(ids.len(), decoded.entries.len(), "two entries for one entity at tick {}", decoded.tick);
            for e in &decoded.entries {
                if e.kind != EntryKind::Despawn {
                    assert!(
                        self.server.in_interest(id, e.net_id),
                        "client {id:?} got entity {} outside its interest at tick {}",
                        e.net_id,
                        decoded.tick
                    );
                }
            }
        }
        for (id, cw, client) in &mut self.clients {
            pump_client(client, cw, &mut self.net.client(*id), DT).unwrap();
            // Never an entity the server did not make.
            for (net, _) in client.entities() {
                assert!(self.seen.contains(&net), "client holds unknown entity {net}");
            }
        }
        self.net.advance();
        largest
    }

    /// Every client holds exactly the server's state of the entities in
    /// its interest, and its world shows it (the crate's check helper).
    pub fn assert_converged(&self, when: &str) {
        for (id, cw, client) in &self.clients {
            let report = check_client(&self.server, *id, client, cw, CheckOptions::default()).unwrap();
            assert!(report.is_match(), "{when}: {report}");
            assert_eq!(report.held, report.expected);
            assert_eq!(cw.len() as usize, report.held, "{when}: the world holds only the replicated entities");
        }
    }
}
