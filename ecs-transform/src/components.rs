//! The transform and hierarchy components.
//!
//! [`LocalTransform`] is what game code writes; [`GlobalTransform`] is what
//! the propagation system computes. [`ChildOf`] and [`Children`] describe
//! the hierarchy; they have no public constructor, so only the functions of
//! [`crate::hierarchy`] create them and the two directions of every link
//! always agree.

use ecs_core::{Component, Entity};
use glam::{Affine3A, Quat, Vec3};
use smallvec::SmallVec;

/// An entity's transform relative to its parent (to the world for a root).
///
/// ```
/// use ecs_transform::LocalTransform;
/// use glam::Vec3;
/// let t = LocalTransform::from_xyz(1.0, 2.0, 3.0).with_scale(Vec3::splat(2.0));
/// assert_eq!(t.to_affine().transform_point3(Vec3::ONE), Vec3::new(3.0, 4.0, 5.0));
/// ```
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct LocalTransform {
    /// Position.
    pub translation: Vec3,
    /// Orientation.
    pub rotation: Quat,
    /// Scale per axis.
    pub scale: Vec3,
}

impl LocalTransform {
    /// No translation, no rotation, unit scale.
    pub const IDENTITY: LocalTransform =
        LocalTransform { translation: Vec3::ZERO, rotation: Quat::IDENTITY, scale: Vec3::ONE };

    /// A pure translation.
    pub const fn from_translation(translation: Vec3) -> Self {
        LocalTransform { translation, ..Self::IDENTITY }
    }

    /// A pure translation from coordinates.
    pub const fn from_xyz(x: f32, y: f32, z: f32) -> Self {
        Self::from_translation(Vec3::new(x, y, z))
    }

    /// A pure rotation.
    pub const fn from_rotation(rotation: Quat) -> Self {
        LocalTransform { rotation, ..Self::IDENTITY }
    }

    /// This transform with another rotation.
    pub const fn with_rotation(self, rotation: Quat) -> Self {
        LocalTransform { rotation, ..self }
    }

    /// This transform with another scale.
    pub const fn with_scale(self, scale: Vec3) -> Self {
        LocalTransform { scale, ..self }
    }

    /// The affine matrix: scale, then rotate, then translate.
    #[inline]
    pub fn to_affine(&self) -> Affine3A {
        Affine3A::from_scale_rotation_translation(self.scale, self.rotation, self.translation)
    }
}

impl Default for LocalTransform {
    fn default() -> Self {
        Self::IDENTITY
    }
}

/// An entity's transform relative to the world: its parent's global times
/// its local. Written by [`crate::propagate_transforms`], and only when the
/// value changes, so `Changed<GlobalTransform>` lists exactly the entities
/// that moved.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct GlobalTransform(pub Affine3A);

impl GlobalTransform {
    /// The identity.
    pub const IDENTITY: GlobalTransform = GlobalTransform(Affine3A::IDENTITY);

    /// The affine matrix.
    pub fn affine(&self) -> Affine3A {
        self.0
    }

    /// The world position.
    pub fn translation(&self) -> Vec3 {
        self.0.translation.into()
    }

    /// Maps a point from the entity's space to the world.
    pub fn transform_point(&self, point: Vec3) -> Vec3 {
        self.0.transform_point3(point)
    }
}

impl Default for GlobalTransform {
    fn default() -> Self {
        Self::IDENTITY
    }
}

impl From<LocalTransform> for GlobalTransform {
    fn from(local: LocalTransform) -> Self {
        GlobalTransform(local.to_affine())
    }
}

/// The components a transformed entity is spawned with: its local transform
/// and a global one the propagation system fills in. Either may also be
/// inserted later: the next propagation computes the entity then.
///
/// ```
/// use ecs_core::World;
/// use ecs_transform::{LocalTransform, transform_bundle};
/// let mut world = World::new();
/// let e = world.spawn(transform_bundle(LocalTransform::from_xyz(1.0, 0.0, 0.0)));
/// assert!(world.has::<ecs_transform::GlobalTransform>(e).unwrap());
/// ```
pub fn transform_bundle(local: LocalTransform) -> (LocalTransform, GlobalTransform) {
    (local, GlobalTransform::from(local))
}

/// The parent of a child entity. Spawn or insert it in a bundle
/// (`world.spawn((local, GlobalTransform::from(local), ChildOf(parent)))`:
/// a bundle tuple takes components, not the tuple `transform_bundle`
/// returns), or use
/// [`crate::WorldHierarchyExt::set_parent`] or its command form: hooks keep
/// the parent's [`Children`] in step, refuse a link that would close a cycle
/// and make the children of a despawned parent roots (see
/// [`crate::hierarchy`]). Re-parent by inserting a new `ChildOf`, never by
/// writing one in place (that bypasses the hooks).
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChildOf(pub Entity);

impl ChildOf {
    /// The parent.
    pub fn parent(&self) -> Entity {
        self.0
    }
}

/// The children of a parent entity, in the order they were attached.
/// Maintained by the hierarchy hooks from the children's [`ChildOf`]; never
/// empty (the component is removed with the last child).
#[derive(Component, Clone, Debug, PartialEq, Eq)]
pub struct Children(pub(crate) SmallVec<[Entity; 8]>);

impl Children {
    /// The children as a slice.
    pub fn as_slice(&self) -> &[Entity] {
        &self.0
    }

    /// How many children.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none (never true for a stored component).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `entity` is a child.
    pub fn contains(&self, entity: Entity) -> bool {
        self.0.contains(&entity)
    }

    /// The children, in order.
    pub fn iter(&self) -> impl Iterator<Item = Entity> + '_ {
        self.0.iter().copied()
    }
}
