//! The `replication` scenario: the cube scene's bandwidth per client at 0,
//! 5 and 20 % loss and at rest, the encode cost per client per tick of a
//! 100k-entity world at 0, 1 and 10 % changed, the fan-out of one tick to
//! 64 and 256 clients of a 10k-entity world (256: on one and on two
//! threads), the backlog case (128 clients x 10k entities, 1 % moving,
//! steady, through 50 % loss both ways and after: cost per client per tick
//! and ticks to converge), and the multiplayer figures of the arena game (input upstream
//! bytes, prediction matched under 100 ms RTT with jitter and 5 % loss,
//! corrections, late inputs, and a client tick's cost with and without
//! prediction). Ours only (no peer).

use std::fmt::Write as _;

use crate::measure::{self, Config, Measurement};
use crate::row::{Impl, Row, ScenarioId};

/// The scenes (the cube stream, the encode world): [`crate::scenes::replication`].
pub use crate::scenes::replication as scenes;

use scenes::backlog::{BACKLOG_LINK_DELAY, BacklogFigures, BacklogRun, backlog_case};
use scenes::game::{ArenaFigures, ArenaRun};
use scenes::{CubeStream, EncodeScene, median};
use std::sync::Mutex;

use ecs_replication::prelude::LinkConfig;

/// The fan-out of one tick to 256 clients of a 10k-entity world, 1 %
/// changed, packets built on this many threads.
pub const FANOUT_THREAD_CASES: [(&str, usize); 2] =
    [("fanout_256x10k_1pct_1thread", 1), ("fanout_256x10k_1pct_2threads", 2)];

/// The arena cases: name, link each way (ticks of 16.7 ms).
pub const ARENA_CASES: [(&str, LinkConfig); 2] = [
    // 100 ms round trip, 17 ms of jitter, 5 % loss each way.
    ("arena_rtt100_jitter17_loss5", LinkConfig { loss: 0.05, delay: 3, jitter: 1, duplicate: 0.0, corrupt: 0.0 }),
    // The same with 33 ms of jitter.
    ("arena_rtt100_jitter33_loss5", LinkConfig { loss: 0.05, delay: 3, jitter: 2, duplicate: 0.0, corrupt: 0.0 }),
];

/// The text of the multiplayer figures, appended to the table.
static MULTIPLAYER: Mutex<String> = Mutex::new(String::new());

/// The text of the backlog case, appended to the table.
static BACKLOG: Mutex<String> = Mutex::new(String::new());

/// The backlog case: clients, entities, share moving per tick, loss both
/// ways, lossy ticks.
pub const BACKLOG_CASE: (usize, usize, f64, f64, usize) = (128, 10_000, 0.01, 0.5, 300);

/// The backlog case's rows: steady (clean link), during the loss, after
/// the link cleared.
pub const BACKLOG_ROWS: [&str; 3] = ["backlog_128x10k_steady", "backlog_128x10k_loss50", "backlog_128x10k_after"];

fn note(line: String) {
    let mut m = MULTIPLAYER.lock().unwrap_or_else(|e| e.into_inner());
    m.push_str(&line);
    m.push('\n');
}

/// The client-tick cases of the arena: with and without prediction.
pub const CLIENT_TICK_CASES: [&str; 2] = ["client_tick_predicted", "client_tick_unpredicted"];

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
            scenario: ScenarioId::Replication,
            case: name.into(),
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
            scenario: ScenarioId::Replication,
            case: name.into(),
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
    for (name, threads) in FANOUT_THREAD_CASES {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| format!("replication/{name}: {e}"))?;
        let mut scene = EncodeScene::new(10_000, 256, 0.01).map_err(|e| format!("replication/{name}: {e}"))?;
        let m = pool.install(|| {
            measure::measure_with_setup(
                cfg,
                &mut scene,
                |s| s.mutate(),
                |s| {
                    s.tick();
                },
            )
        });
        let row = Row {
            scenario: ScenarioId::Replication,
            case: name.into(),
            imp: Impl::Ours,
            measurement: m,
            chunks: None,
            rows: Some(scene.movers()),
            systems: Vec::new(),
            count: Some(scene.clients()),
            kbps: None,
        };
        on_row(&row);
        rows.push(row);
    }
    rows.extend(backlog(quick, &mut on_row)?);
    rows.extend(multiplayer(quick, &mut on_row)?);
    Ok(rows)
}

/// The backlog case (see [`scenes::backlog`]): rows of the server's median
/// time per tick in each phase (the table divides by the clients), and the
/// backlog and convergence as text.
fn backlog(quick: bool, on_row: &mut impl FnMut(&Row)) -> Result<Vec<Row>, String> {
    let (clients, entities, share, loss, lossy) = BACKLOG_CASE;
    let mut run = BacklogRun::new(entities, clients, share).map_err(|e| format!("replication/backlog: {e}"))?;
    let steady = if quick { 60 } else { 300 };
    let f = backlog_case(&mut run, steady, lossy, loss, if quick { 30 } else { 120 })
        .map_err(|e| format!("replication/backlog: {e}"))?;
    let text = backlog_text(&f, &run);
    BACKLOG.lock().unwrap_or_else(|e| e.into_inner()).clone_from(&text);
    let mut rows = Vec::new();
    for (name, phase) in BACKLOG_ROWS.into_iter().zip([&f.steady, &f.loss, &f.after]) {
        let row = Row {
            scenario: ScenarioId::Replication,
            case: name.into(),
            imp: Impl::Ours,
            measurement: measurement_of(&phase.tick_us, 1),
            chunks: None,
            rows: Some((entities as f64 * share).round() as usize),
            systems: Vec::new(),
            count: Some(clients),
            kbps: Some(phase.bytes_per_client_tick * 8.0 * scenes::TICK_RATE / 1000.0),
        };
        on_row(&row);
        rows.push(row);
    }
    Ok(rows)
}

fn backlog_text(f: &BacklogFigures, run: &BacklogRun) -> String {
    let n = run.clients() as f64;
    let per = |p: &scenes::backlog::PhaseFigures| median(&p.tick_us) / n;
    let (steady, lossy, after) = (per(&f.steady), per(&f.loss), per(&f.after));
    let config = run.config();
    let ceiling = config.catch_up_budget_bytes.max(config.budget_bytes) as f64;
    let drain = (f.backlog.max_bytes() / ceiling).ceil();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} clients x {} entities, {} % moving per tick, {} tick(s) each way; budget {} bytes, catch-up ceiling {} bytes",
        BACKLOG_CASE.0,
        BACKLOG_CASE.1,
        BACKLOG_CASE.2 * 100.0,
        BACKLOG_LINK_DELAY,
        config.budget_bytes,
        ceiling
    );
    for (name, p, us) in [("steady", &f.steady, steady), ("50 % loss", &f.loss, lossy), ("after", &f.after, after)] {
        let _ = writeln!(
            out,
            "  {name:<10} {us:>8.2} us per client per tick ({:.2} x steady), {:.1} entries and {:.0} bytes per client per tick",
            us / steady,
            p.entries_per_client_tick,
            p.bytes_per_client_tick
        );
    }
    let _ = writeln!(
        out,
        "  when the link cleared: {:.0} entities pending per client ({:.0} queued), at most {} on one client x {:.1} bytes = {:.0} bytes = {} tick(s) at the ceiling; every client converged in {} ticks (goal <= {})",
        f.backlog.pending,
        f.backlog.queued,
        f.backlog.max_pending,
        f.backlog.entry_bytes,
        f.backlog.max_bytes(),
        drain,
        f.ticks_to_converge,
        drain + 2.0
    );
    out
}

fn arena_line(name: &str, f: &ArenaFigures) -> String {
    format!(
        "{name}: upstream {:.1} bytes/datagram (largest {}), {:.1} kbps up, {:.1} kbps down per client; prediction matched {:.2} % of {} compared ticks, corrections {:.2}/s per client; inputs late {} of {} ({:.2} %)",
        f.upstream_bytes,
        f.upstream_max,
        f.kbps_up,
        f.kbps_down,
        100.0 * (1.0 - f.mispredictions as f64 / f.comparisons.max(1) as f64),
        f.comparisons,
        f.corrections_per_s,
        f.late_inputs,
        f.inputs,
        100.0 * f.late_inputs as f64 / f.inputs.max(1) as f64,
    )
}

/// The arena's figures: the lossy cases (two clients, 200 props), and a
/// client tick with and without prediction (one client, 1000 props, clean
/// link, the two runs stepped in turn so the machine's noise hits both).
fn multiplayer(quick: bool, on_row: &mut impl FnMut(&Row)) -> Result<Vec<Row>, String> {
    MULTIPLAYER.lock().unwrap_or_else(|e| e.into_inner()).clear();
    let frames = if quick { 900 } else { 3600 };
    let mut rows = Vec::new();
    for (name, link) in ARENA_CASES {
        let mut run = ArenaRun::new(2, 200, link, true).map_err(|e| format!("replication/{name}: {e}"))?;
        for _ in 0..300 {
            run.frame()?;
        }
        let f = run.measure(frames)?;
        note(arena_line(name, &f));
        let row = Row {
            scenario: ScenarioId::Replication,
            case: name.into(),
            imp: Impl::Ours,
            measurement: measurement_of(&run.client_us, 1),
            chunks: None,
            rows: None,
            systems: Vec::new(),
            count: Some(2),
            kbps: Some(f.kbps_down),
        };
        on_row(&row);
        rows.push(row);
    }
    let clean = LinkConfig::clean(3);
    let mut predicted = ArenaRun::new(1, 1000, clean, true)?;
    let mut plain = ArenaRun::new(1, 1000, clean, false)?;
    for _ in 0..300 {
        predicted.frame()?;
        plain.frame()?;
    }
    predicted.reset_counters();
    plain.reset_counters();
    let before = predicted.prediction_stats();
    for _ in 0..frames {
        predicted.frame()?;
        plain.frame()?;
    }
    let (predicted_us, plain_us) = (predicted.client_us.clone(), plain.client_us.clone());
    let (with, without) = (median(&predicted_us), median(&plain_us));
    let after = predicted.prediction_stats();
    note(format!(
        "client tick, 1000 interpolated props + the predicted player, clean link: {with:.2} us predicted, {without:.2} us without prediction ({:+.1} %), mispredictions {} in {} compared",
        (with / without - 1.0) * 100.0,
        after.mispredictions - before.mispredictions,
        after.comparisons - before.comparisons
    ));
    for (name, us) in CLIENT_TICK_CASES.into_iter().zip([&predicted_us, &plain_us]) {
        let row = Row {
            scenario: ScenarioId::Replication,
            case: name.into(),
            imp: Impl::Ours,
            measurement: measurement_of(us, 1),
            chunks: None,
            rows: None,
            systems: Vec::new(),
            count: Some(1),
            kbps: None,
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
    for r in rows.iter().filter(|r| r.scenario == ScenarioId::Replication) {
        let clients = if r.case.starts_with("cubes") || r.case.starts_with("client_tick") || r.case.starts_with("arena")
        {
            1
        } else {
            r.count.unwrap_or(1).max(1)
        };
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
    let backlog = BACKLOG.lock().unwrap_or_else(|e| e.into_inner());
    if !backlog.is_empty() {
        let _ = writeln!(out, "backlog (backlog_ rows: median us of one server tick, all clients):");
        out.push_str(&backlog);
    }
    let multiplayer = MULTIPLAYER.lock().unwrap_or_else(|e| e.into_inner());
    if !multiplayer.is_empty() {
        let _ = writeln!(out, "multiplayer (arena, 60 Hz; arena and client_tick rows: median us of one client frame):");
        out.push_str(&multiplayer);
    }
    out
}
