//! The backlog case: 128 clients each seeing a 10k-entity world, a random
//! 1 % of the entities moving each tick, every client behind a link with
//! one tick of delay each way. Steady state on a clean link, then 50 %
//! loss both ways for 300 ticks, then the link clears: server time per
//! client per tick in each phase, and ticks until every client holds the
//! server's state again ([`ecs_replication::check`], at the tick each
//! client applied last).

use std::time::{Duration, Instant};

use ecs_core::{Entity, World};
use ecs_examples::cubes::{CubePosition, CubeRotation, registry};
use ecs_replication::check::{CheckAt, CheckOptions, check_client};
use ecs_replication::prelude::*;
use ecs_replication::transport::{LocalNetwork, pump_client, serve};
use glam::{Quat, Vec3};

/// One-way delay of every link, in ticks.
pub const BACKLOG_LINK_DELAY: u32 = 1;

/// The world, the server and its clients over conditioned links.
pub struct BacklogRun {
    world: World,
    entities: Vec<Entity>,
    server: Server,
    net: LocalNetwork,
    clients: Vec<(ClientId, World, Client)>,
    movers: usize,
    rng: u64,
    step: f32,
}

/// What a phase of ticks cost and sent.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PhaseFigures {
    /// Server time of each tick (acknowledgements in, update, packets
    /// out), microseconds, all clients.
    pub tick_us: Vec<f64>,
    /// Bytes sent per client per tick, averaged.
    pub bytes_per_client_tick: f64,
    /// Entries sent per client per tick, averaged.
    pub entries_per_client_tick: f64,
}

/// The backlog when the link cleared.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Backlog {
    /// Entities with unacknowledged work (waiting or in flight), averaged
    /// over the clients.
    pub pending: f64,
    /// Of these, waiting in the send queue.
    pub queued: f64,
    /// The most pending on one client (the last to converge).
    pub max_pending: usize,
    /// Bytes per entry sent during the loss.
    pub entry_bytes: f64,
}

impl Backlog {
    /// The largest backlog of one client in bytes: every pending entity
    /// sent once more (an upper bound: some of them arrived and wait only
    /// for their acknowledgement).
    pub fn max_bytes(&self) -> f64 {
        self.max_pending as f64 * self.entry_bytes
    }
}

impl BacklogRun {
    /// `entities` cubes seen by `clients` clients (no view), `share` of
    /// them (a different random set each tick) moving per tick. Every
    /// client is brought up to date on a clean link first.
    pub fn new(entities: usize, clients: usize, share: f64) -> Result<BacklogRun, String> {
        let mut world = World::new();
        let side = (entities as f64).sqrt().ceil() as usize;
        let entities = world.spawn_batch((0..entities).map(|i| {
            let p = Vec3::new((i % side) as f32 * 0.5, (i / side) as f32 * 0.5, 0.0);
            (Replicated, CubePosition(p), CubeRotation(Quat::IDENTITY))
        }));
        let reg = registry().map_err(|e| e.to_string())?;
        let mut server = Server::new(&mut world, reg, ServerConfig::default());
        let mut net = LocalNetwork::new();
        let link = LinkConfig::clean(BACKLOG_LINK_DELAY);
        let mut list = Vec::with_capacity(clients);
        for i in 0..clients {
            let id = ClientId(i as u64 + 1);
            server.add_client(id, None).map_err(|e| e.to_string())?;
            net.connect(id, link, link, 0xB4C0 + i as u64);
            let mut cw = World::new();
            let client = Client::new(&mut cw, &registry().map_err(|e| e.to_string())?);
            list.push((id, cw, client));
        }
        let movers = (entities.len() as f64 * share).round() as usize;
        let mut run = BacklogRun { world, entities, server, net, clients: list, movers, rng: 0x9E37_79B9, step: 0.0 };
        // The join: a large budget so the sync takes a few ticks, then the
        // default one.
        run.server.set_budget_bytes(64 * 1024);
        for _ in 0..10_000 {
            run.tick(false)?;
            if run.pending() == 0 && run.in_sync().is_ok() {
                break;
            }
        }
        run.in_sync().map_err(|e| format!("the clients did not come up to date: {e}"))?;
        run.server.set_budget_bytes(ServerConfig::default().budget_bytes);
        Ok(run)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }

    /// Untimed: a random `share` of the entities moves a little.
    fn mutate(&mut self) {
        self.step += 0.05;
        let d = Vec3::new(self.step.sin() * 0.05, self.step.cos() * 0.05, 0.0);
        for _ in 0..self.movers {
            let i = (self.next() % self.entities.len() as u64) as usize;
            if let Ok(mut p) = self.world.get_mut::<CubePosition>(self.entities[i]) {
                p.0 += d;
            }
        }
    }

    /// One tick: the world moves (if `moving`), the server serves (timed),
    /// the clients receive and acknowledge, time advances. Returns the
    /// server time in microseconds.
    pub fn tick(&mut self, moving: bool) -> Result<f64, String> {
        if moving {
            self.mutate();
        }
        let start = Instant::now();
        serve(&mut self.server, &mut self.world, &mut self.net.server(), Duration::ZERO, None)
            .map_err(|e| e.to_string())?;
        let us = start.elapsed().as_secs_f64() * 1e6;
        for (id, cw, client) in &mut self.clients {
            pump_client(client, cw, &mut self.net.client(*id), Duration::ZERO).map_err(|e| e.to_string())?;
        }
        self.net.advance();
        Ok(us)
    }

    /// Runs `ticks` moving ticks.
    pub fn phase(&mut self, ticks: usize) -> Result<PhaseFigures, String> {
        let (bytes, entries) = self.sent();
        let mut tick_us = Vec::with_capacity(ticks);
        for _ in 0..ticks {
            tick_us.push(self.tick(true)?);
        }
        let (bytes2, entries2) = self.sent();
        let per = (ticks * self.clients.len()).max(1) as f64;
        Ok(PhaseFigures {
            tick_us,
            bytes_per_client_tick: (bytes2 - bytes) as f64 / per,
            entries_per_client_tick: (entries2 - entries) as f64 / per,
        })
    }

    /// Bytes and entries sent to all clients so far.
    fn sent(&self) -> (u64, u64) {
        self.clients
            .iter()
            .filter_map(|(id, _, _)| self.server.client_stats(*id))
            .fold((0, 0), |(b, e), s| (b + s.bytes_sent, e + s.entries_sent))
    }

    /// Entities with unacknowledged work, summed over the clients.
    fn pending(&self) -> usize {
        self.clients.iter().filter_map(|(id, _, _)| self.server.client_stats(*id)).map(|s| s.pending).sum()
    }

    /// The backlog now, averaged over the clients, with the bytes per entry
    /// of `phase`.
    pub fn backlog(&self, phase: &PhaseFigures) -> Backlog {
        let n = self.clients.len().max(1) as f64;
        let stats: Vec<_> = self.clients.iter().filter_map(|(id, _, _)| self.server.client_stats(*id)).collect();
        Backlog {
            pending: stats.iter().map(|s| s.pending).sum::<usize>() as f64 / n,
            queued: stats.iter().map(|s| s.queued).sum::<usize>() as f64 / n,
            max_pending: stats.iter().map(|s| s.pending).max().unwrap_or(0),
            entry_bytes: phase.bytes_per_client_tick / phase.entries_per_client_tick.max(1e-9),
        }
    }

    /// Sets every link (same delay).
    pub fn set_loss(&mut self, loss: f64) {
        let link = LinkConfig { loss, ..LinkConfig::clean(BACKLOG_LINK_DELAY) };
        for (id, _, _) in &self.clients {
            self.net.set_links(*id, link, link);
        }
    }

    /// Whether every client holds the server's state as of the tick it
    /// applied last (the check helper); the first mismatch report if not.
    pub fn in_sync(&self) -> Result<(), String> {
        let at = CheckOptions { at: CheckAt::ClientApplied, ..CheckOptions::default() };
        for (id, cw, client) in &self.clients {
            let report = check_client(&self.server, *id, client, cw, at).map_err(|e| e.to_string())?;
            if !report.is_match() {
                return Err(report.to_string());
            }
        }
        Ok(())
    }

    /// Whether every client applied a packet the server built at `tick` or
    /// later, and holds the server's state at the tick it applied (a client
    /// that applied nothing since `tick` is not caught up, however well it
    /// matches its older tick).
    pub fn caught_up_since(&self, tick: u32) -> Result<(), String> {
        if let Some((id, _, client)) = self.clients.iter().find(|(_, _, c)| c.last_applied() < tick) {
            return Err(format!("client {id:?} applied tick {} last, before tick {tick}", client.last_applied()));
        }
        self.in_sync()
    }

    /// The server's newest tick.
    pub fn server_tick(&self) -> u32 {
        self.server.tick()
    }

    /// Clients.
    pub fn clients(&self) -> usize {
        self.clients.len()
    }

    /// The server's configuration.
    pub fn config(&self) -> ServerConfig {
        self.server.config()
    }
}

/// The figures of one backlog run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BacklogFigures {
    /// Clean link, the world moving.
    pub steady: PhaseFigures,
    /// 50 % loss both ways.
    pub loss: PhaseFigures,
    /// After the link cleared.
    pub after: PhaseFigures,
    /// The backlog when it cleared.
    pub backlog: Backlog,
    /// Ticks from the first clean tick until every client had applied a
    /// packet built after the link cleared and held the server's state at
    /// the tick it applied.
    pub ticks_to_converge: usize,
}

/// Runs the case: `steady` clean ticks, `lossy` ticks at `loss` both ways,
/// then the link clears and ticks run until every client has applied a
/// packet built after the clear and is in sync (checked after each tick),
/// and `after` more.
pub fn backlog_case(
    run: &mut BacklogRun,
    steady: usize,
    lossy: usize,
    loss: f64,
    after: usize,
) -> Result<BacklogFigures, String> {
    // Settle into the steady state first.
    for _ in 0..30 {
        run.tick(true)?;
    }
    let steady = run.phase(steady)?;
    // On the clean link the clients keep up: in sync at the tick they
    // applied (give a tick whose changes overflowed the budget a few more).
    let mut tries = 0;
    while let Err(e) = run.in_sync() {
        tries += 1;
        if tries > 16 {
            return Err(format!("not in sync on the clean link: {e}"));
        }
        run.tick(true)?;
    }
    run.set_loss(loss);
    let loss_phase = run.phase(lossy)?;
    let backlog = run.backlog(&loss_phase);
    run.set_loss(0.0);
    let clear = run.server_tick() + 1;
    let mut converge = PhaseFigures::default();
    let mut ticks = 0;
    loop {
        let part = run.phase(1)?;
        converge.tick_us.extend(part.tick_us);
        ticks += 1;
        if run.caught_up_since(clear).is_ok() {
            break;
        }
        if ticks > 2000 {
            return Err("the clients did not converge after the link cleared".into());
        }
    }
    let mut after_phase = run.phase(after)?;
    after_phase.tick_us.splice(0..0, converge.tick_us);
    Ok(BacklogFigures { steady, loss: loss_phase, after: after_phase, backlog, ticks_to_converge: ticks })
}
