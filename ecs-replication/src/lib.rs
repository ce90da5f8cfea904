//! # ecs-replication: per-client delta snapshots driven by chunk ticks
//!
//! Server-authoritative state sync in the Quake 3 / Fiedler model for the
//! `ecs-core` store: every client acknowledges what it applied; every
//! network tick the server finds what changed through chunk ticks (whole
//! chunks skipped) and row ticks (which rows), and sends each client only
//! what it has not acknowledged, in priority order under a byte budget,
//! positions delta-coded against the client's acknowledged value, for the
//! entities inside the client's view radius (answered by an `ecs-spatial`
//! grid). Spawns, despawns and component removals ride the same
//! acknowledgement rule, so loss delays but never leaves a ghost or a stale
//! component. Every component is delta-coded against the client's
//! acknowledged baseline.
//!
//! On top of the snapshots, what a multiplayer game needs: inputs upstream
//! with redundancy and a synced client clock, client prediction with
//! rollback, interpolation of remote entities into the world, reliable
//! ordered messages both ways, mapped entity references, and sessions and
//! app plugins that put it together.
//!
//! Modules:
//! - [`bits`]: a bit writer and a bounds-checked bit reader.
//! - [`quantize`]: positions as fixed point, rotations as smallest three.
//! - [`delta`]: deltas of every kind of component, bit-packed.
//! - [`codec`]: the packet format and its hostile-input-safe decoder.
//! - [`registry`]: which components are replicated, their codecs,
//!   prediction tolerances and entity references.
//! - [`server`]: per-client baselines, interest, priority, budget.
//! - [`client`]: applies snapshots, maps entities, acknowledges,
//!   interpolates.
//! - [`check`]: compares a client's held state and world with the
//!   server's, as a report of every mismatch (for tests, benches and
//!   tools).
//! - [`input`]: inputs upstream and the server's input buffer.
//! - [`clock`]: the client's clock, kept ahead of the server's.
//! - [`prediction`]: saves, compares, rolls back and re-simulates.
//! - [`reliable`]: typed reliable ordered messages.
//! - [`session`]: the pieces put together for a game, each end.
//! - [`plugin`]: the same as `ecs_core` app plugins.
//! - [`ack`]: the plain acknowledgement of a client that sends no input.
//! - [`tick`]: network ticks, which wrap, and their serial number order.
//! - [`interpolation`]: samples for rendering between snapshots.
//! - [`conditioner`]: an in-process lossy link for tests and benches.
//! - [`transport`]: the small trait the server and client pump packets
//!   through, and (feature `udp`, on by default) real UDP through renet and
//!   renet_netcode.
//!
//! ```
//! use ecs_core::{Component, World};
//! use ecs_replication::prelude::*;
//! use glam::Vec3;
//!
//! #[derive(Component, Clone, Copy, Debug, PartialEq)]
//! struct Position(Vec3);
//! impl AsPosition for Position {
//!     fn position(&self) -> Vec3 { self.0 }
//!     fn from_position(p: Vec3) -> Self { Position(p) }
//! }
//! let registry = || Registry::new().position::<Position>("position", 0.01, 20).unwrap();
//!
//! let mut world = World::new();
//! let cube = world.spawn((Replicated, Position(Vec3::ZERO)));
//! let mut server = Server::new(&mut world, registry(), ServerConfig::default());
//! server.add_client(ClientId(1), None).unwrap();
//! let mut client_world = World::new();
//! let mut client = Client::new(&mut client_world, &registry());
//!
//! for step in 1..=3 {
//!     world.get_mut::<Position>(cube).unwrap().0.x = step as f32;
//!     server.update(&mut world).unwrap();
//!     let packet = server.packet(ClientId(1)).unwrap().to_vec();
//!     client.receive(&mut client_world, &packet).unwrap();
//!     server.receive(ClientId(1), &client.ack().to_bytes()).unwrap();
//! }
//! let local = client.local_entity(server.net_id(cube).unwrap()).unwrap();
//! assert_eq!(client_world.get::<Position>(local).unwrap().0.x, 3.0);
//! ```
//!
//! It is for a game with one authoritative server and many clients. It is
//! not a lockstep or peer-to-peer engine, nor an RPC framework: clients
//! send acknowledgements, inputs and messages, and change nothing on the
//! server but their own bookkeeping and what the game does with them.
#![forbid(unsafe_code)]

pub mod ack;
pub mod bits;
pub mod check;
pub mod client;
pub mod clock;
pub mod codec;
pub mod conditioner;
pub mod delta;
pub mod input;
pub mod interpolation;
pub mod plugin;
pub mod prediction;
pub mod quantize;
pub mod registry;
pub mod reliable;
pub mod server;
pub mod session;
pub mod tick;
pub mod transport;

/// The types most users need.
pub mod prelude {
    pub use crate::ack::Ack;
    pub use crate::check::{CheckAt, CheckOptions, SyncReport, check_client};
    pub use crate::client::{Client, Receipt};
    pub use crate::conditioner::{Conditioner, LinkConfig};
    pub use crate::registry::{AsPosition, AsRotation, NetId, Registry, Replicated};
    pub use crate::server::{ClientId, Server, ServerConfig, View};
}
