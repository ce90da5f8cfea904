//! # ecs-replication: per-client delta snapshots driven by chunk ticks
//!
//! Server-authoritative state sync in the Quake 3 / Fiedler model for the
//! `ecs-core` store: every client acknowledges what it applied; every
//! network tick the server finds what changed through chunk ticks (whole
//! chunks skipped) and row ticks (which rows), and sends each client only
//! what it has not acknowledged, in priority order under a byte budget,
//! positions delta-coded against the client's acknowledged value, for the
//! entities inside the client's view radius (answered by an `ecs-spatial`
//! grid). Spawns and despawns ride the same acknowledgement rule, so loss
//! delays but never leaves a ghost.
//!
//! Modules:
//! - [`bits`]: a bit writer and a bounds-checked bit reader.
//! - [`quantize`]: positions as fixed point, rotations as smallest three.
//! - [`codec`]: the packet format and its hostile-input-safe decoder.
//! - [`registry`]: which components are replicated, and their codecs.
//! - [`server`]: per-client baselines, interest, priority, budget.
//! - [`client`]: applies snapshots, maps entities, acknowledges.
//! - [`ack`]: the only message a client sends.
//! - [`tick`]: network ticks, which wrap, and their serial number order.
//! - [`interpolation`]: samples for rendering between snapshots.
//! - [`conditioner`]: an in-process lossy link for tests and benches.
//! - [`transport`]: the small trait the server and client pump packets
//!   through, and (feature `udp`, on by default) real UDP through renet and
//!   renet_netcode.
//!
//! ```
//! use ecs_core::World;
//! use ecs_replication::prelude::*;
//! use glam::Vec3;
//!
//! #[derive(Clone, Copy, Debug, PartialEq)]
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
//! It is for sending game state from one server to many clients. It is not
//! a general-purpose RPC or reliable-messaging layer; clients send only
//! acknowledgements and cannot change server state.
#![forbid(unsafe_code)]

pub mod ack;
pub mod bits;
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
    pub use crate::client::{Client, Receipt};
    pub use crate::conditioner::{Conditioner, LinkConfig};
    pub use crate::registry::{AsPosition, AsRotation, NetId, Registry, Replicated};
    pub use crate::server::{ClientId, Server, ServerConfig, View};
}
