//! # ecs-transform: hierarchy propagation that skips unchanged chunks
//!
//! **Status: not built yet.** This crate will hold `LocalTransform`
//! (translation, rotation, scale), `GlobalTransform` (affine), `ChildOf` and
//! `Children`, and a propagation system that walks parents before children
//! and skips every 16 KiB chunk of `ecs-core` whose locals did not change and
//! whose rows' parents did not move since the system last ran.
//!
//! It is for games that keep scene graphs in the ECS. It is not a physics
//! engine and not a renderer.
#![forbid(unsafe_code)]
