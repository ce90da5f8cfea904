//! The `replication` scenario: the cube scene's bandwidth per client at 0,
//! 5 and 20 % loss and at rest, the encode cost per client per tick of a
//! 100k-entity world at 0, 1 and 10 % changed, and the fan-out of one tick
//! to 64 clients of a 10k-entity world. Ours only (no peer).

use std::fmt::Write as _;

use crate::measure::{self, Config, Measurement};
use crate::runner::{Impl, Row, Scenario};

/// The scenes (the cube stream, the encode world).
#[path = "scenes/replication/mod.rs"]
pub mod scenes;

use scenes::{CubeStream, EncodeScene, median};

/// The cube cases: name, loss each way, player moving.
pub const CUBE_CASES: [(&str, f64, bool); 4] = [
    ("cubes_loss_0", 0.0, true),
    ("cubes_loss_5", 0.05, true),
    ("cubes_loss_20", 0.20, true),
    ("cubes_at_rest", 0.0, false),
];

/// The encode cases: name, entities, clients, share changed per tick.
pub const ENCODE_CASES: [(&str, usize, usize, f64); 4] = [
    ("encode_100k_0pct", 100_000, 1, 0.0),
    ("encode_100k_1pct", 100_000, 1, 0.01),
    ("encode_100k_10pct", 100_000, 1, 0.10),
    ("fanout_64x10k_1pct", 10_000, 64, 0.01),
];

fn measurement_of(per_tick_us: &[f64], iters: u64) -> Measurement {
    let min = per_tick_us.iter().copied().fold(f64::INFINITY, f64::min);
    let max = per_tick_us.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Measurement {
        median_us: median(per_tick_us),
        min_us: min,
        max_us: max,
        samples: per_tick_us.len(),
        iters_per_sample: iters,
    }
}

/// Runs the cube stream of one case: warm-up, then the measured ticks. At
/// rest, the player stops and the scene settles first. Checks after the
/// run, on a clean link, that the client converged.
pub fn cube_case(loss: f64, moving: bool, ticks: usize) -> Result<scenes::StreamFigures, String> {
    let mut stream = CubeStream::new(loss)?;
    for _ in 0..120 {
        stream.tick()?;
    }
    if !moving {
        stream.set_player_moving(false);
        let mut settle = 0;
        while stream.moving_cubes() > 0 {
            stream.tick()?;
            settle += 1;
            if settle > 10_000 {
                return Err("the cubes never settled".into());
            }
        }
        // Let the last changes be acknowledged.
        for _ in 0..60 {
            stream.tick()?;
        }
    }
    let figures = stream.measure(ticks)?;
    stream.clean_link();
    stream.set_player_moving(false);
    let mut settle = 0;
    while stream.moving_cubes() > 0 && settle < 10_000 {
        stream.tick()?;
        settle += 1;
    }
    for _ in 0..2 * scenes::LINK_DELAY as usize + 2 {
        stream.tick()?;
    }
    if !stream.converged() {
        return Err(format!(
            "cube stream at {} % loss: the client did not converge after the link cleared",
            loss * 100.0
        ));
    }
    Ok(figures)
}

/// Runs the scenario, calling `on_row` as each row is ready.
pub fn run_replication(cfg: &Config, mut on_row: impl FnMut(&Row)) -> Result<Vec<Row>, String> {
    let quick = cfg.samples < Config::full().samples;
    let ticks = if quick { 300 } else { 1800 };
    let mut rows = Vec::new();
    for (name, loss, moving) in CUBE_CASES {
        let figures = cube_case(loss, moving, ticks).map_err(|e| format!("replication/{name}: {e}"))?;
        let row = Row {
            scenario: Scenario::Replication,
            case: name,
            imp: Impl::Ours,
            measurement: measurement_of(&figures.update_us, 1),
            chunks: None,
            rows: Some(figures.moving_cubes.round() as usize),
            systems: Vec::new(),
            count: Some(figures.ticks),
            kbps: Some(figures.kbps),
        };
        on_row(&row);
        rows.push(row);
    }
    for (name, entities, clients, changed) in ENCODE_CASES {
        let mut scene = EncodeScene::new(entities, clients, changed).map_err(|e| format!("replication/{name}: {e}"))?;
        let mut bytes = 0usize;
        let mut ticks = 0usize;
        let m = measure::measure_with_setup(
            cfg,
            &mut scene,
            |s| s.mutate(),
            |s| {
                bytes += s.tick();
                ticks += 1;
            },
        );
        let kbps = bytes as f64 * 8.0 * scenes::TICK_RATE / ticks.max(1) as f64 / 1000.0;
        let row = Row {
            scenario: Scenario::Replication,
            case: name,
            imp: Impl::Ours,
            measurement: m,
            chunks: None,
            rows: Some(scene.movers()),
            systems: Vec::new(),
            count: Some(scene.clients()),
            kbps: Some(kbps),
        };
        on_row(&row);
        rows.push(row);
    }
    Ok(rows)
}

/// The scenario's table: per case the median server time per tick, the
/// time per client, entities changed per tick (cubes: sliding on average),
/// and kbps per client.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "scenario replication: median us of one server tick (cubes: 60 Hz, 1 client, link delay {} ticks each way)",
        scenes::LINK_DELAY
    );
    let _ = writeln!(
        out,
        "{:<22} {:>12} {:>14} {:>8} {:>8} {:>12}",
        "case", "us/tick", "us/client/tick", "clients", "changed", "kbps/client"
    );
    for r in rows.iter().filter(|r| r.scenario == Scenario::Replication) {
        let clients = if r.case.starts_with("cubes") { 1 } else { r.count.unwrap_or(1).max(1) };
        let _ = writeln!(
            out,
            "{:<22} {:>12.2} {:>14.2} {:>8} {:>8} {:>12.1}",
            r.case,
            r.measurement.median_us,
            r.measurement.median_us / clients as f64,
            clients,
            r.rows.map_or("-".to_owned(), |n| n.to_string()),
            r.kbps.unwrap_or(f64::NAN)
        );
    }
    out
}
