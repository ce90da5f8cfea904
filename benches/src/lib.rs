//! Benchmarks of the chunked archetype ECS (`ecs-core`) against `bevy_ecs`
//! 0.20 and `hecs` 0.11, of `ecs-transform` against `bevy_transform` 0.20, and
//! of `ecs-spatial`'s sparse grid against kiddo 6.3 and rstar 0.14.
//!
//! * [`scenes`]: one set of scene definitions per implementation, shared by
//!   the `ecs-bench` CLI and the criterion benches (`benches/suite.rs`,
//!   `benches/skip.rs`, `benches/schedule.rs`, `benches/transform.rs`,
//!   `benches/spatial.rs`). The peers are compiled only with feature `peers`.
//! * [`measure`]: warm-up, batched samples, median in microseconds.
//! * [`report`]: `ecs-bench report`, the HTML page with SVG charts.
//! * [`runner`]: runs the `suite`, `skip`, `schedule`, `transform` and `spatial` scenarios and prints them.
//!
//! Run `cargo run --release -p ecs-bench --features peers -- suite` (or `skip`,
//! `schedule`, `transform`, `spatial`, `all`; add `--quick` for a short run, `--json` for one JSON object per line).

#![forbid(unsafe_code)]

pub mod cli;
pub mod measure;
pub mod replication;
pub mod report;
pub mod runner;
pub mod scenes;
