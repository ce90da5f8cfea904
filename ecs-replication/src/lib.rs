//! # ecs-replication: per-client delta snapshots driven by chunk ticks
//!
//! **Status: the wire layer is built; the server, client and transport are
//! not yet.** This crate will hold server-authoritative state sync in the
//! Quake 3 / Fiedler model: per-client acknowledged baselines, deltas found
//! through `ecs-core`'s chunk ticks (skip) and row ticks (which rows),
//! interest management from `ecs-spatial`, a byte budget per packet, and a
//! wire codec that treats every byte as hostile.
//!
//! Built so far, with no ECS types in their signatures (usable on their own):
//! - [`bits`]: a bit writer and a bounds-checked bit reader (varints, bounded
//!   lengths; reading hostile bytes returns errors, never panics).
//! - [`quantize`]: positions as signed fixed point (error at most half a
//!   unit) and rotations as smallest three (29 bits at 9 bits per
//!   component).
//! - [`codec`]: the snapshot packet format (spawn, update and despawn
//!   entries, per-component codecs from a shared [`codec::Schema`], position
//!   deltas against the baseline) and a decoder that refuses malformed or
//!   hostile packets with an error value.
//!
//! It is for sending game state from one server to many clients. It is not
//! a general-purpose RPC or reliable-messaging layer.
#![forbid(unsafe_code)]

pub mod bits;
pub mod codec;
pub mod quantize;
