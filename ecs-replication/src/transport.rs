//! Moving packets: a small trait for each end, the loops that pump a
//! [`Server`] or [`Client`] through it, an in-process implementation over
//! the link [`Conditioner`], and (feature `udp`) real UDP through renet with
//! renet_netcode: connect tokens, encrypted and authenticated datagrams,
//! fragmentation. Snapshots and acknowledgements ride renet's unreliable
//! channel. The codec, server and client know nothing of any of this.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use ecs_core::World;

use crate::client::{Client, Receipt};
use crate::conditioner::{Conditioner, LinkConfig};
use crate::input::ClientInput;
use crate::reliable::{ReliableConfig, ReliableEndpoint, is_reliable_datagram};
use crate::server::{ClientId, Server, ServerError, View};
use crate::session::{ClientSession, FrameReport, ServerSession};

/// A transport failure (socket, handshake, or protocol).
#[derive(Debug)]
pub struct TransportError(pub String);

impl std::fmt::Display for TransportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TransportError {}

/// A client came or went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectionEvent {
    /// A client connected.
    Connected(ClientId),
    /// A client disconnected.
    Disconnected(ClientId),
}

/// The server's end of a transport.
pub trait ServerTransport {
    /// Advances by `dt`: reads datagrams, runs timers, reports connections.
    fn update(&mut self, dt: Duration, events: &mut Vec<ConnectionEvent>) -> Result<(), TransportError>;
    /// Queues one unreliable datagram to a client.
    fn send(&mut self, client: ClientId, packet: &[u8]);
    /// The next datagram received from a client.
    fn receive(&mut self, client: ClientId) -> Option<Vec<u8>>;
    /// Queues one message to a client on the reliable ordered channel.
    fn send_message(&mut self, client: ClientId, message: &[u8]);
    /// The next message from a client on the reliable ordered channel, in
    /// the order it was sent.
    fn receive_message(&mut self, client: ClientId) -> Option<Vec<u8>>;
    /// Puts queued datagrams on the wire.
    fn flush(&mut self) -> Result<(), TransportError>;
}

/// A client's end of a transport.
pub trait ClientTransport {
    /// Advances by `dt`: reads datagrams, runs timers.
    fn update(&mut self, dt: Duration) -> Result<(), TransportError>;
    /// Whether the connection is up.
    fn is_connected(&self) -> bool;
    /// Queues one unreliable datagram to the server.
    fn send(&mut self, packet: &[u8]);
    /// The next datagram received from the server.
    fn receive(&mut self) -> Option<Vec<u8>>;
    /// Queues one message to the server on the reliable ordered channel.
    fn send_message(&mut self, message: &[u8]);
    /// The next message from the server on the reliable ordered channel.
    fn receive_message(&mut self) -> Option<Vec<u8>>;
    /// Puts queued datagrams on the wire.
    fn flush(&mut self) -> Result<(), TransportError>;
}

/// What one server step did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerStep {
    /// Clients that connected in this step.
    pub connected: Vec<ClientId>,
    /// Clients that left in this step.
    pub disconnected: Vec<ClientId>,
    /// Acknowledgements refused (malformed or naming unsent ticks).
    pub refused_acks: usize,
    /// Bytes of snapshot payload sent, per client.
    pub bytes: Vec<(ClientId, usize)>,
}

/// One server network tick through a transport: connections (new clients
/// get `view`), acknowledgements in, one update, snapshots out.
pub fn serve<T: ServerTransport>(
    server: &mut Server,
    world: &mut World,
    transport: &mut T,
    dt: Duration,
    view: Option<View>,
) -> Result<ServerStep, TransportError> {
    let mut events = Vec::new();
    transport.update(dt, &mut events)?;
    let mut step = ServerStep::default();
    for event in events {
        match event {
            ConnectionEvent::Connected(id) => {
                if server.add_client(id, view).is_ok() {
                    step.connected.push(id);
                }
            }
            ConnectionEvent::Disconnected(id) => {
                if server.remove_client(id).is_ok() {
                    step.disconnected.push(id);
                }
            }
        }
    }
    let ids: Vec<ClientId> = server.clients().collect();
    for id in &ids {
        while let Some(bytes) = transport.receive(*id) {
            if server.receive(*id, &bytes).is_err() {
                step.refused_acks += 1;
            }
        }
    }
    server.update(world).map_err(|e: ServerError| TransportError(e.to_string()))?;
    for (id, packet) in server.packets() {
        transport.send(id, packet);
        step.bytes.push((id, packet.len()));
    }
    transport.flush()?;
    Ok(step)
}

/// What one client step did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientStep {
    /// Packets applied.
    pub applied: usize,
    /// Old or duplicate packets ignored.
    pub stale: usize,
    /// Packets refused.
    pub refused: usize,
}

/// One client step through a transport: snapshots in, one acknowledgement
/// out, every step once anything was applied (an acknowledgement that
/// names nothing new repeats one that may have been lost, so the server
/// learns what arrived within a tick or two whatever the way back loses).
pub fn pump_client<T: ClientTransport>(
    client: &mut Client,
    world: &mut World,
    transport: &mut T,
    dt: Duration,
) -> Result<ClientStep, TransportError> {
    transport.update(dt)?;
    let mut step = ClientStep::default();
    while let Some(bytes) = transport.receive() {
        match client.receive(world, &bytes) {
            Ok(Receipt::Applied { .. }) => step.applied += 1,
            Ok(Receipt::Stale { .. }) => step.stale += 1,
            Err(_) => step.refused += 1,
        }
    }
    if client.has_ack() && transport.is_connected() {
        transport.send(&client.ack().to_bytes());
    }
    transport.flush()?;
    Ok(step)
}

/// One server tick of a game through a transport: [`serve_session_receive`],
/// `simulate` (the game's fixed step), [`serve_session_send`].
pub fn serve_session<I: ClientInput, T: ServerTransport + ?Sized>(
    session: &mut ServerSession<I>,
    world: &mut World,
    transport: &mut T,
    dt: Duration,
    view: Option<View>,
    simulate: impl FnOnce(&mut World),
) -> Result<ServerStep, TransportError> {
    let mut step = serve_session_receive(session, world, transport, dt, view)?;
    simulate(world);
    serve_session_send(session, world, transport, &mut step)?;
    Ok(step)
}

/// The first half of a server tick: connections (new clients get `view`),
/// datagrams and messages in, every client's input for the tick written
/// into its entities. The game's fixed step runs after it.
pub fn serve_session_receive<I: ClientInput, T: ServerTransport + ?Sized>(
    session: &mut ServerSession<I>,
    world: &mut World,
    transport: &mut T,
    dt: Duration,
    view: Option<View>,
) -> Result<ServerStep, TransportError> {
    let mut events = Vec::new();
    transport.update(dt, &mut events)?;
    let mut step = ServerStep::default();
    for event in events {
        match event {
            ConnectionEvent::Connected(id) => {
                if session.add_client(id, view).is_ok() {
                    step.connected.push(id);
                }
            }
            ConnectionEvent::Disconnected(id) => {
                if session.remove_client(id).is_ok() {
                    step.disconnected.push(id);
                }
            }
        }
    }
    let ids: Vec<ClientId> = session.server().clients().collect();
    for id in &ids {
        while let Some(bytes) = transport.receive(*id) {
            if session.receive(*id, &bytes).is_err() {
                step.refused_acks += 1;
            }
        }
        while let Some(message) = transport.receive_message(*id) {
            session.receive_message(*id, message);
        }
    }
    session.apply_inputs(world);
    Ok(step)
}

/// The second half of a server tick, after the game's fixed step: one
/// snapshot update, snapshots and messages out (their sizes into `step`).
pub fn serve_session_send<I: ClientInput, T: ServerTransport + ?Sized>(
    session: &mut ServerSession<I>,
    world: &mut World,
    transport: &mut T,
    step: &mut ServerStep,
) -> Result<(), TransportError> {
    session.update(world).map_err(|e: ServerError| TransportError(e.to_string()))?;
    for (id, packet) in session.packets() {
        transport.send(id, packet);
        step.bytes.push((id, packet.len()));
    }
    for (id, message) in session.take_outgoing_messages() {
        transport.send_message(id, &message);
    }
    transport.flush()
}

/// One client frame of a game through a transport: snapshots in, the
/// session's frame (reconcile, new ticks, see [`ClientSession::frame`]),
/// its upstream datagram out.
pub fn pump_session<I: ClientInput, T: ClientTransport + ?Sized>(
    session: &mut ClientSession<I>,
    world: &mut World,
    transport: &mut T,
    dt: Duration,
    input_for: impl FnMut(u32) -> I,
    simulate: impl FnMut(&mut World),
) -> Result<(ClientStep, FrameReport), TransportError> {
    transport.update(dt)?;
    let mut step = ClientStep::default();
    while let Some(bytes) = transport.receive() {
        match session.receive(world, &bytes) {
            Ok(Receipt::Applied { .. }) => step.applied += 1,
            Ok(Receipt::Stale { .. }) => step.stale += 1,
            Err(_) => step.refused += 1,
        }
    }
    while let Some(message) = transport.receive_message() {
        session.receive_message(message);
    }
    let report = session.frame(world, dt, input_for, simulate);
    let datagrams = session.take_datagrams();
    let messages = session.take_outgoing_messages();
    if transport.is_connected() {
        for d in &datagrams {
            transport.send(d);
        }
        for m in &messages {
            transport.send_message(m);
        }
    }
    transport.flush()?;
    Ok((step, report))
}

/// An in-process network: one conditioned link each way per client, time
/// counted in ticks. [`LocalNetwork::server`] and [`LocalNetwork::client`]
/// give the two ends as transports.
///
/// The reliable ordered channel is a [`ReliableEndpoint`] pair per client
/// whose datagrams ride the same conditioned links (loss, reordering,
/// duplication and corruption apply to them too).
#[derive(Debug, Default)]
pub struct LocalNetwork {
    now: u64,
    links: BTreeMap<ClientId, (Conditioner, Conditioner)>,
    /// Per client: the server's endpoint and the client's.
    reliable: BTreeMap<ClientId, (ReliableEndpoint, ReliableEndpoint)>,
    new_clients: Vec<ClientId>,
    to_server: BTreeMap<ClientId, VecDeque<Vec<u8>>>,
    to_client: BTreeMap<ClientId, VecDeque<Vec<u8>>>,
}

impl LocalNetwork {
    /// An empty network at tick 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a client with `down` (server to client) and `up` links.
    pub fn connect(&mut self, id: ClientId, down: LinkConfig, up: LinkConfig, seed: u64) {
        self.links.insert(id, (Conditioner::new(down, seed), Conditioner::new(up, seed ^ 0x5555)));
        let endpoint = || ReliableEndpoint::new(ReliableConfig::default());
        self.reliable.insert(id, (endpoint(), endpoint()));
        self.new_clients.push(id);
    }

    /// Changes both links of a client.
    pub fn set_links(&mut self, id: ClientId, down: LinkConfig, up: LinkConfig) {
        if let Some((d, u)) = self.links.get_mut(&id) {
            d.set_config(down);
            u.set_config(up);
        }
    }

    /// The current tick.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Advances time by one tick and delivers what is due (the reliable
    /// endpoints send what is due first).
    pub fn advance(&mut self) {
        for (id, (server, client)) in &mut self.reliable {
            if let Some((down, up)) = self.links.get_mut(id) {
                if let Some(d) = server.poll(self.now) {
                    down.send(self.now, &d);
                }
                if let Some(d) = client.poll(self.now) {
                    up.send(self.now, &d);
                }
            }
        }
        self.now += 1;
        let mut out = Vec::new();
        for (id, (down, up)) in &mut self.links {
            let Some((server_end, client_end)) = self.reliable.get_mut(id) else { continue };
            down.receive(self.now, &mut out);
            let queue = self.to_client.entry(*id).or_default();
            for d in out.drain(..) {
                if is_reliable_datagram(&d) {
                    // A corrupted one is refused by its checksum; the
                    // resend brings it.
                    let _ = client_end.receive(&d);
                } else {
                    queue.push_back(d);
                }
            }
            up.receive(self.now, &mut out);
            let queue = self.to_server.entry(*id).or_default();
            for d in out.drain(..) {
                if is_reliable_datagram(&d) {
                    let _ = server_end.receive(&d);
                } else {
                    queue.push_back(d);
                }
            }
        }
    }

    /// The server's end.
    pub fn server(&mut self) -> LocalServerEnd<'_> {
        LocalServerEnd { net: self }
    }

    /// One client's end.
    pub fn client(&mut self, id: ClientId) -> LocalClientEnd<'_> {
        LocalClientEnd { net: self, id }
    }
}

/// The server's end of a [`LocalNetwork`].
pub struct LocalServerEnd<'a> {
    net: &'a mut LocalNetwork,
}

impl ServerTransport for LocalServerEnd<'_> {
    fn update(&mut self, _dt: Duration, events: &mut Vec<ConnectionEvent>) -> Result<(), TransportError> {
        events.extend(self.net.new_clients.drain(..).map(ConnectionEvent::Connected));
        Ok(())
    }

    fn send(&mut self, client: ClientId, packet: &[u8]) {
        let now = self.net.now;
        if let Some((down, _)) = self.net.links.get_mut(&client) {
            down.send(now, packet);
        }
    }

    fn receive(&mut self, client: ClientId) -> Option<Vec<u8>> {
        self.net.to_server.get_mut(&client)?.pop_front()
    }

    fn send_message(&mut self, client: ClientId, message: &[u8]) {
        if let Some((server, _)) = self.net.reliable.get_mut(&client) {
            // Over the in-flight limit the message is dropped; a game
            // sending that much should batch.
            let _ = server.send(message.to_vec());
        }
    }

    fn receive_message(&mut self, client: ClientId) -> Option<Vec<u8>> {
        self.net.reliable.get_mut(&client)?.0.take()
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        Ok(())
    }
}

/// One client's end of a [`LocalNetwork`].
pub struct LocalClientEnd<'a> {
    net: &'a mut LocalNetwork,
    id: ClientId,
}

impl ClientTransport for LocalClientEnd<'_> {
    fn update(&mut self, _dt: Duration) -> Result<(), TransportError> {
        Ok(())
    }

    fn is_connected(&self) -> bool {
        self.net.links.contains_key(&self.id)
    }

    fn send(&mut self, packet: &[u8]) {
        let now = self.net.now;
        if let Some((_, up)) = self.net.links.get_mut(&self.id) {
            up.send(now, packet);
        }
    }

    fn receive(&mut self) -> Option<Vec<u8>> {
        self.net.to_client.get_mut(&self.id)?.pop_front()
    }

    fn send_message(&mut self, message: &[u8]) {
        if let Some((_, client)) = self.net.reliable.get_mut(&self.id) {
            let _ = client.send(message.to_vec());
        }
    }

    fn receive_message(&mut self) -> Option<Vec<u8>> {
        self.net.reliable.get_mut(&self.id)?.1.take()
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        Ok(())
    }
}

/// A [`LocalNetwork`] that several owners share (an app's resources, for
/// example): its ends own a handle instead of borrowing the network. Time
/// still moves only by [`LocalNetwork::advance`] (through
/// [`SharedNetwork::lock`]).
#[derive(Clone, Debug, Default)]
pub struct SharedNetwork(Arc<Mutex<LocalNetwork>>);

impl SharedNetwork {
    /// An empty network at tick 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// The network (a panic while it was locked does not poison it for
    /// others: its state stays consistent between calls).
    pub fn lock(&self) -> MutexGuard<'_, LocalNetwork> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An owned server end.
    pub fn server(&self) -> SharedServerEnd {
        SharedServerEnd(self.clone())
    }

    /// An owned end of one client.
    pub fn client(&self, id: ClientId) -> SharedClientEnd {
        SharedClientEnd(self.clone(), id)
    }
}

/// The server's end of a [`SharedNetwork`].
#[derive(Clone, Debug)]
pub struct SharedServerEnd(SharedNetwork);

impl ServerTransport for SharedServerEnd {
    fn update(&mut self, dt: Duration, events: &mut Vec<ConnectionEvent>) -> Result<(), TransportError> {
        self.0.lock().server().update(dt, events)
    }
    fn send(&mut self, client: ClientId, packet: &[u8]) {
        self.0.lock().server().send(client, packet)
    }
    fn receive(&mut self, client: ClientId) -> Option<Vec<u8>> {
        self.0.lock().server().receive(client)
    }
    fn send_message(&mut self, client: ClientId, message: &[u8]) {
        self.0.lock().server().send_message(client, message)
    }
    fn receive_message(&mut self, client: ClientId) -> Option<Vec<u8>> {
        self.0.lock().server().receive_message(client)
    }
    fn flush(&mut self) -> Result<(), TransportError> {
        Ok(())
    }
}

/// One client's end of a [`SharedNetwork`].
#[derive(Clone, Debug)]
pub struct SharedClientEnd(SharedNetwork, ClientId);

impl ClientTransport for SharedClientEnd {
    fn update(&mut self, _dt: Duration) -> Result<(), TransportError> {
        Ok(())
    }
    fn is_connected(&self) -> bool {
        self.0.lock().client(self.1).is_connected()
    }
    fn send(&mut self, packet: &[u8]) {
        self.0.lock().client(self.1).send(packet)
    }
    fn receive(&mut self) -> Option<Vec<u8>> {
        self.0.lock().client(self.1).receive()
    }
    fn send_message(&mut self, message: &[u8]) {
        self.0.lock().client(self.1).send_message(message)
    }
    fn receive_message(&mut self) -> Option<Vec<u8>> {
        self.0.lock().client(self.1).receive_message()
    }
    fn flush(&mut self) -> Result<(), TransportError> {
        Ok(())
    }
}

#[cfg(feature = "udp")]
pub mod udp;
