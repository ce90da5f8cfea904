//! Checks a client against the server: does it hold the entities it
//! should, with the server's values, and does its world show them?
//!
//! [`check_client`] compares one client with the server's state at a tick
//! ([`CheckAt`]): the newest one, or the one the client applied last (the
//! server rebuilds its state then from the records' undo logs, so a client
//! one round trip behind a moving world can be checked). It returns a
//! [`SyncReport`] listing every [`Mismatch`], not a bool:
//! - entities the client should hold and does not ([`Mismatch::Missing`]),
//!   or holds and should not ([`Mismatch::Ghost`]);
//! - held entities whose local entity is gone from its world
//!   ([`Mismatch::NoLocalEntity`]);
//! - component values that differ from the server's, as the client holds
//!   them ([`Place::Held`]) or as its world shows them ([`Place::World`]),
//!   present where the server has none or missing where it has one.
//!
//! Values are compared quantized. Held values must be the server's
//! exactly; a world value matches when it quantizes to within one step of
//! the server's value (a rotation decoded and encoded again may land one
//! level off). What
//! the client renders on its own (interpolated positions and rotations of
//! remote entities, predicted components of its predicted entities) is
//! checked for presence only unless [`WorldValues::Exact`] is asked for.
//!
//! ```
//! use ecs_core::{Component, World};
//! use ecs_replication::check::{CheckOptions, check_client};
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
//! let mut world = World::new();
//! let cube = world.spawn((Replicated, Position(Vec3::new(1.0, 2.0, 3.0))));
//! let mut server = Server::new(&mut world, registry(), ServerConfig::default());
//! server.add_client(ClientId(1), None).unwrap();
//! let mut client_world = World::new();
//! let mut client = Client::new(&mut client_world, &registry());
//!
//! // Nothing received yet: the cube is missing.
//! server.update(&mut world).unwrap();
//! let report = check_client(&server, ClientId(1), &client, &client_world, CheckOptions::default()).unwrap();
//! assert!(!report.is_match());
//! assert_eq!(report.mismatches.len(), 1);
//!
//! let packet = server.packet(ClientId(1)).unwrap().to_vec();
//! client.receive(&mut client_world, &packet).unwrap();
//! let report = check_client(&server, ClientId(1), &client, &client_world, CheckOptions::default()).unwrap();
//! assert!(report.is_match(), "{report}");
//!
//! // The client's world drifts by more than a quantization step.
//! let local = client.local_entity(server.net_id(cube).unwrap()).unwrap();
//! client_world.get_mut::<Position>(local).unwrap().0.x += 0.02;
//! let report = check_client(&server, ClientId(1), &client, &client_world, CheckOptions::default()).unwrap();
//! assert_eq!(report.mismatches.len(), 1);
//! ```

use std::fmt;

use ecs_core::{Entity, World};

use crate::client::Client;
use crate::codec::{FieldCodec, NetId, Value};
use crate::delta::rotation_delta;
use crate::server::{ClientId, Server};

/// Which server state a client is compared with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CheckAt {
    /// The server's newest tick (a world at rest, or a client that is
    /// meant to be fully up to date).
    #[default]
    Newest,
    /// The tick the client applied last: what it should hold given what
    /// it received, while the world keeps moving. It must lie within the
    /// server's delta window.
    ClientApplied,
    /// A tick of the server's delta window.
    Tick(u32),
}

/// How the client's world is compared.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WorldValues {
    /// Every component value in the world must quantize to the server's.
    Exact,
    /// As `Exact`, except what the client renders on its own
    /// (interpolated position and rotation of remote entities while
    /// interpolation is on, predicted components of predicted entities):
    /// those are checked for presence only.
    #[default]
    Rendered,
    /// The world is not read; only the client's held state is compared.
    Skip,
}

/// What [`check_client`] compares.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckOptions {
    /// The server state to compare with.
    pub at: CheckAt,
    /// How the world is compared.
    pub world: WorldValues,
}

/// Where a value was found to differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The client's copy of the server's values ([`Client::entities`]).
    Held,
    /// The component in the client's world.
    World,
}

/// One difference between a client and the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// The client should hold the entity and does not.
    Missing {
        /// The entity.
        net_id: NetId,
    },
    /// The client holds an entity it should not (gone on the server, or
    /// outside its interest).
    Ghost {
        /// The entity.
        net_id: NetId,
    },
    /// The client holds the entity but its local entity is not in the
    /// world.
    NoLocalEntity {
        /// The entity.
        net_id: NetId,
        /// The local entity the client maps it to.
        local: Entity,
    },
    /// An entity of the client's world carries a network id the client
    /// does not map to it (left behind by a despawn, or made by hand).
    StrayEntity {
        /// The network id it carries.
        net_id: NetId,
        /// The entity.
        local: Entity,
    },
    /// A component differs: a value that is not the server's, or present
    /// on one side only (`None`).
    Value {
        /// The entity.
        net_id: NetId,
        /// The component's index in the schema.
        component: usize,
        /// Held state or world.
        place: Place,
        /// The server's value.
        expected: Option<Value>,
        /// The client's.
        found: Option<Value>,
    },
    /// A component in the client's world cannot be quantized (out of the
    /// codec's range): it cannot be the server's value.
    Unquantizable {
        /// The entity.
        net_id: NetId,
        /// The component's index in the schema.
        component: usize,
    },
}

impl Mismatch {
    /// The entity concerned.
    pub fn net_id(&self) -> NetId {
        match self {
            Mismatch::Missing { net_id }
            | Mismatch::Ghost { net_id }
            | Mismatch::NoLocalEntity { net_id, .. }
            | Mismatch::StrayEntity { net_id, .. }
            | Mismatch::Value { net_id, .. }
            | Mismatch::Unquantizable { net_id, .. } => *net_id,
        }
    }
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::Missing { net_id } => write!(f, "entity {net_id}: missing"),
            Mismatch::Ghost { net_id } => write!(f, "entity {net_id}: held, but not the server's (a ghost)"),
            Mismatch::NoLocalEntity { net_id, local } => {
                write!(f, "entity {net_id}: held, but its local entity {local:?} is not in the world")
            }
            Mismatch::StrayEntity { net_id, local } => {
                write!(f, "entity {local:?} of the world carries network id {net_id} but is not the client's")
            }
            Mismatch::Value { net_id, component, place, expected, found } => write!(
                f,
                "entity {net_id}, component {component} ({}): server {expected:?}, client {found:?}",
                match place {
                    Place::Held => "held",
                    Place::World => "world",
                }
            ),
            Mismatch::Unquantizable { net_id, component } => {
                write!(f, "entity {net_id}, component {component}: the world value cannot be quantized")
            }
        }
    }
}

/// The outcome of [`check_client`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncReport {
    /// The client.
    pub client: ClientId,
    /// The server tick compared with.
    pub tick: u32,
    /// Entities the client should hold.
    pub expected: usize,
    /// Entities the client holds.
    pub held: usize,
    /// Component values compared (held and world), presence included.
    pub values_compared: usize,
    /// World values checked for presence only (rendered by the client).
    pub presence_only: usize,
    /// Every difference, in network id order.
    pub mismatches: Vec<Mismatch>,
}

impl SyncReport {
    /// Whether the client matches the server.
    pub fn is_match(&self) -> bool {
        self.mismatches.is_empty()
    }

    /// Entities with at least one mismatch.
    pub fn entities_off(&self) -> usize {
        let mut ids: Vec<NetId> = self.mismatches.iter().map(Mismatch::net_id).collect();
        ids.dedup();
        ids.len()
    }
}

impl fmt::Display for SyncReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "client {} at tick {}: {} entities expected, {} held, {} values compared ({} presence only)",
            self.client.0, self.tick, self.expected, self.held, self.values_compared, self.presence_only
        )?;
        if self.is_match() {
            return f.write_str(": in sync");
        }
        write!(f, "; {} mismatches on {} entities", self.mismatches.len(), self.entities_off())?;
        const SHOWN: usize = 8;
        for m in self.mismatches.iter().take(SHOWN) {
            write!(f, "\n  {m}")?;
        }
        if self.mismatches.len() > SHOWN {
            write!(f, "\n  ... and {} more", self.mismatches.len() - SHOWN)?;
        }
        Ok(())
    }
}

/// Why a check could not be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckError {
    /// The server has no such client.
    UnknownClient(ClientId),
    /// [`CheckAt::ClientApplied`] for a client that applied nothing yet.
    NothingApplied,
    /// The tick lies outside the server's delta window (its state then is
    /// no longer known), or after its newest tick.
    OutsideWindow {
        /// The tick asked for.
        tick: u32,
        /// The server's newest tick.
        newest: u32,
        /// The window in ticks.
        window: u32,
    },
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckError::UnknownClient(id) => write!(f, "no client {}", id.0),
            CheckError::NothingApplied => f.write_str("the client applied no packet yet"),
            CheckError::OutsideWindow { tick, newest, window } => {
                write!(f, "tick {tick} is not among the {window} ticks up to the server's newest ({newest})")
            }
        }
    }
}

impl std::error::Error for CheckError {}

/// Compares client `id` (its [`Client`] and the world it writes into) with
/// the server. See the [module docs](self).
pub fn check_client(
    server: &Server,
    id: ClientId,
    client: &Client,
    world: &World,
    options: CheckOptions,
) -> Result<SyncReport, CheckError> {
    let tick = match options.at {
        CheckAt::Newest => server.tick(),
        CheckAt::ClientApplied => match client.last_applied() {
            0 => return Err(CheckError::NothingApplied),
            t => t,
        },
        CheckAt::Tick(t) => t,
    };
    let mut report = SyncReport {
        client: id,
        tick,
        expected: 0,
        held: client.len(),
        values_compared: 0,
        presence_only: 0,
        mismatches: Vec::new(),
    };
    let mut expected_ids = Vec::new();
    server.for_each_expected(id, tick, |net, values| {
        report.expected += 1;
        expected_ids.push(net);
        compare_entity(client, world, options.world, net, values, &mut report);
    })?;
    if client.len() + report.mismatches.iter().filter(|m| matches!(m, Mismatch::Missing { .. })).count()
        != report.expected
    {
        // Some held entity is not expected.
        let mut ghosts: Vec<NetId> =
            client.entities().map(|(n, _)| n).filter(|n| expected_ids.binary_search(n).is_err()).collect();
        ghosts.sort_unstable();
        report.mismatches.extend(ghosts.into_iter().map(|net_id| Mismatch::Ghost { net_id }));
        report.mismatches.sort_by_key(Mismatch::net_id);
    }
    if options.world != WorldValues::Skip {
        let strays = stray_entities(client, world);
        if !strays.is_empty() {
            report.mismatches.extend(strays);
            report.mismatches.sort_by_key(Mismatch::net_id);
        }
    }
    Ok(report)
}

/// Entities of the world that carry a network id the client does not map
/// to them.
fn stray_entities(client: &Client, world: &World) -> Vec<Mismatch> {
    let Some(component) = world.components().id::<NetId>() else { return Vec::new() };
    let mut out = Vec::new();
    for archetype in world.archetypes().iter().filter(|a| a.contains(component)) {
        for chunk in 0..archetype.chunk_count() {
            for &local in archetype.chunk_entities(chunk) {
                let Ok(net_id) = world.get::<NetId>(local).copied() else { continue };
                if client.local_entity(net_id) != Some(local) {
                    out.push(Mismatch::StrayEntity { net_id, local });
                }
            }
        }
    }
    out
}

/// Whether a world value (quantized anew) is the server's value within
/// one quantization step: positions per axis, rotations per stored level
/// (decoding and encoding again may land one level off) or, when the two
/// drop different components (near a tie of the largest two), per
/// decoded component within two steps; bytes exactly.
fn within_quantization(codec: Option<FieldCodec>, expected: &Value, found: &Value) -> bool {
    if expected == found {
        return true;
    }
    match (codec, expected, found) {
        (Some(FieldCodec::Position(_)), Value::Position(a), Value::Position(b)) => {
            a.iter().zip(b).all(|(x, y)| (*x as i64 - *y as i64).abs() <= 1)
        }
        (Some(FieldCodec::Rotation(q)), Value::Rotation(a), Value::Rotation(b)) => match rotation_delta(q, *a, *b) {
            Some(d) => d.iter().all(|l| l.abs() <= 1),
            None => {
                let (qa, qb) = (q.decode(*a), q.decode(*b));
                let qb = if qa.dot(qb) < 0.0 { -qb } else { qb };
                let step = 2.0 * q.component_error();
                (qa - qb).to_array().iter().all(|c| c.abs() <= 2.0 * step)
            }
        },
        _ => false,
    }
}

/// Compares one expected entity.
fn compare_entity(
    client: &Client,
    world: &World,
    mode: WorldValues,
    net: NetId,
    expected: &[Option<Value>],
    report: &mut SyncReport,
) {
    let Some((local, held, predicted)) = client.held(net) else {
        report.mismatches.push(Mismatch::Missing { net_id: net });
        return;
    };
    for (i, want) in expected.iter().enumerate() {
        report.values_compared += 1;
        let have = held.get(i).cloned().flatten();
        if have.as_ref() != want.as_ref() {
            report.mismatches.push(Mismatch::Value {
                net_id: net,
                component: i,
                place: Place::Held,
                expected: want.clone(),
                found: have,
            });
        }
    }
    if mode == WorldValues::Skip {
        return;
    }
    if !world.contains(local) {
        report.mismatches.push(Mismatch::NoLocalEntity { net_id: net, local });
        return;
    }
    for (i, want) in expected.iter().enumerate() {
        report.values_compared += 1;
        let found = match client.world_value(world, local, i) {
            None => None,
            Some(Ok(v)) => Some(v),
            Some(Err(_)) => {
                report.mismatches.push(Mismatch::Unquantizable { net_id: net, component: i });
                continue;
            }
        };
        let presence_only = mode == WorldValues::Rendered && client.renders_itself(i, predicted);
        if presence_only {
            report.presence_only += 1;
        }
        let differs = match (want, &found) {
            (Some(w), Some(f)) => !presence_only && !within_quantization(client.schema().codec(i), w, f),
            (w, f) => w.is_some() != f.is_some(),
        };
        if differs {
            report.mismatches.push(Mismatch::Value {
                net_id: net,
                component: i,
                place: Place::World,
                expected: want.clone(),
                found,
            });
        }
    }
}
