//! A playable session on each end: the pieces of a multiplayer game put
//! together, transport-agnostic (datagrams in, datagrams out).
//!
//! - [`ServerSession`]: the snapshot [`Server`], an [`InputBuffer`] per
//!   client, and the entities each client controls. Each tick
//!   ([`ServerSession::apply_inputs`], the game's systems, then
//!   [`ServerSession::update`]) it writes every client's input for the tick
//!   into its entities' [`PlayerInput`] and builds the snapshots.
//! - [`ClientSession`]: the snapshot [`Client`], the [`ClockSync`], the
//!   [`InputHistory`] and the [`Prediction`]. Each frame
//!   ([`ClientSession::frame`]) it marks the entities the server says it
//!   controls ([`ControlledBy`]) as predicted, reconciles the newest
//!   snapshot with its prediction (rolling back and re-simulating on a
//!   difference), runs the new ticks with fresh inputs, and queues one
//!   upstream datagram (acknowledgement, timestamp, inputs).
//!
//! The game's fixed-step simulation is a `FnMut(&mut World)` the same on
//! both ends, reading [`PlayerInput`]: on the server every controlled
//! entity carries its client's input, on a client only its own predicted
//! entities do. [`crate::transport::serve_session`] and
//! [`crate::transport::pump_session`] drive both through a transport.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use ecs_core::{Changed, Component, Entity, QueryState, With, World};

use crate::client::{Client, ClientError, InterpolationConfig, Receipt};
use crate::clock::{ClockConfig, ClockSync};
use crate::codec::NetId;
use crate::input::{ClientInput, InputBuffer, InputHistory, InputSource, InputStats, is_upstream};
use crate::prediction::{Prediction, PredictionStats};
use crate::registry::{Predicted, Registry, RegistryError};
use crate::reliable::{MessageError, NetMessage, decode_message, encode_message};
use crate::server::{ClientId, Server, ServerError, View};
use crate::tick::{next_tick, tick_newer};

/// The input a controlled entity acts on this tick.
#[derive(Component, Clone, Debug, Default, PartialEq)]
pub struct PlayerInput<I>(pub I);

/// Which client controls an entity (the transport's client id). Replicated
/// ([`ControlledBy::register`]), so each client learns which entities to
/// predict.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct ControlledBy(pub u64);

impl ControlledBy {
    /// Registers the component (name `controlled_by`), on both ends.
    pub fn register(registry: Registry) -> Result<Registry, RegistryError> {
        registry.pod::<ControlledBy>("controlled_by")
    }
}

/// The server end of a game. See the [module docs](self).
pub struct ServerSession<I: ClientInput> {
    server: Server,
    inputs: BTreeMap<ClientId, InputBuffer<I>>,
    /// The source of each client's input at the latest tick.
    sources: BTreeMap<ClientId, InputSource>,
    messages: Mailbox<(ClientId, Vec<u8>)>,
    outgoing: Vec<(ClientId, Vec<u8>)>,
    /// Bytes received per client (datagrams and messages).
    upstream: BTreeMap<ClientId, u64>,
}

/// Received messages waiting to be taken, bounded.
struct Mailbox<T> {
    queue: VecDeque<T>,
    dropped: u64,
    refused: u64,
}

impl<T> Default for Mailbox<T> {
    fn default() -> Self {
        Mailbox { queue: VecDeque::new(), dropped: 0, refused: 0 }
    }
}

impl<T> Mailbox<T> {
    fn push(&mut self, item: T) {
        if self.queue.len() >= MAX_QUEUED_MESSAGES {
            self.dropped += 1;
        } else {
            self.queue.push_back(item);
        }
    }
}

/// Received messages a session holds; further ones are dropped (a
/// game that never takes its messages does not grow without bound).
pub const MAX_QUEUED_MESSAGES: usize = 4096;

/// Counters of a session's reliable messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MessageStats {
    /// Messages dropped because the mailbox was full.
    pub dropped: u64,
    /// Messages that did not decode as the type asked for.
    pub refused: u64,
}

impl<I: ClientInput> ServerSession<I> {
    /// A session around a snapshot server.
    pub fn new(server: Server) -> Self {
        ServerSession {
            server,
            inputs: BTreeMap::new(),
            sources: BTreeMap::new(),
            messages: Mailbox::default(),
            outgoing: Vec::new(),
            upstream: BTreeMap::new(),
        }
    }

    /// Bytes received from a client so far (datagrams and messages,
    /// payload only).
    pub fn upstream_bytes(&self, id: ClientId) -> u64 {
        self.upstream.get(&id).copied().unwrap_or(0)
    }

    /// Queues a message to a client on the reliable ordered channel.
    pub fn send_message<M: NetMessage>(&mut self, id: ClientId, message: &M) -> Result<(), MessageError> {
        self.outgoing.push((id, encode_message(message)?));
        Ok(())
    }

    /// Queues a message to every client.
    pub fn broadcast_message<M: NetMessage>(&mut self, message: &M) -> Result<(), MessageError> {
        let bytes = encode_message(message)?;
        for id in self.server.clients() {
            self.outgoing.push((id, bytes.clone()));
        }
        Ok(())
    }

    /// Takes a message that arrived on the reliable channel (what the
    /// transport loop calls).
    pub fn receive_message(&mut self, id: ClientId, bytes: Vec<u8>) {
        *self.upstream.entry(id).or_default() += bytes.len() as u64;
        self.messages.push((id, bytes));
    }

    /// The messages received since the last call, in order per client,
    /// decoded as `M`; ones that do not decode are dropped and counted
    /// ([`ServerSession::message_stats`]).
    pub fn take_messages<M: NetMessage>(&mut self) -> Vec<(ClientId, M)> {
        let mut out = Vec::with_capacity(self.messages.queue.len());
        for (id, bytes) in self.messages.queue.drain(..) {
            match decode_message::<M>(&bytes) {
                Ok(m) => out.push((id, m)),
                Err(_) => self.messages.refused += 1,
            }
        }
        out
    }

    /// The messages to send (what the transport loop calls).
    pub fn take_outgoing_messages(&mut self) -> Vec<(ClientId, Vec<u8>)> {
        std::mem::take(&mut self.outgoing)
    }

    /// The message counters.
    pub fn message_stats(&self) -> MessageStats {
        MessageStats { dropped: self.messages.dropped, refused: self.messages.refused }
    }

    /// The snapshot server.
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// The snapshot server, to configure.
    pub fn server_mut(&mut self) -> &mut Server {
        &mut self.server
    }

    /// Adds a client.
    pub fn add_client(&mut self, id: ClientId, view: Option<View>) -> Result<(), ServerError> {
        self.server.add_client(id, view)?;
        self.inputs.insert(id, InputBuffer::new(64));
        Ok(())
    }

    /// Removes a client (its entities stay; despawn them if they should go).
    pub fn remove_client(&mut self, id: ClientId) -> Result<(), ServerError> {
        self.inputs.remove(&id);
        self.sources.remove(&id);
        self.server.remove_client(id)
    }

    /// Gives `entity` to a client: it gets [`ControlledBy`] and a
    /// [`PlayerInput`], goes in every packet to that client, and receives
    /// that client's inputs.
    pub fn set_controlled(&mut self, world: &mut World, id: ClientId, entity: Entity) -> Result<(), ServerError> {
        self.server.set_controlled(id, entity, true)?;
        let _ = world.insert(entity, (ControlledBy(id.0), PlayerInput(I::default())));
        Ok(())
    }

    /// Takes `entity` back from a client: it loses [`ControlledBy`] and its
    /// [`PlayerInput`], and no longer goes in every packet to that client
    /// (a despawned entity is released by itself).
    pub fn release_controlled(&mut self, world: &mut World, id: ClientId, entity: Entity) -> Result<(), ServerError> {
        self.server.set_controlled(id, entity, false)?;
        if world.get::<ControlledBy>(entity).is_ok_and(|c| c.0 == id.0) {
            let _ = world.remove_one::<ControlledBy>(entity);
            let _ = world.remove_one::<PlayerInput<I>>(entity);
        }
        Ok(())
    }

    /// Takes one datagram from a client (acknowledgement or upstream).
    pub fn receive(&mut self, id: ClientId, bytes: &[u8]) -> Result<(), ServerError> {
        *self.upstream.entry(id).or_default() += bytes.len() as u64;
        self.server.receive(id, bytes)?;
        if is_upstream(bytes)
            && let Some(buffer) = self.inputs.get_mut(&id)
        {
            buffer.receive(bytes, self.server.tick()).map_err(ServerError::Upstream)?;
        }
        Ok(())
    }

    /// Writes every client's input for the next tick into its controlled
    /// entities' [`PlayerInput`] (the last one repeated if it is late).
    /// Returns the tick the inputs are for: the one [`ServerSession::update`]
    /// builds next.
    pub fn apply_inputs(&mut self, world: &mut World) -> u32 {
        let tick = next_tick(self.server.tick());
        for (id, buffer) in &mut self.inputs {
            let (input, source) = buffer.take(tick);
            self.sources.insert(*id, source);
            for entity in self.server.controlled(*id) {
                if let Ok(mut slot) = world.get_mut::<PlayerInput<I>>(*entity) {
                    slot.0 = input.clone();
                }
            }
        }
        tick
    }

    /// One network tick: the snapshots of `world` as the game's systems
    /// left it.
    pub fn update(&mut self, world: &mut World) -> Result<(), ServerError> {
        self.server.update(world)
    }

    /// The packets of the latest update.
    pub fn packets(&self) -> impl Iterator<Item = (ClientId, &[u8])> + '_ {
        self.server.packets()
    }

    /// A client's input counters.
    pub fn input_stats(&self, id: ClientId) -> Option<InputStats> {
        self.inputs.get(&id).map(|b| b.stats())
    }

    /// Where a client's input of the latest tick came from.
    pub fn input_source(&self, id: ClientId) -> Option<InputSource> {
        self.sources.get(&id).copied()
    }
}

/// How a client session runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClientSessionConfig {
    /// The clock (tick rate, margins).
    pub clock: ClockConfig,
    /// Older inputs repeated in each datagram (default 3).
    pub redundancy: usize,
    /// Ticks of inputs and saved predictions kept (default 128: two
    /// seconds at 60 Hz; a round trip longer than that cannot be
    /// reconciled).
    pub history: usize,
    /// Whether to predict controlled entities (default true; false: they
    /// are shown as the snapshots say, a round trip late).
    pub predict: bool,
    /// Interpolation of remote entities into the world (default on;
    /// `None`: snapshots are written as they arrive).
    pub interpolation: Option<InterpolationConfig>,
    /// Ticks of buffer behind the newest expected snapshot at which remote
    /// entities are rendered (default 2: one lost packet in a row is
    /// bridged by interpolation, more by capped extrapolation).
    pub interpolation_delay: f64,
}

impl Default for ClientSessionConfig {
    fn default() -> Self {
        ClientSessionConfig {
            clock: ClockConfig::default(),
            redundancy: 3,
            history: 128,
            predict: true,
            interpolation: Some(InterpolationConfig::default()),
            interpolation_delay: 2.0,
        }
    }
}

/// What one client frame did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameReport {
    /// New ticks simulated.
    pub ticks: u32,
    /// Whether a misprediction was corrected (rolled back and
    /// re-simulated).
    pub rolled_back: bool,
    /// Whether the clock jumped.
    pub jumped: bool,
    /// Remote entities whose rendered state was computed.
    pub interpolated: usize,
    /// Of these, past their newest snapshot (extrapolated or held).
    pub extrapolated: usize,
}

/// The client end of a game. See the [module docs](self).
pub struct ClientSession<I: ClientInput> {
    id: ClientId,
    config: ClientSessionConfig,
    client: Client,
    clock: ClockSync,
    history: InputHistory<I>,
    prediction: Prediction,
    controlled: QueryState<(Entity, &'static NetId, &'static ControlledBy), Changed<ControlledBy>>,
    inputs: QueryState<&'static mut PlayerInput<I>, With<Predicted>>,
    outbox: Vec<Vec<u8>>,
    messages: Mailbox<Vec<u8>>,
    outgoing: Vec<Vec<u8>>,
    /// Bytes sent and received (payload: datagrams and messages).
    traffic: (u64, u64),
}

impl<I: ClientInput> ClientSession<I> {
    /// A session for client `id` (the transport's id) writing into `world`.
    pub fn new(world: &mut World, registry: &Registry, id: ClientId, config: ClientSessionConfig) -> Self {
        let mut client = Client::new(world, registry);
        client.set_interpolation(config.interpolation);
        ClientSession {
            id,
            config,
            client,
            clock: ClockSync::new(config.clock),
            history: InputHistory::new(config.history),
            prediction: Prediction::new(world, registry, config.history),
            controlled: QueryState::new(world),
            inputs: QueryState::new(world),
            outbox: Vec::new(),
            messages: Mailbox::default(),
            outgoing: Vec::new(),
            traffic: (0, 0),
        }
    }

    /// Payload bytes sent and received so far (datagrams and messages).
    pub fn traffic(&self) -> (u64, u64) {
        self.traffic
    }

    /// Queues a message to the server on the reliable ordered channel.
    pub fn send_message<M: NetMessage>(&mut self, message: &M) -> Result<(), MessageError> {
        self.outgoing.push(encode_message(message)?);
        Ok(())
    }

    /// Takes a message that arrived on the reliable channel (what the
    /// transport loop calls).
    pub fn receive_message(&mut self, bytes: Vec<u8>) {
        self.traffic.1 += bytes.len() as u64;
        self.messages.push(bytes);
    }

    /// The messages received since the last call, in order, decoded as
    /// `M`; ones that do not decode are dropped and counted.
    pub fn take_messages<M: NetMessage>(&mut self) -> Vec<M> {
        let mut out = Vec::with_capacity(self.messages.queue.len());
        for bytes in self.messages.queue.drain(..) {
            match decode_message::<M>(&bytes) {
                Ok(m) => out.push(m),
                Err(_) => self.messages.refused += 1,
            }
        }
        out
    }

    /// The messages to send (what the transport loop calls).
    pub fn take_outgoing_messages(&mut self) -> Vec<Vec<u8>> {
        self.traffic.0 += self.outgoing.iter().map(|d| d.len() as u64).sum::<u64>();
        std::mem::take(&mut self.outgoing)
    }

    /// The message counters.
    pub fn message_stats(&self) -> MessageStats {
        MessageStats { dropped: self.messages.dropped, refused: self.messages.refused }
    }

    /// This client's id.
    pub fn id(&self) -> ClientId {
        self.id
    }

    /// The snapshot client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The clock.
    pub fn clock(&self) -> &ClockSync {
        &self.clock
    }

    /// The prediction counters.
    pub fn prediction_stats(&self) -> PredictionStats {
        self.prediction.stats()
    }

    /// The input this client used for `tick`, if still held.
    pub fn input(&self, tick: u32) -> Option<&I> {
        self.history.get(tick)
    }

    /// Takes one datagram from the server.
    pub fn receive(&mut self, world: &mut World, bytes: &[u8]) -> Result<Receipt, ClientError> {
        self.traffic.1 += bytes.len() as u64;
        let receipt = self.client.receive(world, bytes)?;
        if let Receipt::Applied { tick, .. } = receipt {
            self.clock.on_snapshot(tick, self.client.time_sync());
        }
        Ok(receipt)
    }

    /// One frame of `dt`: predicted entities marked, the newest snapshot
    /// reconciled, new ticks run (`input_for(tick)` samples the input,
    /// `simulate` is the game's fixed step), one upstream datagram queued
    /// ([`ClientSession::take_datagrams`]).
    pub fn frame(
        &mut self,
        world: &mut World,
        dt: Duration,
        mut input_for: impl FnMut(u32) -> I,
        mut simulate: impl FnMut(&mut World),
    ) -> FrameReport {
        let mut report = FrameReport::default();
        if self.config.predict {
            self.mark_controlled(world);
        }
        let current = self.clock.tick();
        {
            let (history, inputs) = (&self.history, &mut self.inputs);
            report.rolled_back = self.prediction.reconcile(world, &self.client, current, |world, tick| {
                if let Some(input) = history.get(tick) {
                    inputs.for_each_mut(world, |mut slot| slot.0 = input.clone());
                }
                simulate(world);
            });
        }
        let jumps = self.clock.jumps();
        let steps = self.clock.advance(dt);
        report.jumped = self.clock.jumps() != jumps;
        if report.jumped {
            self.prediction.clear();
        }
        let last = self.clock.tick();
        let mut tick = last.wrapping_sub(steps.saturating_sub(1));
        if tick == 0 {
            tick = 1;
        }
        for _ in 0..steps {
            let input = input_for(tick);
            if self.history.newest().is_none_or(|n| tick_newer(tick, n)) {
                self.history.push(tick, input.clone());
            }
            self.inputs.for_each_mut(world, |mut slot| slot.0 = input.clone());
            simulate(world);
            self.prediction.save(world, tick);
            tick = next_tick(tick);
        }
        report.ticks = steps;
        if let Some(render) = self.clock.interpolation_tick(self.config.interpolation_delay) {
            let stats = self.client.interpolate(world, render);
            report.interpolated = stats.sampled;
            report.extrapolated = stats.extrapolated;
        }
        let ack = self.client.has_ack().then(|| self.client.ack());
        self.outbox.push(self.history.datagram(ack, self.clock.timestamp(), self.config.redundancy));
        report
    }

    /// Starts predicting the entities the server says this client controls.
    fn mark_controlled(&mut self, world: &mut World) {
        let mut mine: Vec<(Entity, NetId)> = Vec::new();
        let id = self.id.0;
        self.controlled.for_each(world, |(entity, net, by)| {
            if by.0 == id {
                mine.push((entity, *net));
            }
        });
        for (entity, net) in mine {
            if !self.client.is_predicted(net) {
                self.client.set_predicted(world, net, true);
                let _ = world.insert_one(entity, PlayerInput(I::default()));
            }
        }
    }

    /// The datagrams to send, oldest first.
    pub fn take_datagrams(&mut self) -> Vec<Vec<u8>> {
        self.traffic.0 += self.outbox.iter().map(|d| d.len() as u64).sum::<u64>();
        std::mem::take(&mut self.outbox)
    }
}
