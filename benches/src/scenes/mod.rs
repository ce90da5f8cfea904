//! Scene definitions, one module per ECS implementation.
//!
//! Every implementation builds the *same* scenes from the constants and
//! initial values defined here, so the CLI and the criterion benches compare
//! identical work. [`ours`] is this workspace's `ecs-core`; `bevy` and `hecs`
//! (feature `peers`) are the reference implementations.
//!
//! Suite scenes implement [`Frame`]; change-detection scenes implement
//! [`SkipScene`].

use glam::{Mat4, Vec3};

pub mod ours;

#[cfg(feature = "peers")]
pub mod bevy;
#[cfg(feature = "peers")]
pub mod hecs;

/// Entities in `simple_insert` and `simple_iter`.
pub const SIMPLE_ENTITIES: usize = 10_000;
/// Entities per archetype in `frag_iter` (26 archetypes).
pub const FRAG_PER_ARCHETYPE: usize = 20;
/// Entities in `heavy_compute`.
pub const HEAVY_ENTITIES: usize = 1_000;
/// Matrix inversions per entity per frame in `heavy_compute`.
pub const HEAVY_INVERSIONS: usize = 100;
/// Entities in `add_remove`.
pub const ADD_REMOVE_ENTITIES: usize = 10_000;
/// Entities in the chunk-skip scenario.
pub const SKIP_ENTITIES: usize = 100_000;

/// Initial transform matrix of `simple_*` entities.
pub fn simple_transform() -> Mat4 {
    Mat4::from_scale(Vec3::ONE)
}

/// Initial transform matrix of `heavy_compute` entities (invertible, not the identity).
pub fn heavy_transform() -> Mat4 {
    Mat4::from_axis_angle(Vec3::X, 1.2)
}

/// The per-entity work of `heavy_compute`: invert the matrix
/// [`HEAVY_INVERSIONS`] times, then transform the position by it.
#[inline]
pub fn heavy_work(pos: &mut Vec3, mat: &mut Mat4) {
    for _ in 0..HEAVY_INVERSIONS {
        *mat = mat.inverse();
    }
    *pos = mat.transform_vector3(*pos);
}

/// Initial position of entity `i` in the chunk-skip scenario.
pub fn skip_position(i: usize) -> Vec3 {
    let i = i as f32;
    Vec3::new(i, i * 0.5, -i)
}

/// The consumer's per-row work in the chunk-skip scenario.
#[inline]
pub fn skip_matrix(pos: Vec3) -> Mat4 {
    Mat4::from_translation(pos)
}

/// The ecs_bench_suite cases, in report order.
pub const SUITE_CASES: [&str; 5] = ["simple_insert", "simple_iter", "frag_iter", "heavy_compute", "add_remove"];

/// Which entities the writer touches each frame in the chunk-skip scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// No entity changes.
    None,
    /// A contiguous run of spawn-order entities (centred in the world, so it
    /// does not start on a chunk boundary by construction).
    Clustered,
    /// Every k-th entity in spawn order.
    Scattered,
}

/// One case of the chunk-skip scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SkipCase {
    /// Case name as reported (`changed_0`, `clustered_5pct`, ...).
    pub name: &'static str,
    /// Percentage of the entities that move each frame.
    pub percent: usize,
    /// How the movers are laid out in spawn order.
    pub layout: Layout,
}

impl SkipCase {
    /// Spawn-order indices of the movers among `n` entities.
    pub fn mover_indices(&self, n: usize) -> Vec<usize> {
        let count = n * self.percent / 100;
        match self.layout {
            Layout::None => Vec::new(),
            Layout::Clustered => {
                let start = (n - count) / 2;
                (start..start + count).collect()
            }
            Layout::Scattered => {
                if self.percent == 0 {
                    return Vec::new();
                }
                let stride = 100 / self.percent;
                (0..n).step_by(stride).take(count).collect()
            }
        }
    }
}

/// The chunk-skip cases, in report order.
pub const SKIP_CASES: [SkipCase; 8] = [
    SkipCase { name: "changed_0", percent: 0, layout: Layout::None },
    SkipCase { name: "clustered_1pct", percent: 1, layout: Layout::Clustered },
    SkipCase { name: "clustered_5pct", percent: 5, layout: Layout::Clustered },
    SkipCase { name: "clustered_10pct", percent: 10, layout: Layout::Clustered },
    SkipCase { name: "clustered_100pct", percent: 100, layout: Layout::Clustered },
    SkipCase { name: "scattered_1pct", percent: 1, layout: Layout::Scattered },
    SkipCase { name: "scattered_5pct", percent: 5, layout: Layout::Scattered },
    SkipCase { name: "scattered_10pct", percent: 10, layout: Layout::Scattered },
];

/// Chunk counters of one query run (only `ours` has them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChunkCounts {
    /// Chunks the query matched.
    pub total: u64,
    /// Matched chunks skipped without touching their rows.
    pub skipped: u64,
}

/// A suite scene: [`Frame::frame`] is the timed unit.
pub trait Frame {
    /// Runs one frame (one benchmark iteration).
    fn frame(&mut self);

    /// Chunk counters of the last frame's query, where the implementation has them.
    fn chunk_counts(&self) -> Option<ChunkCounts> {
        None
    }
}

/// A chunk-skip scene: an untimed writer, then a timed consumer.
pub trait SkipScene {
    /// Number of entities the writer changes each frame.
    fn movers(&self) -> usize;

    /// Untimed part of a frame: writes `Pos` of the movers and advances the
    /// change tick so that the consumer sees exactly these writes.
    fn write(&mut self);

    /// Timed part of a frame: recomputes `Matrix` for the rows whose `Pos`
    /// changed; returns the number of rows processed.
    fn consume(&mut self) -> usize;

    /// Chunk counters of the last [`SkipScene::consume`], where the implementation has them.
    fn chunk_counts(&self) -> Option<ChunkCounts> {
        None
    }

    /// Runs a few untimed frames and checks that the consumer processes
    /// exactly the movers each time. The first frame (which also sees the
    /// spawns) is not checked.
    fn check(&mut self) -> Result<(), String> {
        self.write();
        self.consume();
        for frame in 0..3 {
            self.write();
            let rows = self.consume();
            if rows != self.movers() {
                return Err(format!("frame {frame}: consumer processed {rows} rows, writer moved {}", self.movers()));
            }
        }
        Ok(())
    }
}

/// Defines the suite and chunk-skip component newtypes in the calling module;
/// extra attributes (such as `#[derive(Component)]`) are applied to each type.
macro_rules! define_components {
    ($(#[$attr:meta])*) => {
        /// Transform matrix (`simple_*`, `heavy_compute`).
        $(#[$attr])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct Transform(pub glam::Mat4);

        /// Position.
        $(#[$attr])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct Pos(pub glam::Vec3);

        /// Rotation.
        $(#[$attr])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct Rot(pub glam::Vec3);

        /// Velocity.
        $(#[$attr])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct Vel(pub glam::Vec3);

        /// The matrix recomputed by the chunk-skip consumer.
        $(#[$attr])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct Matrix(pub glam::Mat4);

        /// Component present on every `add_remove` entity.
        $(#[$attr])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct A(pub f32);

        /// Component inserted and removed by `add_remove`.
        $(#[$attr])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct B(pub f32);

        /// The data iterated by `frag_iter`.
        $(#[$attr])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct Data(pub f32);

        /// The 26 archetype tags of `frag_iter`.
        pub mod frag {
            $crate::scenes::define_components!(@frag [$(#[$attr])*] FA FB FC FD FE FF FG FH FI FJ FK FL FM FN FO FP FQ FR FS FT FU FV FW FX FY FZ);
        }
    };
    (@frag [$($attrs:tt)*]) => {};
    (@frag [$($attrs:tt)*] $name:ident $($rest:ident)*) => {
        /// A `frag_iter` archetype tag.
        $($attrs)*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct $name(pub f32);

        $crate::scenes::define_components!(@frag [$($attrs)*] $($rest)*);
    };
}
pub(crate) use define_components;

/// Calls `$mac!(Tag)` for each of the 26 `frag_iter` tags of the calling module.
macro_rules! for_each_frag_tag {
    ($mac:ident) => {
        $mac!(FA);
        $mac!(FB);
        $mac!(FC);
        $mac!(FD);
        $mac!(FE);
        $mac!(FF);
        $mac!(FG);
        $mac!(FH);
        $mac!(FI);
        $mac!(FJ);
        $mac!(FK);
        $mac!(FL);
        $mac!(FM);
        $mac!(FN);
        $mac!(FO);
        $mac!(FP);
        $mac!(FQ);
        $mac!(FR);
        $mac!(FS);
        $mac!(FT);
        $mac!(FU);
        $mac!(FV);
        $mac!(FW);
        $mac!(FX);
        $mac!(FY);
        $mac!(FZ);
    };
}
pub(crate) use for_each_frag_tag;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mover_counts() {
        for case in SKIP_CASES {
            let movers = case.mover_indices(SKIP_ENTITIES);
            assert_eq!(movers.len(), SKIP_ENTITIES * case.percent / 100, "{}", case.name);
            assert!(movers.windows(2).all(|w| w[0] < w[1]));
            assert!(movers.iter().all(|&i| i < SKIP_ENTITIES));
        }
        let scattered = SKIP_CASES[6].mover_indices(SKIP_ENTITIES);
        assert_eq!(scattered[1] - scattered[0], 20);
    }
}
