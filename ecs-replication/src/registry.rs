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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Replicated;

/// On a client: marks an entity it predicts (runs ahead of the server with
/// its own inputs; see [`crate::prediction`]). Snapshot values of its
/// predicted components are compared with the prediction instead of being
/// written into the world.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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

/// What the server and client do with one registered component type,
/// without naming the type.
pub(crate) trait Column: Send + Sync {
    /// Calls `f` for every replicated entity whose component was written
    /// since this column's previous scan (chunk ticks first, then row
    /// ticks). The first scan sees everything.
    fn scan_changed(&mut self, world: &World, f: &mut dyn FnMut(Entity, Result<Value, QuantizeError>));
    /// Appends the replicated entities that lost the component since the
    /// previous call and do not have it now (a removal and a re-insert in
    /// between is a change, which [`Column::scan_changed`] reports). The
    /// first call starts the removal log (the world logs removals of a
    /// type only while a reader exists), so only the server pays for it.
    fn scan_removed(&mut self, world: &mut World, out: &mut Vec<Entity>);
    /// Chunk counts of the latest [`Column::scan_changed`].
    fn scan_stats(&self) -> ChunkStats;
    /// The wire value of one entity's component, if it has one.
    fn read(&self, world: &World, entity: Entity) -> Option<Result<Value, QuantizeError>>;
    /// Writes a wire value into a (client) entity. `false` if the value
    /// does not fit the codec or the entity is gone.
    fn write(&self, world: &mut World, entity: Entity, value: &Value) -> bool;
    /// Removes the component from a (client) entity, if it has it.
    fn remove(&self, world: &mut World, entity: Entity);
    /// Appends the wire value of every [`Predicted`] entity's component
    /// (the query matches the predicted archetypes only).
    fn save_predicted(&mut self, world: &World, index: u8, out: &mut Vec<(Entity, u8, Value)>);
}

/// Replicated rows whose `T` was written since the last scan.
type ChangedReplicated<T> = (Changed<T>, With<Replicated>);

struct TypedColumn<T: Component, C: ComponentCodec<T>> {
    codec: C,
    changed: QueryState<(Entity, &'static T), ChangedReplicated<T>>,
    predicted: QueryState<(Entity, &'static T), With<Predicted>>,
    removed: Option<RemovedReader<T>>,
    _marker: PhantomData<fn() -> T>,
}

impl<T: Component, C: ComponentCodec<T>> Column for TypedColumn<T, C> {
    fn scan_changed(&mut self, world: &World, f: &mut dyn FnMut(Entity, Result<Value, QuantizeError>)) {
        let codec = &self.codec;
        self.changed.for_each_chunk(world, |view: ChunkView<'_, (Entity, &T), ChangedReplicated<T>>| {
            for (entity, value) in view.items() {
                f(entity, codec.encode(value));
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

    fn read(&self, world: &World, entity: Entity) -> Option<Result<Value, QuantizeError>> {
        world.get::<T>(entity).ok().map(|v| self.codec.encode(v))
    }

    fn write(&self, world: &mut World, entity: Entity, value: &Value) -> bool {
        match self.codec.decode(value) {
            Some(v) => world.insert_one(entity, v).is_ok(),
            None => false,
        }
    }

    fn remove(&self, world: &mut World, entity: Entity) {
        let _ = world.remove_one::<T>(entity);
    }

    fn save_predicted(&mut self, world: &World, index: u8, out: &mut Vec<(Entity, u8, Value)>) {
        let codec = &self.codec;
        self.predicted.for_each(world, |(entity, value)| {
            if let Ok(v) = codec.encode(value) {
                out.push((entity, index, v));
            }
        });
    }
}

type ColumnFactory = Box<dyn Fn(&mut World) -> Box<dyn Column> + Send + Sync>;

/// The replicated component types, in wire order. Server and client must
/// register the same types in the same order with the same codecs.
///
/// ```
/// use ecs_replication::registry::{AsPosition, Registry};
/// use glam::Vec3;
///
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// struct Position(Vec3);
/// impl AsPosition for Position {
///     fn position(&self) -> Vec3 { self.0 }
///     fn from_position(p: Vec3) -> Self { Position(p) }
/// }
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
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
            factories: Vec::new(),
            position: None,
            rotation: None,
            position_writer: None,
            rotation_writer: None,
            schema: Schema::new(Vec::new()).expect("an empty schema is valid"),
        }
    }

    /// Registers `T` with any codec.
    pub fn with_codec<T: Component, C: ComponentCodec<T>>(
        mut self,
        name: &str,
        codec: C,
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
        let codec = std::sync::Arc::new(codec);
        self.factories.push(Box::new(move |world: &mut World| {
            let codec = std::sync::Arc::clone(&codec);
            Box::new(TypedColumn::<T, ArcCodec<C>> {
                codec: ArcCodec(codec),
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
