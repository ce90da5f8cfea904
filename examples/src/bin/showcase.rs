//! The showcase. Until the transform, broad-phase and replication crates
//! land, it runs the store demo: a world of mostly static entities where a
//! chosen share moves each frame, and a system that rebuilds matrices only for
//! rows whose position changed, skipping every chunk that did not.
//!
//! `cargo run --release` runs it with defaults; `--help` lists the flags.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use ecs_core::prelude::*;
use glam::{Mat4, Vec3};

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(Vec3);
#[derive(Clone, Copy, Debug, PartialEq)]
struct Vel(Vec3);
#[derive(Clone, Copy, Debug, PartialEq)]
struct Matrix(Mat4);
/// Marks the entities that move.
struct Active;

const HELP: &str = "showcase: chunk-skipping store demo

USAGE: cargo run --release -- [--entities N] [--active SHARE] [--frames N]

  --entities N    entities in the scene (default 100000)
  --active SHARE  share of entities that move each frame, 0.0..=1.0 (default 0.05)
  --frames N      frames to run (default 120)
  -h, --help      this text";

struct Options {
    entities: usize,
    active: f64,
    frames: usize,
}

fn parse(args: impl Iterator<Item = String>) -> Result<Option<Options>, String> {
    let mut o = Options { entities: 100_000, active: 0.05, frames: 120 };
    let mut args = args.peekable();
    while let Some(flag) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--entities" => {
                let v = value("--entities")?;
                o.entities = v.parse().map_err(|_| format!("--entities: not a count: {v}"))?;
                if o.entities == 0 || o.entities > 50_000_000 {
                    return Err("--entities must be between 1 and 50000000".into());
                }
            }
            "--active" => {
                let v = value("--active")?;
                o.active = v.parse().map_err(|_| format!("--active: not a number: {v}"))?;
                if !(0.0..=1.0).contains(&o.active) {
                    return Err("--active must be within 0.0..=1.0".into());
                }
            }
            "--frames" => {
                let v = value("--frames")?;
                o.frames = v.parse().map_err(|_| format!("--frames: not a count: {v}"))?;
                if o.frames == 0 {
                    return Err("--frames must be at least 1".into());
                }
            }
            other => return Err(format!("unknown argument {other:?} (see --help)")),
        }
    }
    Ok(Some(o))
}

/// Frame time step, a resource.
struct DeltaTime(f32);

/// Moves the active entities.
fn movement(mut q: Query<(&mut Pos, &Vel)>, dt: Res<DeltaTime>) {
    q.for_each_mut(|(mut p, v)| p.0 += v.0 * dt.0);
}

/// Rebuilds matrices of the rows whose position changed since this system's
/// last run; every other chunk is skipped from one tick compare.
fn matrix_rebuild(mut q: Query<(&Pos, &mut Matrix), Changed<Pos>>) {
    q.for_each_mut(|(p, mut m)| m.0 = Mat4::from_translation(p.0));
}

/// Per-system figures over the whole run.
#[derive(Default)]
struct Totals {
    times: Vec<Duration>,
    chunks: ChunkStats,
}

impl Totals {
    fn row(&self, name: &str) -> String {
        let mut sorted = self.times.clone();
        sorted.sort();
        let median = sorted[sorted.len() / 2];
        let worst = sorted[sorted.len() - 1];
        let frames = self.times.len() as u64;
        format!(
            "{name:<16} {:>10} {:>10} {:>9.1}% {:>11.1} {:>11.1}",
            self.chunks.chunks_total / frames,
            self.chunks.chunks_visited() / frames,
            100.0 * self.chunks.skip_ratio(),
            median.as_secs_f64() * 1e6,
            worst.as_secs_f64() * 1e6,
        )
    }
}

fn main() -> ExitCode {
    let options = match parse(std::env::args().skip(1)) {
        Ok(Some(o)) => o,
        Ok(None) => {
            println!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut world = World::new();
    let active_every = if options.active > 0.0 { (1.0 / options.active).round().max(1.0) as usize } else { usize::MAX };
    // Movers carry the `Active` tag, so they live in their own archetype's
    // chunks; the static scenery's chunks are never written after spawn.
    let mut n_active = 0;
    for i in 0..options.entities {
        let pos = Pos(Vec3::new((i % 1000) as f32, 0.0, (i / 1000) as f32));
        let matrix = Matrix(Mat4::from_translation(pos.0));
        let spawned = if i % active_every == 0 {
            n_active += 1;
            world.spawn((pos, Vel(Vec3::new(1.0, 0.0, 0.5)), matrix, Active))
        } else {
            world.spawn((pos, matrix))
        };
        if let Err(e) = spawned {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    }
    println!(
        "scene: {} entities, {} moving ({:.1} %), {} frames",
        options.entities,
        n_active,
        100.0 * n_active as f64 / options.entities as f64,
        options.frames
    );

    world.insert_resource(DeltaTime(1.0 / 60.0));
    let mut schedule = Schedule::new();
    schedule.add_systems((movement, matrix_rebuild).chain());
    let mut totals: Vec<Totals> = Vec::new();
    for frame in 0..=options.frames {
        let start = Instant::now();
        if let Err(e) = schedule.run(&mut world) {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
        let frame_time = start.elapsed();
        if frame == 0 {
            // The first run sees every spawn as a change; keep it out of the
            // steady-state figures.
            continue;
        }
        let stats: Vec<_> = schedule.system_stats().cloned().collect();
        totals.resize_with(stats.len(), Totals::default);
        for (total, s) in totals.iter_mut().zip(&stats) {
            total.times.push(s.time);
            total.chunks.add(s.chunks());
        }
        if frame % 30 == 1 || frame == options.frames {
            let m = stats[1].chunks();
            println!(
                "frame {frame:>4}: {:>7.1} us, matrix rebuild visited {:>5} of {:>5} chunks ({:.1} % skipped)",
                frame_time.as_secs_f64() * 1e6,
                m.chunks_visited(),
                m.chunks_total,
                100.0 * m.skip_ratio()
            );
        }
    }
    println!();
    println!(
        "{:<16} {:>10} {:>10} {:>10} {:>11} {:>11}",
        "system", "chunks", "visited", "skipped", "median us", "worst us"
    );
    for (total, name) in totals.iter().zip(["movement", "matrix rebuild"]) {
        println!("{}", total.row(name));
    }
    println!();
    println!("matrix rebuild reads Changed<Pos>: chunks with no mover are skipped from one tick compare.");
    ExitCode::SUCCESS
}
