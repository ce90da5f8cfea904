//! Benchmarks of the chunked archetype ECS (`ecs-core`) against `bevy_ecs`
//! 0.20 and `hecs` 0.11, of `ecs-transform` against `bevy_transform` 0.20,
//! of `ecs-spatial`'s sparse grid against kiddo 6.3 and rstar 0.14, of
//! snapshot replication, and of whole game frames against bevy.
//!
//! * [`scenarios`]: the one table of scenarios ([`scenarios::SCENARIOS`]:
//!   name, description, cases, driver, table, goals) that the `ecs-bench`
//!   CLI, the report and the criterion benches (`benches/*.rs`) iterate.
//! * [`scenes`]: one set of scene definitions per implementation; the peers
//!   are compiled only with feature `peers`.
//! * [`row`]: what every case reports, one [`row::Row`] per (scenario,
//!   case, implementation), written and read back as JSON lines.
//! * [`measure`]: warm-up, batched samples, median in microseconds.
//! * [`report`]: `ecs-bench report`, the HTML page (the goals met and not
//!   met, then SVG charts).
//! * [`replication`]: the `replication` scenario's driver (ours only);
//!   `benches/replication_fuzz.rs` fuzzes the wire formats (100 000 cases).
//! * [`cli`], [`progress`]: the command line and its progress bar.
//!
//! Run `cargo run --release -p ecs-bench --features peers -- SCENARIO` (see
//! `ecs-bench --help` for the scenarios; add `--quick` for a short run,
//! `--json` for one JSON object per line, `--skip-1m` to leave out `game`'s
//! 1M-entity case), or `-- report` for the HTML page.

#![forbid(unsafe_code)]

pub mod cli;
pub mod measure;
pub mod progress;
pub mod replication;
pub mod report;
pub mod row;
pub mod scenarios;
pub mod scenes;
