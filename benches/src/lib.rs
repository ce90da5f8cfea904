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
//! * [`replication`]: the `replication` scenario (ours only): cube-scene
//!   bandwidth per client under loss and at rest, encode cost per client per
//!   tick, fan-out; its criterion bench is `benches/replication.rs`, and
//!   `benches/replication_fuzz.rs` fuzzes the wire formats (100 000 cases).
//!
//! * [`scenes::game`]: the `game` scenario, the showcase's scene as whole
//!   frames on our ECS and on bevy (feature `peers`), both worlds checked
//!   equal; its criterion bench is `benches/game.rs`.
//!
//! Run `cargo run --release -p ecs-bench --features peers -- suite` (or `skip`,
//! `schedule`, `transform`, `spatial`, `replication`, `game`, `all`; add `--quick` for a short run, `--json` for one JSON object per line,
//! `--skip-1m` to leave out `game`'s 1M-entity case).

#![forbid(unsafe_code)]

pub mod cli;
pub mod measure;
pub mod replication;
pub mod report;
pub mod runner;
pub mod scenes;
