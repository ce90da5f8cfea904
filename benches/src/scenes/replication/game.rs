//! Multiplayer scenes: the arena game of `ecs-examples` (server and
//! clients in one process over the in-process link conditioner), for the
//! input upstream size, the prediction's match rate under a bad link, and
//! the client's cost of a tick with and without prediction.

use std::time::{Duration, Instant};

use ecs_core::Entity;
use ecs_examples::arena::{ArenaClient, ArenaServer, Pos};
use ecs_replication::prelude::*;
use ecs_replication::session::ClientSessionConfig;
use ecs_replication::transport::{ClientTransport, LocalNetwork, TransportError, serve_session};
use glam::Vec3;

/// One fixed step.
pub const DT: Duration = Duration::from_nanos(16_666_667);

/// A client end that counts what it sends.
struct Counting<'a, T> {
    inner: T,
    datagrams: &'a mut (u64, u64, usize),
}

impl<T: ClientTransport> ClientTransport for Counting<'_, T> {
    fn update(&mut self, dt: Duration) -> Result<(), TransportError> {
        self.inner.update(dt)
    }
    fn is_connected(&self) -> bool {
        self.inner.is_connected()
    }
    fn send(&mut self, packet: &[u8]) {
        self.datagrams.0 += 1;
        self.datagrams.1 += packet.len() as u64;
        self.datagrams.2 = self.datagrams.2.max(packet.len());
        self.inner.send(packet)
    }
    fn receive(&mut self) -> Option<Vec<u8>> {
        self.inner.receive()
    }
    fn send_message(&mut self, message: &[u8]) {
        self.inner.send_message(message)
    }
    fn receive_message(&mut self) -> Option<Vec<u8>> {
        self.inner.receive_message()
    }
    fn flush(&mut self) -> Result<(), TransportError> {
        self.inner.flush()
    }
}

/// The arena: a server, `n` scripted clients, and `props` drifting
/// replicated props the clients interpolate, over a [`LocalNetwork`].
pub struct ArenaRun {
    server: ArenaServer,
    clients: Vec<(ClientId, ArenaClient)>,
    net: LocalNetwork,
    props: Vec<Entity>,
    frame: u64,
    /// Upstream datagrams: count, bytes, largest.
    pub datagrams: (u64, u64, usize),
    /// Client time per frame (receive + frame), us, of client 0.
    pub client_us: Vec<f64>,
}

/// What an arena run measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ArenaFigures {
    /// Upstream bytes per datagram, mean.
    pub upstream_bytes: f64,
    /// Largest upstream datagram.
    pub upstream_max: usize,
    /// Predictions compared with the server, over the clients.
    pub comparisons: u64,
    /// Of these, mispredictions.
    pub mispredictions: u64,
    /// Rollbacks per second, per client.
    pub corrections_per_s: f64,
    /// Ticks whose input arrived late at the server, over the clients.
    pub late_inputs: u64,
    /// Ticks with a client input at the server.
    pub inputs: u64,
    /// Snapshot kbps per client.
    pub kbps_down: f64,
    /// Upstream payload kbps per client.
    pub kbps_up: f64,
}

impl ArenaRun {
    /// `clients` clients on `link` each way, predicting or not.
    pub fn new(clients: usize, props: usize, link: LinkConfig, predict: bool) -> Result<ArenaRun, String> {
        let mut server = ArenaServer::new()?;
        let mut net = LocalNetwork::new();
        let mut list = Vec::new();
        for i in 0..clients {
            let id = ClientId(1 + i as u64);
            net.connect(id, link, link, 77 + i as u64);
            let mut client = ArenaClient::new(id, i as u64)?;
            if !predict {
                let mut world = ecs_core::World::new();
                let registry = ecs_examples::arena::registry().map_err(|e| e.to_string())?;
                let config = ClientSessionConfig { predict: false, ..ClientSessionConfig::default() };
                client.session = ecs_replication::session::ClientSession::new(&mut world, &registry, id, config);
                client.world = world;
            }
            list.push((id, client));
        }
        let side = (props as f64).sqrt().ceil().max(1.0) as usize;
        let props = (0..props)
            .map(|i| {
                let p = Vec3::new((i % side) as f32 * 0.3 - 15.0, (i / side) as f32 * 0.3 - 15.0, 0.0);
                server.world.spawn((Replicated, Pos(p)))
            })
            .collect();
        Ok(ArenaRun { server, clients: list, net, props, frame: 0, datagrams: (0, 0, 0), client_us: Vec::new() })
    }

    /// One frame: props drift (a tenth of them each tick), the server
    /// ticks, every client frames (client 0 timed), time advances.
    pub fn frame(&mut self) -> Result<(), String> {
        self.frame += 1;
        let phase = self.frame as f32 * 0.05;
        let d = Vec3::new(phase.sin(), phase.cos(), 0.0) * 0.02;
        for (i, e) in self.props.iter().enumerate() {
            if i as u64 % 10 == self.frame % 10
                && let Ok(mut p) = self.server.world.get_mut::<Pos>(*e)
            {
                p.0 = (p.0 + d).clamp(Vec3::splat(-19.0), Vec3::splat(19.0));
            }
        }
        self.server.fire();
        let step = serve_session(
            &mut self.server.session,
            &mut self.server.world,
            &mut self.net.server(),
            DT,
            None,
            ecs_examples::arena::simulate,
        )
        .map_err(|e| e.to_string())?;
        self.server.step();
        for id in step.connected {
            self.server.join(id);
        }
        for (i, (id, client)) in self.clients.iter_mut().enumerate() {
            let mut end = Counting { inner: self.net.client(*id), datagrams: &mut self.datagrams };
            let start = Instant::now();
            client.frame(&mut end, DT)?;
            if i == 0 {
                self.client_us.push(start.elapsed().as_secs_f64() * 1e6);
            }
        }
        self.net.advance();
        Ok(())
    }

    /// The prediction counters of client 0.
    pub fn prediction_stats(&self) -> ecs_replication::prediction::PredictionStats {
        self.clients.first().map(|(_, c)| c.session.prediction_stats()).unwrap_or_default()
    }

    /// Changes both links of every client.
    pub fn set_links(&mut self, link: LinkConfig) {
        for (id, _) in &self.clients {
            self.net.set_links(*id, link, link);
        }
    }

    /// Forgets the counters so far (after a warm-up).
    pub fn reset_counters(&mut self) {
        self.datagrams = (0, 0, 0);
        self.client_us.clear();
    }

    /// The figures of `frames` frames.
    pub fn measure(&mut self, frames: u64) -> Result<ArenaFigures, String> {
        let before: Vec<_> = self.clients.iter().map(|(_, c)| c.session.prediction_stats()).collect();
        let inputs_before: Vec<_> =
            self.clients.iter().map(|(id, _)| self.server.session.input_stats(*id).unwrap_or_default()).collect();
        let down_before: Vec<u64> = self
            .clients
            .iter()
            .map(|(id, _)| self.server.session.server().client_stats(*id).map_or(0, |s| s.bytes_sent))
            .collect();
        let up_before: Vec<u64> = self.clients.iter().map(|(id, _)| self.server.session.upstream_bytes(*id)).collect();
        self.reset_counters();
        for _ in 0..frames {
            self.frame()?;
        }
        let seconds = frames as f64 / 60.0;
        let mut f = ArenaFigures {
            upstream_bytes: self.datagrams.1 as f64 / self.datagrams.0.max(1) as f64,
            upstream_max: self.datagrams.2,
            ..ArenaFigures::default()
        };
        let n = self.clients.len().max(1) as f64;
        for (i, (id, c)) in self.clients.iter().enumerate() {
            let s = c.session.prediction_stats();
            f.comparisons += s.comparisons - before[i].comparisons;
            f.mispredictions += s.mispredictions - before[i].mispredictions;
            f.corrections_per_s += (s.rollbacks - before[i].rollbacks) as f64 / seconds / n;
            let inputs = self.server.session.input_stats(*id).unwrap_or_default();
            f.late_inputs += inputs.late - inputs_before[i].late;
            f.inputs += inputs.on_time + inputs.late - inputs_before[i].on_time - inputs_before[i].late;
            let down = self.server.session.server().client_stats(*id).map_or(0, |s| s.bytes_sent) - down_before[i];
            f.kbps_down += down as f64 * 8.0 / seconds / 1000.0 / n;
            f.kbps_up += (self.server.session.upstream_bytes(*id) - up_before[i]) as f64 * 8.0 / seconds / 1000.0 / n;
        }
        Ok(f)
    }
}
