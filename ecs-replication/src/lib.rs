//! # ecs-replication: per-client delta snapshots driven by chunk ticks
//!
//! **Status: not built yet.** This crate will hold server-authoritative state
//! sync in the Quake 3 / Fiedler model: per-client acknowledged baselines,
//! deltas found through `ecs-core`'s chunk ticks (skip) and row ticks (which
//! rows), quantization (smallest-three rotations), bit packing, interest
//! management from `ecs-spatial`, a byte budget per packet, and a wire codec
//! that treats every byte as hostile.
//!
//! It is for sending game state from one server to many clients. It is not a
//! general-purpose RPC or reliable-messaging layer.
#![forbid(unsafe_code)]
