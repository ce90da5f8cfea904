//! # ecs-spatial: exact cell keys, point encoding and a compact sparse grid
//!
//! This crate finds neighbours among many moving points, fast, on plain
//! slices. It has two halves that work without any ECS types:
//!
//! - **Point encoding** ([`cell`], [`config`], [`region`], [`seed`], [`batch`]):
//!   exact cell keys `floor((p - origin) / cell_size)` packed 21 bits per axis
//!   into a `u64` (errors, never wrap-around, for out-of-range or non-finite
//!   input), fixed-point quantization with a bounded error of half a unit, a
//!   versioned [`EncodingConfig`] two ends can compare, two-level
//!   [`RegionKey`]s for worlds beyond 2^21 cells, deterministic per-cell seeds,
//!   de-duplication and migration between config versions.
//! - **Compact sparse grid** ([`grid`], [`query`]): points sorted by cell key
//!   (one counting pass over a small bounding box of cells, else an LSD radix
//!   sort), a cell table of `(key, start, count)`, and radius,
//!   box, k-nearest and all-pairs queries that equal brute force exactly,
//!   sequential or on rayon, without allocating per query.
//!
//! It is not a narrow-phase collision library, and it does not own your
//! points: rebuild it from your position slices whenever they change, or
//! edit it in place ([`SparseGrid::apply_edits`]).
//!
//! With the default feature `ecs`, [`broad_phase`] adds the broad-phase
//! system for `ecs-core` worlds: a [`BroadPhase`] resource kept in sync with
//! a position component by [`update_broad_phase`], which reads chunk ticks so
//! a frame where nothing moved costs O(chunks) and a frame where few moved
//! re-keys only the changed rows, and [`plugin`] the [`BroadPhasePlugin`]
//! that adds it to an `ecs_core::App` in one line. Without the feature the
//! crate does not depend on `ecs-core`.
//!
//! ```
//! use ecs_spatial::{EncodingConfig, SparseGrid};
//! use glam::Vec3;
//!
//! // Keys: floor, not truncation.
//! let config = EncodingConfig::new(Vec3::ZERO, 1.0, 0.01, 1).unwrap();
//! assert_eq!(config.cell_key(Vec3::new(-0.5, 1.7, -1.7)).unwrap().to_string(), "(-1, 1, -2)");
//!
//! // A grid over plain slices.
//! let positions = vec![Vec3::new(0.5, 0.5, 0.5), Vec3::new(1.5, 0.5, 0.5), Vec3::new(9.0, 9.0, 9.0)];
//! let ids = vec![7u32, 8, 9];
//! let mut grid = SparseGrid::new(Vec3::ZERO, 1.0).unwrap();
//! grid.rebuild(&ids, &positions).unwrap();
//! let mut near = Vec::new();
//! grid.query_radius(Vec3::new(1.0, 0.5, 0.5), 0.6, &mut near);
//! near.sort();
//! assert_eq!(near, vec![7, 8]);
//! ```
#![forbid(unsafe_code)]

pub mod batch;
#[cfg(feature = "ecs")]
pub mod broad_phase;
pub mod cell;
pub mod cell_size;
pub mod config;
pub mod error;
pub mod grid;
mod hash;
mod kernel;
#[cfg(feature = "ecs")]
pub mod plugin;
pub mod point;
pub mod positions;
pub mod query;
pub mod radix;
pub mod region;
pub mod seed;
mod sweep;

pub use batch::{
    decode_cell_centers, dedup_keys, dedup_quantized, dequantize_points, encode_cell_keys, migrate_cell_keys,
    migrate_quantized, quantize_points,
};
#[cfg(feature = "ecs")]
pub use broad_phase::{
    BroadPhase, BroadPhaseStats, Position, SpatialPosition, default_rebuild_share, update_broad_phase,
};
pub use cell::{AXIS_BITS, CELL_MAX, CELL_MIN, CellCoord, CellKey, cell_axis, cell_of, cell_of_2d};
pub use cell_size::suggest_cell_size;
pub use config::{EncodingConfig, quantize_axis};
pub use error::{BatchError, ConfigError, ConfigField, EncodeError, GridError};
pub use grid::{BuildKind, GridStats, LookupKind};
pub use grid::{Cell, CellLookup, SparseGrid};
#[cfg(feature = "ecs")]
pub use plugin::{BroadPhasePlugin, SpatialSystems};
pub use point::{EntityId, GridPoint};
pub use positions::{GridPositions, GridPositionsIter};
pub use query::{BatchWork, Neighbor, NeighborLists, cell_probes};
pub use radix::radix_sort_by_key;
pub use region::{GLOBAL_CELL_MAX, GLOBAL_CELL_MIN, GlobalCell, RegionId, RegionKey};
pub use seed::{CellRng, cell_seed, mix64, region_cell_seed};

/// A deterministic stream of values in `[0, 1)` (a 64-bit LCG from
/// `seed`), for the tests' point sets.
#[cfg(test)]
pub(crate) fn lcg_unit(mut seed: u64) -> impl FnMut() -> f32 {
    move || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// Floats in `lo..hi` for property tests, drawn through a 40-bit integer
/// (finer than any `f32` step in the range): proptest's own `f32` range
/// sampler can fail a debug assertion of its own on some seeds.
#[cfg(test)]
pub(crate) fn uniform_f32(lo: f32, hi: f32) -> impl proptest::strategy::Strategy<Value = f32> {
    use proptest::strategy::Strategy;
    (0u64..1 << 40).prop_map(move |k| {
        let v = (f64::from(lo) + (f64::from(hi) - f64::from(lo)) * (k as f64 / (1u64 << 40) as f64)) as f32;
        // Rounding to `f32` may reach `hi`, which the range excludes.
        if v < hi { v } else { lo }
    })
}

/// The README's examples, run as doc tests.
#[cfg(all(doctest, feature = "ecs"))] // the README shows the ECS system too
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
