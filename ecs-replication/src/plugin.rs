//! App plugins: one line adds a replication server or client to an
//! `ecs_core` [`App`].
//!
//! - [`ReplicationServerPlugin`] inserts a [`ReplicationServer`] resource
//!   (the [`ServerSession`] and its transport) and runs each fixed step:
//!   in [`FixedFirst`], connections, datagrams and messages in, and every
//!   client's input written into its entities' [`PlayerInput`](crate::session::PlayerInput); the game's
//!   systems run in [`FixedUpdate`](ecs_core::app::FixedUpdate) and read it; in [`FixedLast`], the
//!   snapshots and messages go out. Connections arrive as
//!   [`ReplicationServerEvent`]s (give a new client its entity with
//!   [`ReplicationServer::set_controlled`]).
//! - [`ReplicationClientPlugin`] inserts a [`ReplicationClient`] resource
//!   (the [`ClientSession`] and its transport) and a [`LocalInput`] the
//!   game writes, and runs the client's frame in [`PreUpdate`] with the
//!   frame's real time: snapshots in, reconcile, as many [`ClientTick`]s as
//!   the synced clock asks for (the game's predicted systems go in that
//!   schedule: the same systems as the server's `FixedUpdate`, seeing only
//!   the predicted entities' inputs), the upstream datagram out.
//!
//! The client does not use the app's fixed step: its tick rate follows the
//! server's clock ([`crate::clock`]), faster or slower by a few percent.
//!
//! Both resources hand their transport back by its type
//! ([`ReplicationServer::transport`], [`ReplicationClient::transport_mut`]:
//! a UDP server's address, a UDP client's round trip or polite
//! disconnect), keep the latest transport error
//! ([`ReplicationServer::last_error`]), and the client reports its
//! connection coming up and going down as [`ReplicationClientEvent`]s, so
//! a game can drive states (connecting, playing, disconnected) from them.
//!
//! ```
//! use ecs_core::prelude::*;
//! use ecs_replication::bits::{BitError, BitReader, BitWriter};
//! use ecs_replication::input::ClientInput;
//! use ecs_replication::plugin::{ReplicationClient, ReplicationClientEvent, ReplicationClientPlugin};
//! use ecs_replication::prelude::*;
//! use ecs_replication::session::ClientSessionConfig;
//! use ecs_replication::transport::{SharedClientEnd, SharedNetwork};
//!
//! #[derive(Clone, Debug, Default, PartialEq)]
//! struct Watch; // a spectator sends no input
//! impl ClientInput for Watch {
//!     fn write(&self, _: &mut BitWriter) {}
//!     fn read(_: &mut BitReader<'_>) -> Result<Self, BitError> {
//!         Ok(Watch)
//!     }
//! }
//! #[derive(Component, Clone, Copy, Debug, PartialEq)]
//! struct Position(glam::Vec3);
//! impl AsPosition for Position {
//!     fn position(&self) -> glam::Vec3 { self.0 }
//!     fn from_position(p: glam::Vec3) -> Self { Position(p) }
//! }
//! let registry = Registry::new().position::<Position>("position", 0.01, 20).unwrap();
//!
//! let net = SharedNetwork::new();
//! let id = ClientId(1);
//! let mut app = App::new();
//! app.add_plugins(ReplicationClientPlugin::<Watch>::new(registry, id, ClientSessionConfig::default(), net.client(id)));
//! app.update(); // no link yet
//! net.lock().connect(id, LinkConfig::clean(1), LinkConfig::clean(1), 7);
//! app.update(); // the link is up
//! let client = app.world().resource::<ReplicationClient<Watch>>().unwrap();
//! assert!(client.is_connected());
//! assert!(client.transport::<SharedClientEnd>().is_some()); // the transport, by its type
//! let events = app.world().resource::<Events<ReplicationClientEvent>>().unwrap();
//! assert_eq!(events.read_from(0).copied().collect::<Vec<_>>(), [ReplicationClientEvent::Connected]);
//! ```

use std::any::Any;
use std::marker::PhantomData;
use std::sync::Mutex;
use std::time::Duration;

use ecs_core::Entity;
use ecs_core::World;
use ecs_core::app::{App, FixedFirst, FixedLast, Plugin, PreUpdate, ScheduleLabel, Time};
use ecs_core::prelude::{Fixed, Real};
use ecs_core::system::Events;

use crate::input::ClientInput;
use crate::registry::Registry;
use crate::server::{ClientId, Server, ServerConfig, ServerError, View};
use crate::session::{ClientSession, ClientSessionConfig, FrameReport, ServerSession};
use crate::transport::{
    ClientTransport, ServerStep, ServerTransport, TransportError, pump_session, serve_session_receive,
    serve_session_send,
};

/// A server transport the plugin can hand back by its concrete type.
trait AnyServerTransport: ServerTransport + Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: ServerTransport + Send + Sync + 'static> AnyServerTransport for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// A client transport the plugin can hand back by its concrete type.
trait AnyClientTransport: ClientTransport + Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: ClientTransport + Send + Sync + 'static> AnyClientTransport for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// The schedule a client runs once per predicted tick (first runs and
/// re-simulations alike): put the game's predicted systems here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ClientTick;

impl ScheduleLabel for ClientTick {}

/// A client came or went (server side).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplicationServerEvent {
    /// A client connected; it sees what the plugin's view says.
    Connected(ClientId),
    /// A client left.
    Disconnected(ClientId),
}

/// The server's resource: the session, its transport, and the latest step.
pub struct ReplicationServer<I: ClientInput> {
    /// The replication session (snapshot server, input buffers, messages).
    pub session: ServerSession<I>,
    transport: Box<dyn AnyServerTransport>,
    view: Option<View>,
    step: ServerStep,
    errors: u64,
    last_error: Option<TransportError>,
}

impl<I: ClientInput> ReplicationServer<I> {
    /// Gives `entity` to a client (see [`ServerSession::set_controlled`]).
    pub fn set_controlled(&mut self, world: &mut World, id: ClientId, entity: Entity) -> Result<(), ServerError> {
        self.session.set_controlled(world, id, entity)
    }

    /// Takes `entity` back from a client (see
    /// [`ServerSession::release_controlled`]).
    pub fn release_controlled(&mut self, world: &mut World, id: ClientId, entity: Entity) -> Result<(), ServerError> {
        self.session.release_controlled(world, id, entity)
    }

    /// What the latest fixed step did (connections, refused datagrams,
    /// bytes per client).
    pub fn last_step(&self) -> &ServerStep {
        &self.step
    }

    /// Transport errors so far (each skipped that step's rest).
    pub fn errors(&self) -> u64 {
        self.errors
    }

    /// The latest transport error, if any step failed.
    pub fn last_error(&self) -> Option<&TransportError> {
        self.last_error.as_ref()
    }

    /// The transport, if it is a `T` (a `UdpServer`: its address, connect
    /// tokens, connected clients).
    pub fn transport<T: ServerTransport + 'static>(&self) -> Option<&T> {
        (*self.transport).as_any().downcast_ref()
    }

    /// The transport, mutably, if it is a `T`.
    pub fn transport_mut<T: ServerTransport + 'static>(&mut self) -> Option<&mut T> {
        (*self.transport).as_any_mut().downcast_mut()
    }
}

type ServerSetup = (Registry, ServerConfig, Box<dyn AnyServerTransport>);

/// Adds a replication server to an app. See the [module docs](self).
pub struct ReplicationServerPlugin<I: ClientInput> {
    setup: Mutex<Option<ServerSetup>>,
    view: Option<View>,
    _marker: PhantomData<fn() -> I>,
}

impl<I: ClientInput> ReplicationServerPlugin<I> {
    /// A server of `registry`'s components over `transport`.
    pub fn new(
        registry: Registry,
        config: ServerConfig,
        transport: impl ServerTransport + Send + Sync + 'static,
    ) -> Self {
        ReplicationServerPlugin {
            setup: Mutex::new(Some((registry, config, Box::new(transport)))),
            view: None,
            _marker: PhantomData,
        }
    }

    /// The view new clients get (default: everything).
    pub fn with_view(mut self, view: Option<View>) -> Self {
        self.view = view;
        self
    }
}

impl<I: ClientInput> Plugin for ReplicationServerPlugin<I> {
    fn build(&self, app: &mut App) {
        let Some((registry, config, transport)) = self.setup.lock().unwrap_or_else(|e| e.into_inner()).take() else {
            return;
        };
        let server = Server::new(app.world_mut(), registry, config);
        app.add_event::<ReplicationServerEvent>()
            .insert_resource(ReplicationServer::<I> {
                session: ServerSession::new(server),
                transport,
                view: self.view,
                step: ServerStep::default(),
                errors: 0,
                last_error: None,
            })
            .add_systems(FixedFirst, server_receive::<I>)
            .add_systems(FixedLast, server_send::<I>);
    }
}

fn fixed_step(world: &World) -> Duration {
    world.resource::<Time<Fixed>>().map_or(Time::<Fixed>::DEFAULT_TIMESTEP, |t| t.timestep())
}

fn server_receive<I: ClientInput>(world: &mut World) {
    let Some(mut server) = world.remove_resource::<ReplicationServer<I>>() else { return };
    let dt = fixed_step(world);
    let ReplicationServer { session, transport, view, step, errors, last_error } = &mut server;
    match serve_session_receive(session, world, transport.as_mut(), dt, *view) {
        Ok(s) => *step = s,
        Err(e) => {
            *errors += 1;
            *last_error = Some(e);
            *step = ServerStep::default();
        }
    }
    if let Some(events) = world.resource_mut::<Events<ReplicationServerEvent>>() {
        for id in &step.connected {
            events.send(ReplicationServerEvent::Connected(*id));
        }
        for id in &step.disconnected {
            events.send(ReplicationServerEvent::Disconnected(*id));
        }
    }
    world.insert_resource(server);
}

fn server_send<I: ClientInput>(world: &mut World) {
    let Some(mut server) = world.remove_resource::<ReplicationServer<I>>() else { return };
    let ReplicationServer { session, transport, step, errors, last_error, .. } = &mut server;
    if let Err(e) = serve_session_send(session, world, transport.as_mut(), step) {
        *errors += 1;
        *last_error = Some(e);
    }
    world.insert_resource(server);
}

/// The input the local player gives now: the game writes it (from the
/// keyboard, a pad, a script); the client samples it for each new tick.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LocalInput<I>(pub I);

/// The client's connection came up or went down (client side): what the
/// transport's [`ClientTransport::is_connected`] says after a frame's
/// datagrams were pumped, sent on each change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplicationClientEvent {
    /// The connection is up (snapshots can arrive).
    Connected,
    /// The connection was up and is down now (the server left, timed out
    /// or refused the client).
    Disconnected,
}

/// The client's resource: the session, its transport, and the latest frame.
pub struct ReplicationClient<I: ClientInput> {
    /// The replication session (snapshots, clock, inputs, prediction).
    pub session: ClientSession<I>,
    transport: Box<dyn AnyClientTransport>,
    report: FrameReport,
    errors: u64,
    last_error: Option<TransportError>,
    connected: bool,
}

impl<I: ClientInput> ReplicationClient<I> {
    /// What the latest frame did.
    pub fn last_frame(&self) -> FrameReport {
        self.report
    }

    /// Transport errors so far.
    pub fn errors(&self) -> u64 {
        self.errors
    }

    /// The latest transport error, if any frame failed.
    pub fn last_error(&self) -> Option<&TransportError> {
        self.last_error.as_ref()
    }

    /// Whether the connection was up after the latest frame.
    pub fn is_connected(&self) -> bool {
        self.connected
    }

    /// The transport, if it is a `T` (a `UdpClient`: its round trip,
    /// whether it gave up).
    pub fn transport<T: ClientTransport + 'static>(&self) -> Option<&T> {
        (*self.transport).as_any().downcast_ref()
    }

    /// The transport, mutably, if it is a `T` (a `UdpClient`: disconnect
    /// politely).
    pub fn transport_mut<T: ClientTransport + 'static>(&mut self) -> Option<&mut T> {
        (*self.transport).as_any_mut().downcast_mut()
    }
}

type ClientSetup = (Registry, ClientId, ClientSessionConfig, Box<dyn AnyClientTransport>);

/// Adds a replication client to an app. See the [module docs](self).
pub struct ReplicationClientPlugin<I: ClientInput> {
    setup: Mutex<Option<ClientSetup>>,
    _marker: PhantomData<fn() -> I>,
}

impl<I: ClientInput> ReplicationClientPlugin<I> {
    /// Client `id` (the transport's) of `registry`'s components over
    /// `transport`.
    pub fn new(
        registry: Registry,
        id: ClientId,
        config: ClientSessionConfig,
        transport: impl ClientTransport + Send + Sync + 'static,
    ) -> Self {
        ReplicationClientPlugin {
            setup: Mutex::new(Some((registry, id, config, Box::new(transport)))),
            _marker: PhantomData,
        }
    }
}

impl<I: ClientInput> Plugin for ReplicationClientPlugin<I> {
    fn build(&self, app: &mut App) {
        let Some((registry, id, config, transport)) = self.setup.lock().unwrap_or_else(|e| e.into_inner()).take()
        else {
            return;
        };
        let session = ClientSession::new(app.world_mut(), &registry, id, config);
        app.add_event::<ReplicationClientEvent>()
            .insert_resource(ReplicationClient::<I> {
                session,
                transport,
                report: FrameReport::default(),
                errors: 0,
                last_error: None,
                connected: false,
            })
            .insert_resource(LocalInput(I::default()))
            .add_systems(PreUpdate, client_frame::<I>);
    }
}

fn client_frame<I: ClientInput>(world: &mut World) {
    let Some(mut client) = world.remove_resource::<ReplicationClient<I>>() else { return };
    let dt = world.resource::<Time<Real>>().map_or(Duration::ZERO, |t| t.delta());
    let input = world.resource::<LocalInput<I>>().map(|i| i.0.clone()).unwrap_or_default();
    let ReplicationClient { session, transport, report, errors, last_error, connected } = &mut client;
    // No ClientTick schedule (a client that predicts nothing) is fine.
    let simulate = |w: &mut World| {
        let _ = w.run_schedule(ClientTick);
    };
    match pump_session(session, world, transport.as_mut(), dt, |_| input.clone(), simulate) {
        Ok((_, r)) => *report = r,
        Err(e) => {
            *errors += 1;
            *last_error = Some(e);
        }
    }
    let now_connected = transport.is_connected();
    if now_connected != *connected {
        *connected = now_connected;
        if let Some(events) = world.resource_mut::<Events<ReplicationClientEvent>>() {
            events.send(if now_connected {
                ReplicationClientEvent::Connected
            } else {
                ReplicationClientEvent::Disconnected
            });
        }
    }
    world.insert_resource(client);
}
