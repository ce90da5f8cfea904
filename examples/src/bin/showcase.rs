//! The showcase: the scene of [`ecs_examples::showcase`] (static scenery,
//! transform hierarchies, boids, melee units in one `App`) with replication
//! to clients over loopback UDP, run for a number of frames (the `Running`
//! state), then the `Summary` state and a table per system of entities,
//! chunks, chunks skipped, median and worst time per frame, and bytes per
//! tick per client.
//!
//! `cargo run --release` runs it with defaults; `--help` lists the flags.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use ecs_core::ChunkStats;
use ecs_examples::cli;
use ecs_examples::showcase::{Showcase, ShowcaseConfig, ShowcaseState};

/// showcase: static scenery, transform hierarchies, a flock of boids and melee units in one app
/// (1/60 s of game time and one fixed step per frame), replicated to clients over loopback UDP in
/// this process
#[derive(Parser, Debug, PartialEq)]
#[command(name = "showcase")]
struct Options {
    /// Entities in the scene, 100..=10000000
    #[arg(long, value_name = "N", default_value_t = 100_000, value_parser = cli::count(100..=10_000_000))]
    entities: usize,
    /// Share of rigs and boids that move, 0.0..=1.0
    #[arg(long, value_name = "SHARE", default_value_t = 0.05, value_parser = cli::within(0.0..=1.0))]
    active: f64,
    /// Frames to run after the first, 1..=100000
    #[arg(long, value_name = "N", default_value_t = 300, value_parser = cli::count(1..=100_000))]
    frames: usize,
    /// Replication clients over loopback UDP, 0..=64 (0: no replication)
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = cli::count(0..=64))]
    clients: usize,
    /// Seed of the scene layout
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
}

impl Options {
    fn config(&self) -> ShowcaseConfig {
        ShowcaseConfig { entities: self.entities, active: self.active, seed: self.seed, clients: self.clients }
    }
}

/// Per-system figures over the whole run.
#[derive(Default)]
struct Totals {
    name: String,
    times: Vec<Duration>,
    chunks: ChunkStats,
    entities: u64,
    frames: u64,
    /// Bytes per tick per client, for the replication row.
    bytes: Option<Vec<f64>>,
}

impl Totals {
    fn row(&self) -> String {
        let mut sorted = self.times.clone();
        sorted.sort();
        let median = sorted.get(sorted.len() / 2).copied().unwrap_or_default();
        let worst = sorted.last().copied().unwrap_or_default();
        let frames = self.frames.max(1);
        let bytes = match &self.bytes {
            Some(b) if !b.is_empty() => {
                let mut b = b.clone();
                b.sort_by(f64::total_cmp);
                format!("{:>8.0} / {:.0}", b[b.len() / 2], b[b.len() - 1])
            }
            _ => "-".to_owned(),
        };
        // A row that reads no chunks (the in-process clients) has no skip
        // ratio to show.
        let (entities, chunks, skipped) = if self.chunks.chunks_total == 0 && self.entities == 0 {
            ("-".to_owned(), "-".to_owned(), "-".to_owned())
        } else {
            (
                (self.entities / frames).to_string(),
                (self.chunks.chunks_total / frames).to_string(),
                format!("{:.1}%", 100.0 * self.chunks.skip_ratio()),
            )
        };
        format!(
            "{:<34} {:>9} {:>8} {:>10} {:>10.1} {:>10.1} {:>17}",
            self.name,
            entities,
            chunks,
            skipped,
            median.as_secs_f64() * 1e6,
            worst.as_secs_f64() * 1e6,
            bytes,
        )
    }
}

fn main() -> ExitCode {
    cli::main_with("showcase", run)
}

fn run(options: &Options) -> Result<(), Box<dyn std::error::Error>> {
    let config = options.config();
    let built = Instant::now();
    let mut show = Showcase::new(&config)?;
    let (rigs, spinning) = show.rigs;
    let (boids, flying) = show.boids;
    println!(
        "scene: {} entities ({} scenery, {} rigs of which {} move, {} boids of which {} fly, {} melee units), active share {:.1} %, built in {:.0} ms",
        show.world().len(),
        show.scenery,
        rigs,
        spinning,
        boids,
        flying,
        show.units,
        100.0 * config.active,
        built.elapsed().as_secs_f64() * 1e3
    );
    // The first frame sees every spawn as a change; keep it out of the figures.
    show.step()?;
    let mut totals: Vec<Totals> = Vec::new();
    let mut net = Totals {
        name: format!("replication server ({} clients)", config.clients),
        bytes: Some(Vec::new()),
        ..Totals::default()
    };
    let mut receive =
        Totals { name: format!("replication clients ({}, in-process)", config.clients), ..Totals::default() };
    let mut changed = Vec::with_capacity(options.frames);
    let mut frame_times = Vec::with_capacity(options.frames);
    for frame in 1..=options.frames {
        let start = Instant::now();
        show.step()?;
        frame_times.push(start.elapsed());
        let rows = show.system_rows();
        totals.resize_with(rows.len(), Totals::default);
        for (total, row) in totals.iter_mut().zip(&rows) {
            total.name.clone_from(&row.name);
            total.times.push(row.time);
            total.frames += 1;
            total.chunks.add(row.chunks);
            total.entities += row.entities;
        }
        let mut connected = String::new();
        if let Some(n) = show.net_frame {
            net.times.push(n.server_time);
            receive.times.push(n.time.saturating_sub(n.server_time));
            receive.frames += 1;
            net.chunks.add(n.chunks);
            net.entities += n.chunks.entities;
            net.frames += 1;
            changed.push(n.changed);
            if let Some(b) = &mut net.bytes {
                b.push(n.bytes_per_client);
            }
            connected = format!(
                ", {} of {} clients connected, {:.0} bytes per client",
                n.connected, config.clients, n.bytes_per_client
            );
        }
        if frame % 60 == 0 || frame == options.frames {
            let last = frame_times.last().copied().unwrap_or_default();
            println!("frame {frame:>5}/{}: {:>8.1} us{connected}", options.frames, last.as_secs_f64() * 1e6);
        }
    }
    let summary = show.finish()?;
    if show.state() != ShowcaseState::Summary {
        return Err("the run did not reach its summary".into());
    }
    let b = summary.battle;
    println!(
        "summary: {} fixed steps, {:.2} s of game time, {} entities; battle: {} vs {} units alive, {} vs {} kills",
        summary.fixed_steps, summary.game_seconds, summary.entities, b.alive[0], b.alive[1], b.kills[0], b.kills[1]
    );
    println!();
    println!(
        "{:<34} {:>9} {:>8} {:>10} {:>10} {:>10} {:>17}",
        "system", "entities", "chunks", "skipped", "median us", "worst us", "bytes/tick/client"
    );
    for total in &totals {
        println!("{}", total.row());
    }
    if net.frames > 0 {
        println!("{}", net.row());
        println!("{}", receive.row());
    }
    frame_times.sort();
    println!(
        "\nwhole frame: median {:.1} us, worst {:.1} us over {} frames",
        frame_times[frame_times.len() / 2].as_secs_f64() * 1e6,
        frame_times[frame_times.len() - 1].as_secs_f64() * 1e6,
        frame_times.len()
    );
    println!("Chunks whose ticks are older than a system's last run are skipped without reading their rows.");
    if let Some(network) = &show.network {
        changed.sort_unstable();
        println!(
            "Replication work: a median of {} replicated entities changed a tick; the server's books, send queue and packet for each client scale with them.",
            changed.get(changed.len() / 2).copied().unwrap_or(0)
        );
        let held: Vec<String> = network.clients().map(|(world, _)| world.len().to_string()).collect();
        println!(
            "Replication: {} replicated entities; each client sees those within {} units of the flock's centre and holds [{}] of them; bytes/tick/client is median / worst snapshot payload (UDP and netcode headers not counted); the server row is its acknowledgement receive, change scan, encode and UDP sends, the clients row their receive, apply and acknowledgement.",
            network.server().entities().count(),
            ecs_examples::showcase::VIEW_RADIUS,
            held.join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, clap::Error> {
        cli::parse_from(args)
    }

    #[test]
    fn flags_parse_and_bad_ones_are_refused() {
        use clap::CommandFactory as _;
        Options::command().debug_assert();
        let o = parse(&["--entities", "5000", "--active", "0.5", "--frames", "3", "--seed", "9", "--clients", "2"])
            .unwrap();
        assert_eq!((o.config(), o.frames), (ShowcaseConfig { entities: 5000, active: 0.5, seed: 9, clients: 2 }, 3));
        // `cargo run --release` runs with these.
        let o = parse(&[]).unwrap();
        assert_eq!(
            (o.config(), o.frames),
            (ShowcaseConfig { entities: 100_000, active: 0.05, seed: 1, clients: 4 }, 300)
        );
        assert_eq!(parse(&["--help"]).unwrap_err().kind(), clap::error::ErrorKind::DisplayHelp);
        for bad in [
            &["--entities"][..],
            &["--entities", "x"],
            &["--entities", "10"],
            &["--entities", "10000001"],
            &["--active", "2"],
            &["--active", "NaN"],
            &["--frames", "0"],
            &["--seed", "-1"],
            &["--clients", "65"],
            &["--clients", "x"],
            &["--nope"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
