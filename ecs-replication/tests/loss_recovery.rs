//! Convergence once a bad link clears: server and clients over seeded
//! conditioned links (50 % loss both ways, a burst of total loss, packets
//! overtaking each other), then a clean link; every client must hold the
//! server's state (`check_client` at the tick it applied) within its
//! backlog / catch-up ceiling + 2 ticks, the goal of issue 14. The backlog
//! is counted as the bench counts it: every entity with unacknowledged
//! work sent once more, at the bytes per entry of the lossy phase.

mod common;

use std::time::Duration;

use common::*;
use ecs_core::{Entity, World};
use ecs_replication::check::{CheckAt, CheckOptions, check_client};
use ecs_replication::prelude::*;
use ecs_replication::server::ClientStats;
use ecs_replication::transport::{LocalNetwork, pump_client, serve};
use glam::{Quat, Vec3};

/// A world, its server and clients over a [`LocalNetwork`], as the bench's
/// backlog case runs them (serve, then every client pumps, then time
/// advances).
struct Lossy {
    world: World,
    entities: Vec<Entity>,
    server: Server,
    net: LocalNetwork,
    clients: Vec<(ClientId, World, Client)>,
    rng: Rng,
    movers: usize,
    delay: u32,
}

impl Lossy {
    fn new(seed: u64, clients: usize, entities: usize, movers: usize, config: ServerConfig, delay: u32) -> Lossy {
        let mut world = World::new();
        let side = (entities as f32).sqrt().ceil() as usize;
        let entities: Vec<Entity> = (0..entities)
            .map(|i| {
                let p = Vec3::new((i % side) as f32 * 0.5, (i / side) as f32 * 0.5, 0.0);
                world.spawn((Replicated, Position(p), Rotation(Quat::IDENTITY), Health(i as u32)))
            })
            .collect();
        let mut server = Server::new(&mut world, registry(), config);
        let mut net = LocalNetwork::new();
        let mut list = Vec::new();
        for i in 0..clients {
            let id = ClientId(i as u64 + 1);
            server.add_client(id, None).unwrap();
            net.connect(id, LinkConfig::clean(delay), LinkConfig::clean(delay), seed ^ (i as u64 * 0x9E37));
            let mut cw = World::new();
            let client = Client::new(&mut cw, &registry());
            list.push((id, cw, client));
        }
        let mut run = Lossy { world, entities, server, net, clients: list, rng: Rng(seed), movers, delay };
        // The join at the ceiling, until everyone is up to date.
        for _ in 0..400 {
            run.tick();
            if run.all_in_sync() && run.pending() == 0 {
                break;
            }
        }
        assert!(run.all_in_sync(), "the clients did not come up to date on a clean link");
        run
    }

    /// One tick: `movers` random entities move (a few also change health),
    /// the server serves, the clients pump, time advances.
    fn tick(&mut self) {
        for _ in 0..self.movers {
            let i = self.rng.below(self.entities.len());
            let d = Vec3::new(self.rng.unit() - 0.5, self.rng.unit() - 0.5, 0.0) * 0.2;
            self.world.get_mut::<Position>(self.entities[i]).unwrap().0 += d;
            if self.rng.below(8) == 0 {
                self.world.get_mut::<Health>(self.entities[i]).unwrap().0 += 1;
            }
        }
        serve(&mut self.server, &mut self.world, &mut self.net.server(), Duration::ZERO, None).unwrap();
        for (id, cw, client) in &mut self.clients {
            pump_client(client, cw, &mut self.net.client(*id), Duration::ZERO).unwrap();
        }
        self.net.advance();
    }

    fn set_links(&mut self, link: LinkConfig) {
        for (id, _, _) in &self.clients {
            self.net.set_links(*id, link, link);
        }
    }

    fn stats(&self, i: usize) -> ClientStats {
        self.server.client_stats(self.clients[i].0).unwrap()
    }

    fn pending(&self) -> usize {
        (0..self.clients.len()).map(|i| self.stats(i).pending).sum()
    }

    fn in_sync(&self, i: usize) -> bool {
        let (id, cw, client) = &self.clients[i];
        let at = CheckOptions { at: CheckAt::ClientApplied, ..CheckOptions::default() };
        // Before a client applied anything there is no tick to check at.
        check_client(&self.server, *id, client, cw, at).is_ok_and(|r| r.is_match())
    }

    fn all_in_sync(&self) -> bool {
        (0..self.clients.len()).all(|i| self.in_sync(i))
    }

    /// Bytes and entries sent to all clients so far.
    fn sent(&self) -> (u64, u64) {
        (0..self.clients.len()).map(|i| self.stats(i)).fold((0, 0), |(b, e), s| (b + s.bytes_sent, e + s.entries_sent))
    }
}

/// What a recovery took, per client: ticks from the first clean tick until
/// in sync, and the bound: backlog / ceiling + 2 ticks on the bench's link
/// of one tick each way (+ delay + 1 in general: the ticks a packet
/// travels, plus one).
struct Recovery {
    ticks: Vec<usize>,
    bounds: Vec<usize>,
    backlogs: Vec<usize>,
}

/// Runs `lossy` ticks on `bad`, then clears the link and ticks until every
/// client is in sync (checked after each tick).
fn recover(run: &mut Lossy, bad: LinkConfig, lossy: usize) -> Recovery {
    for _ in 0..20 {
        run.tick();
    }
    run.set_links(bad);
    let (bytes0, entries0) = run.sent();
    for _ in 0..lossy {
        run.tick();
    }
    let (bytes1, entries1) = run.sent();
    let entry_bytes = (bytes1 - bytes0) as f64 / (entries1 - entries0).max(1) as f64;
    let config = run.server.config();
    let ceiling = config.catch_up_budget_bytes.max(config.budget_bytes) as f64;
    let n = run.clients.len();
    let backlogs: Vec<usize> = (0..n).map(|i| run.stats(i).pending).collect();
    let bounds: Vec<usize> =
        backlogs.iter().map(|&p| (p as f64 * entry_bytes / ceiling).ceil() as usize + run.delay as usize + 1).collect();
    run.set_links(LinkConfig::clean(run.delay));
    // The first tick built on the clean link: a client has recovered once
    // it applied a packet of that tick or later and holds the server's
    // state as of the packet it applied (one that applied nothing since
    // the loss began trivially holds the state of its old tick).
    let clear = run.server.tick() + 1;
    let mut ticks = vec![0; n];
    let mut done = vec![false; n];
    for t in 1..=200 {
        run.tick();
        for i in 0..n {
            if !done[i] && run.clients[i].2.last_applied() >= clear && run.in_sync(i) {
                done[i] = true;
                ticks[i] = t;
            }
        }
        if done.iter().all(|d| *d) {
            break;
        }
    }
    assert!(done.iter().all(|d| *d), "some client never converged");
    Recovery { ticks, bounds, backlogs }
}

/// Every client converged within its bound plus `extra` ticks.
fn assert_within_bounds(r: &Recovery, extra: usize, what: &str) {
    for (i, (t, b)) in r.ticks.iter().zip(&r.bounds).enumerate() {
        assert!(
            *t <= b + extra,
            "{what}: client {i} converged in {t} ticks, bound {b} + {extra} (backlog {} entities)",
            r.backlogs[i]
        );
    }
}

fn config() -> ServerConfig {
    ServerConfig { budget_bytes: 600, catch_up_budget_bytes: 2400, ..ServerConfig::default() }
}

#[test]
fn half_loss_both_ways_converges_within_the_bound() {
    for seed in [1, 2, 3] {
        let mut run = Lossy::new(seed, 4, 800, 12, config(), 1);
        let bad = LinkConfig { loss: 0.5, ..LinkConfig::clean(1) };
        let r = recover(&mut run, bad, 60);
        assert!(r.backlogs.iter().any(|&b| b > 0), "the loss left no backlog");
        assert_within_bounds(&r, 0, &format!("50 % loss, seed {seed}"));
    }
}

#[test]
fn a_burst_of_total_loss_converges_within_the_bound_or_a_round_trip() {
    // Ten ticks of total loss, at one, two and three ticks each way. The
    // issue's bound is for the bench's link of one tick each way, its + 2
    // being the tick a packet travels plus one; here that part is the
    // delay + 1. When the last packet before the link cleared was lost,
    // nothing can show it before its acknowledgement is due, a round trip
    // after it went: it is taken for lost then if it fits the room left
    // under the steady budget, else at the timeout's margin (two ticks)
    // later, and arrives one way later: 3 x delay + 3 ticks after the
    // clear at most. At one tick each way that can be up to two ticks over
    // the bound when the backlog is under one ceiling (see the README's
    // limits).
    for (seed, delay) in [(4, 1), (5, 2), (6, 3)] {
        let mut run = Lossy::new(seed, 3, 800, 12, config(), delay);
        let bad = LinkConfig { loss: 1.0, ..LinkConfig::clean(delay) };
        let r = recover(&mut run, bad, 10);
        assert!(r.backlogs.iter().all(|&b| b > 0), "the burst left no backlog");
        for (i, (t, b)) in r.ticks.iter().zip(&r.bounds).enumerate() {
            let limit = (*b).max(3 * delay as usize + 3);
            assert!(*t <= limit, "{delay} tick(s) each way: client {i} converged in {t} ticks, limit {limit}");
        }
    }
}

#[test]
fn reordering_converges_within_the_bound() {
    // Up to `jitter` ticks of extra delay: packets overtake each other
    // (the client applies only packets newer than the newest applied, so
    // one overtaken is lost), and some are lost outright. A packet sent
    // just before the link cleared may still arrive `jitter` ticks late,
    // overtaken: the bound grows by those ticks.
    for (seed, jitter) in [(7, 1), (8, 2), (10, 3)] {
        let mut run = Lossy::new(seed, 3, 800, 12, config(), 1);
        let bad = LinkConfig { loss: 0.1, jitter, ..LinkConfig::clean(1) };
        let r = recover(&mut run, bad, 60);
        assert_within_bounds(&r, jitter as usize, &format!("jitter {jitter}, seed {seed}"));
    }
}

#[test]
fn on_a_clean_link_nothing_times_out() {
    // A fixed round trip: every acknowledgement comes when expected, so no
    // packet is taken for lost and nothing goes twice.
    for delay in [0, 1, 3] {
        let mut run = Lossy::new(9, 2, 800, 12, config(), delay);
        let before: Vec<ClientStats> = (0..2).map(|i| run.stats(i)).collect();
        for _ in 0..100 {
            run.tick();
        }
        for (i, b) in before.iter().enumerate() {
            let s = run.stats(i);
            assert_eq!(s.packets_timed_out, b.packets_timed_out, "delay {delay}: client {i} timed out packets");
            assert_eq!(s.entries_resent, b.entries_resent, "delay {delay}: client {i} resent entries");
        }
        assert!(run.all_in_sync());
    }
}
