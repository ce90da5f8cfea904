//! Real UDP on loopback (or anywhere) through renet and renet_netcode.
//!
//! The server holds a private key; a client connects with a connect token
//! made from that key (netcode.io: the token names the server addresses and
//! expires; every datagram after the handshake is encrypted and
//! authenticated). renet fragments messages larger than a datagram and
//! carries the snapshots on its unreliable channel.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use renet::{ConnectionConfig, DefaultChannel, RenetClient, RenetServer, ServerEvent};
use renet_netcode::{
    ClientAuthentication, ConnectToken, NETCODE_KEY_BYTES, NetcodeClientTransport, NetcodeServerTransport,
    ServerAuthentication, ServerConfig,
};

use ecs_core::World;

use super::{ClientTransport, ConnectionEvent, ServerStep, ServerTransport, TransportError, pump_client, serve};
use crate::client::Client;
use crate::conditioner::{Conditioner, LinkConfig, LinkStats};
use crate::registry::Registry;
use crate::server::{ClientId, Server, View};

/// A netcode private key (32 bytes).
pub type PrivateKey = [u8; NETCODE_KEY_BYTES];

/// A key for demos and tests on one machine. Real deployments keep the
/// key on the server and hand out connect tokens from a backend.
pub const DEMO_KEY: PrivateKey = *b"ecs-replication demo key 32 byte";

fn now() -> Result<Duration, TransportError> {
    SystemTime::now().duration_since(UNIX_EPOCH).map_err(|e| TransportError(format!("system clock: {e}")))
}

fn err<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> TransportError + '_ {
    move |e| TransportError(format!("{what}: {e}"))
}

/// The server end over UDP.
pub struct UdpServer {
    server: RenetServer,
    transport: NetcodeServerTransport,
    address: SocketAddr,
    protocol_id: u64,
    key: PrivateKey,
}

impl UdpServer {
    /// Binds `address` (port 0: any free port) for up to `max_clients`.
    /// `protocol_id` must match the clients' (derive it from the schema
    /// hash so mismatched builds cannot connect).
    pub fn bind(
        address: SocketAddr,
        max_clients: usize,
        protocol_id: u64,
        key: PrivateKey,
    ) -> Result<UdpServer, TransportError> {
        let socket = UdpSocket::bind(address).map_err(err("bind"))?;
        let address = socket.local_addr().map_err(err("local address"))?;
        let config = ServerConfig {
            current_time: now()?,
            max_clients,
            protocol_id,
            public_addresses: vec![address],
            authentication: ServerAuthentication::Secure { private_key: key },
        };
        let transport = NetcodeServerTransport::new(config, socket).map_err(err("netcode server"))?;
        Ok(UdpServer { server: RenetServer::new(ConnectionConfig::default()), transport, address, protocol_id, key })
    }

    /// The bound address.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// A connect token for `client` (valid 300 s), made with this server's
    /// key.
    pub fn connect_token(&self, client: u64) -> Result<ConnectToken, TransportError> {
        connect_token(self.address, self.protocol_id, &self.key, client)
    }

    /// Clients connected now.
    pub fn connected_clients(&self) -> usize {
        self.server.connected_clients()
    }
}

/// A connect token for `client` to the server at `address`, made with the
/// server's `key`.
pub fn connect_token(
    address: SocketAddr,
    protocol_id: u64,
    key: &PrivateKey,
    client: u64,
) -> Result<ConnectToken, TransportError> {
    connect_token_via(&[address], protocol_id, key, client)
}

/// A connect token naming several addresses: the client tries them in
/// order, and the server accepts the token if its own address is among
/// them. Through a [`LinkProxy`]: `[proxy, server]`.
pub fn connect_token_via(
    addresses: &[SocketAddr],
    protocol_id: u64,
    key: &PrivateKey,
    client: u64,
) -> Result<ConnectToken, TransportError> {
    ConnectToken::generate(now()?, protocol_id, 300, client, 15, addresses.to_vec(), None, key)
        .map_err(err("connect token"))
}

/// A UDP relay between one client and a server that conditions both
/// directions (latency, jitter, loss, duplication) with a [`Conditioner`]
/// counting milliseconds: the whole stack above (netcode, renet's
/// reliable channel, snapshots, inputs) sees a bad link. It runs on its own
/// thread until dropped. Connect with [`connect_token_via`]`(&[proxy.address(), server], ..)`.
///
/// Datagrams only go to the server, and back only to the first client
/// address that sent one (others are dropped), so it is no open relay.
pub struct LinkProxy {
    address: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<LinkStats>>,
}

impl LinkProxy {
    /// Starts relaying from a socket bound to `listen` (port 0: any) to
    /// `server`, `up` conditioning client-to-server datagrams and `down`
    /// the others, in milliseconds (`delay` and `jitter` are ms).
    pub fn start(
        listen: SocketAddr,
        server: SocketAddr,
        up: LinkConfig,
        down: LinkConfig,
        seed: u64,
    ) -> Result<LinkProxy, TransportError> {
        let outer = UdpSocket::bind(listen).map_err(err("proxy bind"))?;
        let address = outer.local_addr().map_err(err("proxy address"))?;
        let inner_bind =
            if server.is_ipv4() { SocketAddr::from(([0, 0, 0, 0], 0)) } else { SocketAddr::from(([0u16; 8], 0)) };
        let inner = UdpSocket::bind(inner_bind).map_err(err("proxy bind"))?;
        for s in [&outer, &inner] {
            s.set_nonblocking(true).map_err(err("proxy socket"))?;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("link-proxy".into())
            .spawn(move || {
                relay(outer, inner, server, Conditioner::new(up, seed), Conditioner::new(down, seed ^ 0xD0), &flag)
            })
            .map_err(err("proxy thread"))?;
        Ok(LinkProxy { address, stop, thread: Some(thread) })
    }

    /// The address clients send to.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Stops the relay and returns what each direction did (up, then down
    /// combined: datagrams, losses, bytes).
    pub fn stop(mut self) -> LinkStats {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().and_then(|t| t.join().ok()).unwrap_or_default()
    }
}

impl Drop for LinkProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn relay(
    outer: UdpSocket,
    inner: UdpSocket,
    server: SocketAddr,
    mut up: Conditioner,
    mut down: Conditioner,
    stop: &AtomicBool,
) -> LinkStats {
    let start = std::time::Instant::now();
    let mut client: Option<SocketAddr> = None;
    let mut buffer = vec![0u8; 2048];
    let mut due = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let now = start.elapsed().as_millis() as u64;
        let mut busy = false;
        while let Ok((n, from)) = outer.recv_from(&mut buffer) {
            busy = true;
            if *client.get_or_insert(from) == from {
                up.send(now, &buffer[..n]);
            }
        }
        while let Ok((n, from)) = inner.recv_from(&mut buffer) {
            busy = true;
            if from == server {
                down.send(now, &buffer[..n]);
            }
        }
        up.receive(now, &mut due);
        for d in due.drain(..) {
            let _ = inner.send_to(&d, server);
        }
        down.receive(now, &mut due);
        if let Some(to) = client {
            for d in due.drain(..) {
                let _ = outer.send_to(&d, to);
            }
        }
        due.clear();
        if !busy {
            std::thread::sleep(Duration::from_micros(500));
        }
    }
    let (u, d) = (up.stats(), down.stats());
    LinkStats {
        sent: u.sent + d.sent,
        lost: u.lost + d.lost,
        duplicated: u.duplicated + d.duplicated,
        corrupted: u.corrupted + d.corrupted,
        bytes_sent: u.bytes_sent + d.bytes_sent,
    }
}

impl ServerTransport for UdpServer {
    fn update(&mut self, dt: Duration, events: &mut Vec<ConnectionEvent>) -> Result<(), TransportError> {
        self.server.update(dt);
        self.transport.update(dt, &mut self.server).map_err(err("server transport"))?;
        while let Some(event) = self.server.get_event() {
            events.push(match event {
                ServerEvent::ClientConnected { client_id } => ConnectionEvent::Connected(ClientId(client_id)),
                ServerEvent::ClientDisconnected { client_id, .. } => ConnectionEvent::Disconnected(ClientId(client_id)),
            });
        }
        Ok(())
    }

    fn send(&mut self, client: ClientId, packet: &[u8]) {
        if self.server.is_connected(client.0) {
            self.server.send_message(client.0, DefaultChannel::Unreliable, packet.to_vec());
        }
    }

    fn receive(&mut self, client: ClientId) -> Option<Vec<u8>> {
        self.server.receive_message(client.0, DefaultChannel::Unreliable).map(|b| b.to_vec())
    }

    fn send_message(&mut self, client: ClientId, message: &[u8]) {
        if self.server.is_connected(client.0) {
            self.server.send_message(client.0, DefaultChannel::ReliableOrdered, message.to_vec());
        }
    }

    fn receive_message(&mut self, client: ClientId) -> Option<Vec<u8>> {
        self.server.receive_message(client.0, DefaultChannel::ReliableOrdered).map(|b| b.to_vec())
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        self.transport.send_packets(&mut self.server);
        Ok(())
    }
}

/// A client end over UDP.
pub struct UdpClient {
    client: RenetClient,
    transport: NetcodeClientTransport,
}

impl UdpClient {
    /// Starts connecting with a connect token, from a socket bound to
    /// `local` (port 0: any).
    pub fn connect(local: SocketAddr, token: ConnectToken) -> Result<UdpClient, TransportError> {
        let socket = UdpSocket::bind(local).map_err(err("bind"))?;
        let transport =
            NetcodeClientTransport::new(now()?, ClientAuthentication::Secure { connect_token: token }, socket)
                .map_err(err("netcode client"))?;
        Ok(UdpClient { client: RenetClient::new(ConnectionConfig::default()), transport })
    }

    /// Whether the client gave up (timeout, refused, or disconnected).
    pub fn is_disconnected(&self) -> bool {
        self.client.is_disconnected()
    }

    /// Round-trip time renet measures, in seconds.
    pub fn rtt(&self) -> f64 {
        self.client.rtt()
    }

    /// Disconnects politely.
    pub fn disconnect(&mut self) {
        self.transport.disconnect();
    }
}

impl ClientTransport for UdpClient {
    fn update(&mut self, dt: Duration) -> Result<(), TransportError> {
        self.client.update(dt);
        self.transport.update(dt, &mut self.client).map_err(err("client transport"))
    }

    fn is_connected(&self) -> bool {
        self.client.is_connected()
    }

    fn send(&mut self, packet: &[u8]) {
        if self.client.is_connected() {
            self.client.send_message(DefaultChannel::Unreliable, packet.to_vec());
        }
    }

    fn receive(&mut self) -> Option<Vec<u8>> {
        self.client.receive_message(DefaultChannel::Unreliable).map(|b| b.to_vec())
    }

    fn send_message(&mut self, message: &[u8]) {
        if self.client.is_connected() {
            self.client.send_message(DefaultChannel::ReliableOrdered, message.to_vec());
        }
    }

    fn receive_message(&mut self) -> Option<Vec<u8>> {
        self.client.receive_message(DefaultChannel::ReliableOrdered).map(|b| b.to_vec())
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        if self.client.is_connected() {
            self.transport.send_packets(&mut self.client).map_err(err("client send"))?;
        }
        Ok(())
    }
}

/// A server transport and `n` clients (each with its own world) over
/// loopback UDP in one process: what a showcase or a test needs to run real
/// UDP replication without a second process.
///
/// ```
/// use std::time::Duration;
/// use ecs_core::{Component, World};
/// use ecs_replication::prelude::*;
/// use ecs_replication::transport::udp::Loopback;
/// use glam::Vec3;
///
/// #[derive(Component, Clone, Copy, Debug, PartialEq)]
/// struct Position(Vec3);
/// impl AsPosition for Position {
///     fn position(&self) -> Vec3 { self.0 }
///     fn from_position(p: Vec3) -> Self { Position(p) }
/// }
/// let registry = || Registry::new().position::<Position>("position", 0.01, 20).unwrap();
///
/// let mut world = World::new();
/// world.spawn((Replicated, Position(Vec3::ONE)));
/// let mut server = Server::new(&mut world, registry(), ServerConfig::default());
/// let mut net = Loopback::bind(2, registry).unwrap();
/// for _ in 0..2000 {
///     std::thread::sleep(Duration::from_millis(1));
///     let step = net.tick(&mut server, &mut world, Duration::from_millis(16), None).unwrap();
///     let _bytes_per_client: Vec<(ClientId, usize)> = step.bytes;
///     if net.clients().all(|(_, c)| c.len() == 1) {
///         break;
///     }
/// }
/// assert!(net.clients().all(|(w, c)| c.len() == 1 && w.len() == 1));
/// ```
pub struct Loopback {
    server: UdpServer,
    clients: Vec<(World, Client, UdpClient)>,
}

impl Loopback {
    /// Binds a server on 127.0.0.1 (a free port, [`DEMO_KEY`], the schema
    /// hash as protocol id) and starts `clients` clients connecting to it
    /// (ids 1 to `clients`). `registry` makes each client's registry.
    pub fn bind(clients: usize, registry: impl Fn() -> Registry) -> Result<Loopback, TransportError> {
        let protocol = registry().schema().hash() as u64;
        let local = SocketAddr::from(([127, 0, 0, 1], 0));
        let server = UdpServer::bind(local, clients.max(1), protocol, DEMO_KEY)?;
        let mut list = Vec::with_capacity(clients);
        for id in 1..=clients as u64 {
            let token = server.connect_token(id)?;
            let mut world = World::new();
            let client = Client::new(&mut world, &registry());
            list.push((world, client, UdpClient::connect(local, token)?));
        }
        Ok(Loopback { server, clients: list })
    }

    /// One network tick: the server serves `world` (new clients get
    /// `view`), then every client receives and acknowledges. `dt` is the
    /// time since the previous tick (the transports' timers run on it).
    /// The step lists the bytes sent to each client. The same as
    /// [`Loopback::serve`] then [`Loopback::pump_clients`].
    pub fn tick(
        &mut self,
        server: &mut Server,
        world: &mut World,
        dt: Duration,
        view: Option<View>,
    ) -> Result<ServerStep, TransportError> {
        let step = self.serve(server, world, dt, view)?;
        self.pump_clients(dt)?;
        Ok(step)
    }

    /// The server's half of a tick: receives acknowledgements and inputs,
    /// then encodes and sends one snapshot per client over UDP (to time the
    /// server apart from the in-process clients).
    pub fn serve(
        &mut self,
        server: &mut Server,
        world: &mut World,
        dt: Duration,
        view: Option<View>,
    ) -> Result<ServerStep, TransportError> {
        serve(server, world, &mut self.server, dt, view)
    }

    /// The clients' half of a tick: every client receives, applies and
    /// acknowledges what reached its socket.
    pub fn pump_clients(&mut self, dt: Duration) -> Result<(), TransportError> {
        for (world, client, udp) in &mut self.clients {
            pump_client(client, world, udp, dt)?;
        }
        Ok(())
    }

    /// The clients: their worlds and replication state, by id order.
    pub fn clients(&self) -> impl Iterator<Item = (&World, &Client)> + '_ {
        self.clients.iter().map(|(w, c, _)| (w, c))
    }

    /// The server's transport.
    pub fn server_transport(&self) -> &UdpServer {
        &self.server
    }
}
