//! # ecs-spatial: point encoding and a compact sparse grid broad phase
//!
//! **Status: not built yet.** This crate will hold exact cell keys
//! (`floor((p - origin) / cell)` per axis, packed 21 bits per axis into a
//! `u64`), fixed-point point encoding with a versioned config, a compact sparse
//! grid built by radix sort over plain slices, radius / box / k-nearest /
//! all-pairs queries, and a broad-phase system that re-keys only rows whose
//! positions changed, found through `ecs-core`'s chunk ticks.
//!
//! It is for neighbour finding among many moving points. It is not a
//! narrow-phase collision library.
#![forbid(unsafe_code)]
