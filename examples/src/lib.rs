//! Scenes shared by the example binaries and the showcase: each module builds
//! a world and the systems that drive it, so a binary is only flags and output.
pub mod arena;
pub mod boids;
pub mod cli;
pub mod cubes;
pub mod melee;
pub mod pong;
pub mod showcase;

/// The workspace README's code blocks, run as doc tests (this crate depends
/// on every other, so all their samples compile here).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
