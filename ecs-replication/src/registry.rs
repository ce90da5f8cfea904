//! Which component types are replicated and how each goes on the wire.
//!
//! Plain-old-data components ([`bytemuck::Pod`]) travel as their bytes;
//! types that need it get a [`ComponentCodec`]: positions quantized to a
//! configurable unit ([`PositionCodec`]), rotations as smallest three
//! ([`RotationCodec`]). Server and client build the same [`Registry`]; the
//! [`Schema`] hash in every packet makes a mismatch an error, not garbage.
//!
//! An entity is replicated when it carries the [`Replicated`] marker.

use std::any::TypeId;
use std::marker::PhantomData;
use std::sync::Arc;

use ecs_core::{Changed, ChunkStats, ChunkView, Component, Entity, QueryState, RemovedReader, With, World};
use glam::{Quat, Vec3};

use crate::codec::{BytesDelta, FieldCodec, Schema, SchemaError, Value};
use crate::quantize::{PositionQuantizer, QuantizeError, RotationQuantizer};

/// Marks an entity the server replicates.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Replicated;

/// On a client: marks an entity it predicts (runs ahead of the server with
/// its own inputs; see [`crate::prediction`]). Snapshot values of its
/// predicted components are compared with the prediction instead of being
/// written into the world.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Predicted;

pub use crate::codec::NetId;

/// Turns one component type into wire values and back.
pub trait ComponentCodec<T>: Send + Sync + 'static {
    /// The field layout in the schema.
    fn field(&self) -> FieldCodec;
    /// The wire value of `value` (always absolute).
    fn encode(&self, value: &T) -> Result<Value, QuantizeError>;
    /// The component a wire value stands for; `None` if the value does not
    /// fit this codec.
    fn decode(&self, value: &Value) -> Option<T>;
}

/// Plain-old-data components as their bytes, delta-coded as chosen.
pub struct PodCodec(pub BytesDelta);

impl<T: bytemuck::Pod> ComponentCodec<T> for PodCodec {
    fn field(&self) -> FieldCodec {
        FieldCodec::Bytes(std::mem::size_of::<T>() as u16, self.0)
    }

    fn encode(&self, value: &T) -> Result<Value, QuantizeError> {
        Ok(Value::Bytes(bytemuck::bytes_of(value).to_vec()))
    }

    fn decode(&self, value: &Value) -> Option<T> {
        match value {
            Value::Bytes(bytes) if bytes.len() == std::mem::size_of::<T>() => Some(bytemuck::pod_read_unaligned(bytes)),
            _ => None,
        }
    }
}

/// A component that is a point in space (what [`PositionCodec`] quantizes
/// and what interest management reads).
pub trait AsPosition: Sized {
    /// The point.
    fn position(&self) -> Vec3;
    /// The component for a point.
    fn from_position(p: Vec3) -> Self;
}

/// The broad phase's position component replicates as a position, so one
/// component feeds both the `ecs-spatial` grid and the snapshots.
///
/// ```
/// use ecs_replication::registry::{AsPosition, Registry};
/// use ecs_spatial::Position;
/// use glam::Vec3;
///
/// let registry = Registry::new().position::<Position>("position", 0.01, 20).unwrap();
/// assert_eq!(registry.schema().len(), 1);
/// assert_eq!(Position::from_position(Vec3::X).position(), Vec3::X);
/// ```
impl AsPosition for ecs_spatial::Position {
    fn position(&self) -> Vec3 {
        self.0
    }

    fn from_position(p: Vec3) -> Self {
        ecs_spatial::Position(p)
    }
}

/// A component that references other entities (a target, an owner, a
/// list of members). On the server each reference goes on the wire as the
/// referenced entity's network id (none if that entity is not replicated);
/// on a client it becomes the local entity of that network id. A
/// reference to an entity the client does not hold (yet: a spawn later in
/// the same packet resolves at the packet's end; outside its interest; not
/// arrived) is deferred: the component is not written until every
/// reference resolves, and is retried after each packet
/// ([`crate::client::ClientCounters::deferred`]). It is never written with
/// a wrong entity. A reference to nothing becomes [`NO_ENTITY`], a handle
/// no world hands out.
///
/// Limit: references are mapped when the component is written; one written
/// before its target was replicated names nothing until written again.
///
/// ```
/// use ecs_core::Entity;
/// use ecs_replication::registry::MapEntities;
///
/// #[derive(Clone)]
/// struct Squad { leader: Entity, members: [Entity; 3] }
/// impl MapEntities for Squad {
///     fn map_entities(&mut self, map: &mut dyn FnMut(Entity) -> Entity) {
///         self.leader = map(self.leader);
///         for m in &mut self.members {
///             *m = map(*m);
///         }
///     }
/// }
/// ```
pub trait MapEntities {
    /// Passes every entity reference through `map`, in place.
    fn map_entities(&mut self, map: &mut dyn FnMut(Entity) -> Entity);
}

/// A component that is exactly one entity reference
/// ([`Registry::entity_ref`]).
pub trait AsEntity: Sized {
    /// The referenced entity.
    fn entity(&self) -> Entity;
    /// The component for a reference.
    fn from_entity(entity: Entity) -> Self;
}

/// The handle a reference to nothing becomes on a client (a network id of
/// 0: the server's entity was not replicated). No world hands it out.
pub const NO_ENTITY: Entity = Entity::from_parts(u32::MAX, u32::MAX);

/// One entity reference as 8 bytes (the network id), XOR-delta-coded.
pub struct EntityCodec;

impl<T: AsEntity> ComponentCodec<T> for EntityCodec {
    fn field(&self) -> FieldCodec {
        FieldCodec::Bytes(8, BytesDelta::Xor)
    }

    fn encode(&self, value: &T) -> Result<Value, QuantizeError> {
        Ok(Value::Bytes(value.entity().to_bits().to_le_bytes().to_vec()))
    }

    fn decode(&self, value: &Value) -> Option<T> {
        match value {
            Value::Bytes(b) => {
                Some(T::from_entity(Entity::from_bits(u64::from_le_bytes(b.as_slice().try_into().ok()?))))
            }
            _ => None,
        }
    }
}

/// A component that is a rotation (what [`RotationCodec`] quantizes).
pub trait AsRotation: Sized {
    /// The rotation.
    fn rotation(&self) -> Quat;
    /// The component for a rotation.
    fn from_rotation(q: Quat) -> Self;
}

/// Positions as fixed point in a configurable unit.
pub struct PositionCodec(pub PositionQuantizer);

impl<T: AsPosition> ComponentCodec<T> for PositionCodec {
    fn field(&self) -> FieldCodec {
        FieldCodec::Position(self.0)
    }

    fn encode(&self, value: &T) -> Result<Value, QuantizeError> {
        Ok(Value::Position(self.0.quantize(value.position())?))
    }

    fn decode(&self, value: &Value) -> Option<T> {
        match value {
            Value::Position(q) => Some(T::from_position(self.0.dequantize(*q))),
            _ => None,
        }
    }
}

/// Rotations as smallest three.
pub struct RotationCodec(pub RotationQuantizer);

impl<T: AsRotation> ComponentCodec<T> for RotationCodec {
    fn field(&self) -> FieldCodec {
        FieldCodec::Rotation(self.0)
    }

    fn encode(&self, value: &T) -> Result<Value, QuantizeError> {
        Ok(Value::Rotation(self.0.encode(value.rotation())?))
    }

    fn decode(&self, value: &Value) -> Option<T> {
        match value {
            Value::Rotation(bits) => Some(T::from_rotation(self.0.decode(*bits))),
            _ => None,
        }
    }
}

/// How a server names entities on the wire: its entity to the network id
/// (none for an entity that is not replicated).
pub(crate) type ServerRefs<'a> = &'a dyn Fn(Entity) -> Option<NetId>;
/// How a client finds the local entity of a network id.
pub(crate) type ClientRefs<'a> = &'a dyn Fn(NetId) -> Option<Entity>;

/// What writing a wire value into a (client) entity did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Write {
    /// Written.
    Done,
    /// The value does not fit the codec, or the entity is gone.
    Refused,
    /// The value references an entity this client does not hold (yet):
    /// nothing was written.
    Deferred(NetId),
}

/// What the server and client do with one registered component type,
/// without naming the type.
pub(crate) trait Column: Send + Sync {
    /// Calls `f` for every replicated entity whose component was written
    /// since this column's previous scan (chunk ticks first, then row
    /// ticks). The first scan sees everything.
    fn scan_changed(
        &mut self,
        world: &World,
        refs: ServerRefs<'_>,
        f: &mut dyn FnMut(Entity, Result<Value, QuantizeError>),
    );
    /// Appends the replicated entities that lost the component since the
    /// previous call and do not have it now (a removal and a re-insert in
    /// between is a change, which [`Column::scan_changed`] reports). The
    /// first call starts the removal log (the world logs removals of a
    /// type only while a reader exists), so only the server pays for it.
    fn scan_removed(&mut self, world: &mut World, out: &mut Vec<Entity>);
    /// Chunk counts of the latest [`Column::scan_changed`].
    fn scan_stats(&self) -> ChunkStats;
    /// The wire value of one entity's component, if it has one.
    fn read(&self, world: &World, entity: Entity, refs: ServerRefs<'_>) -> Option<Result<Value, QuantizeError>>;
    /// Writes a wire value into a (client) entity.
    fn write(&self, world: &mut World, entity: Entity, value: &Value, refs: ClientRefs<'_>) -> Write;
    /// Removes the component from a (client) entity, if it has it.
    fn remove(&self, world: &mut World, entity: Entity);
    /// Appends the wire value of every [`Predicted`] entity's component
    /// (the query matches the predicted archetypes only).
    fn save_predicted(&mut self, world: &World, index: u8, out: &mut Vec<(Entity, u8, Value)>);
    /// Whether the component holds entity references.
    fn is_mapped(&self) -> bool;
}

/// Replicated rows whose `T` was written since the last scan.
type ChangedReplicated<T> = (Changed<T>, With<Replicated>);

/// A copy of a component with its entity references passed through a map.
type MapFn<T> = Arc<dyn Fn(&T, &mut dyn FnMut(Entity) -> Entity) -> T + Send + Sync>;

struct TypedColumn<T: Component, C: ComponentCodec<T>> {
    codec: C,
    map: Option<MapFn<T>>,
    changed: QueryState<(Entity, &'static T), ChangedReplicated<T>>,
    predicted: QueryState<(Entity, &'static T), With<Predicted>>,
    removed: Option<RemovedReader<T>>,
    _marker: PhantomData<fn() -> T>,
}

/// On the wire an entity reference is its network id in an entity's bits
/// (0: none, an entity that is not replicated).
fn to_wire(refs: ServerRefs<'_>, entity: Entity) -> Entity {
    Entity::from_bits(refs(entity).map_or(0, |n| n.0))
}

impl<T: Component, C: ComponentCodec<T>> TypedColumn<T, C> {
    fn encode(&self, value: &T, refs: ServerRefs<'_>) -> Result<Value, QuantizeError> {
        match &self.map {
            None => self.codec.encode(value),
            Some(map) => self.codec.encode(&map(value, &mut |e| to_wire(refs, e))),
        }
    }
}

impl<T: Component, C: ComponentCodec<T>> Column for TypedColumn<T, C> {
    fn scan_changed(
        &mut self,
        world: &World,
        refs: ServerRefs<'_>,
        f: &mut dyn FnMut(Entity, Result<Value, QuantizeError>),
    ) {
        let (codec, map) = (&self.codec, &self.map);
        self.changed.for_each_chunk(world, |view: ChunkView<'_, (Entity, &T), ChangedReplicated<T>>| {
            for (entity, value) in view.items() {
                let encoded = match map {
                    None => codec.encode(value),
                    Some(map) => codec.encode(&map(value, &mut |e| to_wire(refs, e))),
                };
                f(entity, encoded);
            }
        });
    }

    fn scan_removed(&mut self, world: &mut World, out: &mut Vec<Entity>) {
        let Some(reader) = &mut self.removed else {
            self.removed = Some(world.removed_reader::<T>());
            return;
        };
        let start = out.len();
        out.extend(reader.read(world));
        let mut i = start;
        while i < out.len() {
            if world.has::<T>(out[i]).unwrap_or(true) {
                out.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }

    fn scan_stats(&self) -> ChunkStats {
        self.changed.stats()
    }

    fn read(&self, world: &World, entity: Entity, refs: ServerRefs<'_>) -> Option<Result<Value, QuantizeError>> {
        world.get::<T>(entity).ok().map(|v| self.encode(v, refs))
    }

    fn write(&self, world: &mut World, entity: Entity, value: &Value, refs: ClientRefs<'_>) -> Write {
        let Some(mut v) = self.codec.decode(value) else { return Write::Refused };
        if let Some(map) = &self.map {
            // Every reference must resolve, or nothing is written: never a
            // wrong entity, never a half-mapped component.
            let mut unknown = None;
            v = map(&v, &mut |e| match e.to_bits() {
                0 => NO_ENTITY,
                bits => match refs(NetId(bits)) {
                    Some(local) => local,
                    None => {
                        unknown.get_or_insert(NetId(bits));
                        NO_ENTITY
                    }
                },
            });
            if let Some(missing) = unknown {
                return Write::Deferred(missing);
            }
        }
        if world.insert_one(entity, v).is_ok() { Write::Done } else { Write::Refused }
    }

    fn remove(&self, world: &mut World, entity: Entity) {
        let _ = world.remove_one::<T>(entity);
    }

    fn save_predicted(&mut self, world: &World, index: u8, out: &mut Vec<(Entity, u8, Value)>) {
        let (codec, map) = (&self.codec, &self.map);
        self.predicted.for_each(world, |(entity, value)| {
            // Local references back to network ids, as the server sends
            // them.
            let encoded = match map {
                None => codec.encode(value),
                Some(map) => {
                    codec.encode(&map(value, &mut |e| Entity::from_bits(world.get::<NetId>(e).map_or(0, |n| n.0))))
                }
            };
            if let Ok(v) = encoded {
                out.push((entity, index, v));
            }
        });
    }

    fn is_mapped(&self) -> bool {
        self.map.is_some()
    }
}

type ColumnFactory = Box<dyn Fn(&mut World) -> Box<dyn Column> + Send + Sync>;

/// The replicated component types, in wire order. Server and client must
/// register the same types in the same order with the same codecs.
///
/// ```
/// use ecs_core::Component;
/// use ecs_replication::registry::{AsPosition, Registry};
/// use glam::Vec3;
///
/// #[derive(Component, Clone, Copy, Debug, PartialEq)]
/// struct Position(Vec3);
/// impl AsPosition for Position {
///     fn position(&self) -> Vec3 { self.0 }
///     fn from_position(p: Vec3) -> Self { Position(p) }
/// }
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
/// #[derive(Component)]
/// struct Health(u16);
///
/// let registry = Registry::new()
///     .position::<Position>("position", 0.01, 20).unwrap()
///     .pod::<Health>("health").unwrap();
/// assert_eq!(registry.schema().len(), 2);
/// assert_eq!(registry.position_index(), Some(0));
/// ```
pub struct Registry {
    names: Vec<(String, FieldCodec)>,
    types: Vec<TypeId>,
    /// Per component: `Some(tolerance)` if it is predicted.
    predicted: Vec<Option<u32>>,
    /// Per component: whether it holds entity references.
    mapped: Vec<bool>,
    factories: Vec<ColumnFactory>,
    position: Option<usize>,
    rotation: Option<usize>,
    position_writer: Option<PositionWriter>,
    rotation_writer: Option<RotationWriter>,
    schema: Schema,
}

/// Writes a (client) entity's position component from a point, only if it
/// differs (so an entity at rest is not marked changed).
pub(crate) type PositionWriter = Arc<dyn Fn(&mut World, Entity, Vec3) + Send + Sync>;
/// Writes a (client) entity's rotation component, only if it differs.
pub(crate) type RotationWriter = Arc<dyn Fn(&mut World, Entity, Quat) + Send + Sync>;

/// Why a component could not be registered.
#[derive(Clone, Debug, PartialEq)]
pub enum RegistryError {
    /// The schema refused it (name twice, too many, bad size).
    Schema(SchemaError),
    /// A bad quantizer configuration.
    Quantizer(QuantizeError),
    /// A second position or rotation component, or a type registered twice.
    Duplicate(&'static str),
    /// A type marked predicted that is not registered.
    NotRegistered(&'static str),
}

impl std::fmt::Display for RegistryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RegistryError::Schema(e) => e.fmt(f),
            RegistryError::Quantizer(e) => e.fmt(f),
            RegistryError::Duplicate(what) => write!(f, "only one {what} can be registered"),
            RegistryError::NotRegistered(name) => write!(f, "{name} is not a registered component"),
        }
    }
}

impl std::error::Error for RegistryError {}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// No components.
    pub fn new() -> Self {
        Registry {
            names: Vec::new(),
            types: Vec::new(),
            predicted: Vec::new(),
            mapped: Vec::new(),
            factories: Vec::new(),
            position: None,
            rotation: None,
            position_writer: None,
            rotation_writer: None,
            schema: Schema::new(Vec::new()).expect("an empty schema is valid"),
        }
    }

    /// Registers `T` with any codec.
    pub fn with_codec<T: Component, C: ComponentCodec<T>>(self, name: &str, codec: C) -> Result<Self, RegistryError> {
        self.register::<T, C>(name, codec, None)
    }

    /// Registers `T`, a component that references other entities, with any
    /// codec: references are mapped (see [`MapEntities`]).
    pub fn mapped<T: Component + Clone + MapEntities, C: ComponentCodec<T>>(
        self,
        name: &str,
        codec: C,
    ) -> Result<Self, RegistryError> {
        let map: MapFn<T> = Arc::new(|value: &T, f: &mut dyn FnMut(Entity) -> Entity| {
            let mut copy = value.clone();
            copy.map_entities(f);
            copy
        });
        self.register::<T, C>(name, codec, Some(map))
    }

    /// Registers `T`, a component that is one reference to another entity
    /// (a target, an owner, a parent): on the wire its network id in 8
    /// bytes, XOR-delta-coded; mapped as [`MapEntities`] describes.
    pub fn entity_ref<T: Component + AsEntity>(self, name: &str) -> Result<Self, RegistryError> {
        let map: MapFn<T> =
            Arc::new(|value: &T, f: &mut dyn FnMut(Entity) -> Entity| T::from_entity(f(value.entity())));
        self.register::<T, EntityCodec>(name, EntityCodec, Some(map))
    }

    fn register<T: Component, C: ComponentCodec<T>>(
        mut self,
        name: &str,
        codec: C,
        map: Option<MapFn<T>>,
    ) -> Result<Self, RegistryError> {
        let mut names = self.names.clone();
        names.push((name.to_string(), codec.field()));
        if self.types.contains(&TypeId::of::<T>()) {
            return Err(RegistryError::Duplicate("component of each type"));
        }
        self.schema = Schema::new(names.clone()).map_err(RegistryError::Schema)?;
        self.names = names;
        self.types.push(TypeId::of::<T>());
        self.predicted.push(None);
        self.mapped.push(map.is_some());
        let codec = std::sync::Arc::new(codec);
        self.factories.push(Box::new(move |world: &mut World| {
            let codec = std::sync::Arc::clone(&codec);
            Box::new(TypedColumn::<T, ArcCodec<C>> {
                codec: ArcCodec(codec),
                map: map.clone(),
                changed: QueryState::new(world),
                predicted: QueryState::new(world),
                removed: None,
                _marker: PhantomData,
            }) as Box<dyn Column>
        }));
        Ok(self)
    }

    /// Registers a plain-old-data component, sent as its bytes and
    /// delta-coded as an XOR against the acknowledged baseline (only the
    /// bytes that changed go, with a one-bit-per-byte mask).
    pub fn pod<T: Component + bytemuck::Pod>(self, name: &str) -> Result<Self, RegistryError> {
        self.pod_with_delta::<T>(name, BytesDelta::Xor)
    }

    /// Registers a plain-old-data component with a chosen delta coding:
    /// [`BytesDelta::Words`] for structs of 32-bit counters, timers and
    /// fixed-point numbers (each word's difference, a few bits when it
    /// moves a little), [`BytesDelta::None`] to always send it whole.
    pub fn pod_with_delta<T: Component + bytemuck::Pod>(
        self,
        name: &str,
        delta: BytesDelta,
    ) -> Result<Self, RegistryError> {
        self.with_codec::<T, PodCodec>(name, PodCodec(delta))
    }

    /// Registers the position component: fixed point with step `unit` and
    /// `bits` bits per axis. Interest management reads it.
    pub fn position<T: Component + AsPosition>(self, name: &str, unit: f32, bits: u32) -> Result<Self, RegistryError> {
        if self.position.is_some() {
            return Err(RegistryError::Duplicate("position component"));
        }
        let q = PositionQuantizer::new(unit, bits).map_err(RegistryError::Quantizer)?;
        let index = self.names.len();
        let mut me = self.with_codec::<T, PositionCodec>(name, PositionCodec(q))?;
        me.position = Some(index);
        me.position_writer = Some(Arc::new(|world: &mut World, entity: Entity, p: Vec3| {
            if let Ok(mut c) = world.get_mut::<T>(entity)
                && c.position() != p
            {
                *c = T::from_position(p);
            }
        }));
        Ok(me)
    }

    /// Registers the rotation component: smallest three, `bits` bits per
    /// component (9 gives 29 bits in all).
    pub fn rotation<T: Component + AsRotation>(self, name: &str, bits: u32) -> Result<Self, RegistryError> {
        if self.rotation.is_some() {
            return Err(RegistryError::Duplicate("rotation component"));
        }
        let q = RotationQuantizer::new(bits).map_err(RegistryError::Quantizer)?;
        let index = self.names.len();
        let mut me = self.with_codec::<T, RotationCodec>(name, RotationCodec(q))?;
        me.rotation = Some(index);
        me.rotation_writer = Some(Arc::new(|world: &mut World, entity: Entity, r: Quat| {
            if let Ok(mut c) = world.get_mut::<T>(entity)
                && c.rotation() != r
            {
                *c = T::from_rotation(r);
            }
        }));
        Ok(me)
    }

    /// Marks the registered component `T` as predicted: on a client, the
    /// entities marked [`Predicted`] (the ones it controls) run ahead of
    /// the server, and a snapshot value of `T` that differs from the
    /// prediction for its tick by more than `tolerance` (in quantization
    /// steps: position units, rotation levels; bytes compare exactly)
    /// triggers a rollback (see [`crate::prediction`]). Everything the
    /// simulation of a predicted entity reads should be registered and
    /// predicted, or a re-simulation starts from a mix of server and
    /// predicted state.
    pub fn predict<T: Component>(mut self, tolerance: u32) -> Result<Self, RegistryError> {
        let index = self.index_of::<T>().ok_or(RegistryError::NotRegistered(std::any::type_name::<T>()))?;
        self.predicted[index] = Some(tolerance);
        Ok(self)
    }

    /// The schema index of component type `T`.
    pub fn index_of<T: Component>(&self) -> Option<usize> {
        self.types.iter().position(|t| *t == TypeId::of::<T>())
    }

    /// The tolerance of component `index` if it is predicted.
    pub fn predicted(&self, index: usize) -> Option<u32> {
        self.predicted.get(index).copied().flatten()
    }

    /// The predicted components (schema bits).
    pub fn predicted_mask(&self) -> u64 {
        self.predicted.iter().enumerate().filter(|(_, p)| p.is_some()).fold(0, |m, (i, _)| m | 1 << i)
    }

    /// The wire schema.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The schema index of the position component.
    pub fn position_index(&self) -> Option<usize> {
        self.position
    }

    /// The schema index of the rotation component.
    pub fn rotation_index(&self) -> Option<usize> {
        self.rotation
    }

    /// The position quantizer, if a position is registered.
    pub fn position_quantizer(&self) -> Option<PositionQuantizer> {
        match self.position.and_then(|i| self.schema.codec(i)) {
            Some(FieldCodec::Position(q)) => Some(q),
            _ => None,
        }
    }

    /// The rotation quantizer, if a rotation is registered.
    pub fn rotation_quantizer(&self) -> Option<RotationQuantizer> {
        match self.rotation.and_then(|i| self.schema.codec(i)) {
            Some(FieldCodec::Rotation(q)) => Some(q),
            _ => None,
        }
    }

    pub(crate) fn writers(&self) -> (Option<PositionWriter>, Option<RotationWriter>) {
        (self.position_writer.clone(), self.rotation_writer.clone())
    }

    /// Whether component `index` holds entity references.
    pub fn is_mapped(&self, index: usize) -> bool {
        self.mapped.get(index).copied().unwrap_or(false)
    }

    pub(crate) fn columns(&self, world: &mut World) -> Vec<Box<dyn Column>> {
        self.factories.iter().map(|f| f(world)).collect()
    }
}

struct ArcCodec<C>(std::sync::Arc<C>);

impl<T, C: ComponentCodec<T>> ComponentCodec<T> for ArcCodec<C> {
    fn field(&self) -> FieldCodec {
        self.0.field()
    }
    fn encode(&self, value: &T) -> Result<Value, QuantizeError> {
        self.0.encode(value)
    }
    fn decode(&self, value: &Value) -> Option<T> {
        self.0.decode(value)
    }
}
