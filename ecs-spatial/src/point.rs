//! The point and id types a [`SparseGrid`](crate::SparseGrid) works on.

use std::fmt::Debug;

use glam::{Vec2, Vec3};

/// A position a grid can index: [`Vec2`] or [`Vec3`].
///
/// 2D points live in the `z = 0` layer of the cell key space. All distances
/// the grid compares come from [`GridPoint::distance_squared`], so a brute-force
/// check that uses the same function agrees with the grid bit for bit.
pub trait GridPoint: Copy + Debug + PartialEq + Send + Sync + 'static {
    /// 2 or 3.
    const DIMENSIONS: usize;

    /// The point as a 3D vector (`z = 0` for 2D).
    fn to_vec3(self) -> Vec3;

    /// The point of a 3D vector (`z` dropped for 2D): the inverse of
    /// [`to_vec3`](Self::to_vec3), bit for bit. A grid keeps its points as
    /// coordinate arrays and hands them back through this.
    fn from_vec3(v: Vec3) -> Self;

    /// Squared Euclidean distance, `(self - other)` dotted with itself.
    fn distance_squared(self, other: Self) -> f32;

    /// Whether `min <= self <= max` on every axis.
    fn in_box(self, min: Self, max: Self) -> bool;

    /// Whether every component is finite.
    fn is_finite(self) -> bool;
}

impl GridPoint for Vec3 {
    const DIMENSIONS: usize = 3;

    #[inline]
    fn to_vec3(self) -> Vec3 {
        self
    }

    #[inline]
    fn from_vec3(v: Vec3) -> Self {
        v
    }

    #[inline]
    fn distance_squared(self, other: Self) -> f32 {
        Vec3::distance_squared(self, other)
    }

    #[inline]
    fn in_box(self, min: Self, max: Self) -> bool {
        self.x >= min.x && self.y >= min.y && self.z >= min.z && self.x <= max.x && self.y <= max.y && self.z <= max.z
    }

    #[inline]
    fn is_finite(self) -> bool {
        Vec3::is_finite(self)
    }
}

impl GridPoint for Vec2 {
    const DIMENSIONS: usize = 2;

    #[inline]
    fn to_vec3(self) -> Vec3 {
        self.extend(0.0)
    }

    #[inline]
    fn from_vec3(v: Vec3) -> Self {
        v.truncate()
    }

    #[inline]
    fn distance_squared(self, other: Self) -> f32 {
        Vec2::distance_squared(self, other)
    }

    #[inline]
    fn in_box(self, min: Self, max: Self) -> bool {
        self.x >= min.x && self.y >= min.y && self.x <= max.x && self.y <= max.y
    }

    #[inline]
    fn is_finite(self) -> bool {
        Vec2::is_finite(self)
    }
}

/// An id stored next to each point, handed back by queries: `u32`, `u64`, or
/// any small ordered value (an ECS entity handle, later). `Ord` breaks ties in
/// k-nearest results.
pub trait EntityId: Copy + Debug + Ord + Send + Sync + 'static {}

impl<T: Copy + Debug + Ord + Send + Sync + 'static> EntityId for T {}
