//! The showcase. Until the transform, broad-phase and replication crates
//! land, it runs the store demo: a world of mostly static entities where a
//! chosen share moves each frame, and a system that rebuilds matrices only for
//! rows whose position changed, skipping every chunk that did not.
//!
//! `cargo run --release` runs it with defaults; `--help` lists the flags.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use ecs_core::{Changed, Entity, QueryState, World};
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

#[derive(Default)]
struct SystemStats {
    times: Vec<Duration>,
    chunks_total: u64,
    chunks_skipped: u64,
    rows: u64,
}

impl SystemStats {
    fn row(&self, name: &str, entities: usize) -> String {
        let mut sorted = self.times.clone();
        sorted.sort();
        let median = sorted[sorted.len() / 2];
        let worst = sorted[sorted.len() - 1];
        let frames = self.times.len() as u64;
        let skipped =
            if self.chunks_total == 0 { 100.0 } else { 100.0 * self.chunks_skipped as f64 / self.chunks_total as f64 };
        format!(
            "{name:<16} {entities:>9} {:>8} {skipped:>9.1}% {:>10} {:>11.1} {:>11.1}",
            self.chunks_total / frames,
            self.rows / frames,
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

    let mut movement: QueryState<(&mut Pos, &Vel)> = world.query();
    let mut matrices: QueryState<(&Pos, &mut Matrix), Changed<Pos>> = world.query_filtered();
    let mut count: QueryState<Entity> = world.query();
    // First run: everything is new.
    matrices.for_each_mut(&mut world, |(p, mut m)| m.0 = Mat4::from_translation(p.0));

    let dt = 1.0 / 60.0;
    let mut move_stats = SystemStats::default();
    let mut matrix_stats = SystemStats::default();
    for frame in 0..options.frames {
        world.increment_change_tick();
        let start = Instant::now();
        let mut moved = 0u64;
        movement.for_each_mut(&mut world, |(mut p, v)| {
            p.0 += v.0 * dt;
            moved += 1;
        });
        move_stats.times.push(start.elapsed());
        move_stats.rows += moved;
        let s = movement.stats();
        move_stats.chunks_total += s.chunks_total;
        move_stats.chunks_skipped += s.chunks_skipped;

        world.increment_change_tick();
        let start = Instant::now();
        let mut rebuilt = 0u64;
        matrices.for_each_mut(&mut world, |(p, mut m)| {
            m.0 = Mat4::from_translation(p.0);
            rebuilt += 1;
        });
        matrix_stats.times.push(start.elapsed());
        matrix_stats.rows += rebuilt;
        let s = matrices.stats();
        matrix_stats.chunks_total += s.chunks_total;
        matrix_stats.chunks_skipped += s.chunks_skipped;
        if frame % 30 == 0 || frame + 1 == options.frames {
            println!(
                "frame {frame:>4}: matrices rebuilt {rebuilt:>7}, chunks visited {:>5} of {:>5} ({:.1} % skipped)",
                s.chunks_visited(),
                s.chunks_total,
                100.0 * s.skip_ratio()
            );
        }
    }
    let total = count.iter(&world).count();
    println!();
    println!(
        "{:<16} {:>9} {:>8} {:>10} {:>10} {:>11} {:>11}",
        "system", "entities", "chunks", "skipped", "rows/frame", "median us", "worst us"
    );
    println!("{}", move_stats.row("movement", n_active));
    println!("{}", matrix_stats.row("matrix rebuild", total));
    println!();
    println!("The matrix system reads Changed<Pos>: chunks with no mover are skipped from one tick compare.");
    ExitCode::SUCCESS
}
