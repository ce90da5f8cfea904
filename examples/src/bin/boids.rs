//! `boids`: a flock on the broad-phase grid (see `ecs_examples::boids`),
//! printing per-frame timings and the broad phase's skip ratio, or with
//! `--gif PATH` writing a top-down animation of the flock.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use ecs_core::app::Schedules;
use ecs_core::prelude::*;
use ecs_examples::boids::{BoidsConfig, PALETTE, add_boids, render_top_down};
use ecs_examples::cli;
use ecs_spatial::broad_phase::{BroadPhase, Position};

/// boids: a flock that separates, aligns, seeks a moving target and flees a predator,
/// neighbours found on the broad-phase grid (cell radius 8)
///
/// The flock moves in fixed steps of 1/60 s. Without --gif the game clock follows the real clock,
/// each frame counting at most 0.05 s, so a frame runs as many steps as its time holds; frames
/// are paced at 60 per second, as a display would (a frame that takes longer is not waited
/// for); every frame prints its time, its steps, the latest step's time per system and the
/// broad phase's chunk skip ratio.
#[derive(Parser, Debug)]
#[command(name = "boids")]
struct Options {
    /// Boids in the flock, at least 1
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = cli::count(1..))]
    boids: usize,
    /// Share of the boids that move, 0.0..=1.0
    #[arg(long, value_name = "SHARE", default_value_t = 0.25, value_parser = cli::within(0.0_f32..=1.0))]
    active: f32,
    /// Frames to run, at least 1 [default: 200; with --gif, frames of the animation, 125]
    #[arg(long, value_name = "N", value_parser = cli::count(1..))]
    frames: Option<usize>,
    /// Write a top-down animation (480x480, 25 frames per second) to PATH instead of printing
    /// timings; each frame is then 1/25 s of game time
    #[arg(long, value_name = "PATH")]
    gif: Option<String>,
}

fn main() -> ExitCode {
    cli::main_with("boids", run)
}

fn run(options: &Options) -> Result<(), String> {
    let config = BoidsConfig { boids: options.boids, active_share: options.active, ..BoidsConfig::default() };
    let mut app = App::new();
    let scene = add_boids(&mut app, &config).map_err(|e| e.to_string())?;
    println!(
        "boids: {} boids ({} active), cell radius {}, spawn radius {:.0}",
        scene.boids.len(),
        scene.active,
        config.cell_radius,
        config.spawn_radius()
    );
    match &options.gif {
        Some(path) => write_gif(&mut app, &config, options.frames.unwrap_or(125), path),
        None => print_frames(&mut app, options.frames.unwrap_or(200)),
    }
}

/// The last `::`-separated part of a system's path, without generics.
fn short_name(path: &str) -> &str {
    let base = path.split('<').next().unwrap_or(path);
    base.rsplit("::").next().unwrap_or(base)
}

/// The frame pace of the printing mode: 60 frames per second.
const FRAME_PACE: Duration = Duration::from_nanos(16_666_667);

fn print_frames(app: &mut App, frames: usize) -> Result<(), String> {
    app.build_schedules().map_err(|e| e.to_string())?;
    let mut totals: Vec<Duration> = Vec::with_capacity(frames);
    let (mut skip_sum, mut stepped) = (0.0, 0usize);
    for frame in 0..frames {
        let start = Instant::now();
        app.update();
        let took = start.elapsed();
        totals.push(took);
        if let Some(rest) = FRAME_PACE.checked_sub(took) {
            std::thread::sleep(rest);
        }
        let world = app.world();
        let steps = world.resource::<Time<Fixed>>().map_or(0, Time::steps_this_frame);
        let mut line = format!("frame {frame:4}  {:8.3} ms, {steps} step{} |", took.as_secs_f64() * 1e3, plural(steps));
        let schedules = world.resource::<Schedules>().ok_or("the app has no schedules")?;
        for label in [FixedPreUpdate.intern(), FixedUpdate.intern()] {
            for system in schedules.get(label).into_iter().flat_map(Schedule::system_stats) {
                line.push_str(&format!(" {} {:.3} ms", short_name(&system.name), system.time.as_secs_f64() * 1e3));
            }
        }
        let stats = world.resource::<BroadPhase<Position>>().map(BroadPhase::stats).unwrap_or_default();
        if steps > 0 {
            skip_sum += stats.skip_ratio();
            stepped += 1;
        }
        line.push_str(&format!(
            " | grid: {} chunks, {:.1} % skipped, {} re-keyed, {} changed cell{}",
            stats.chunks_total,
            stats.skip_ratio() * 100.0,
            stats.rows_rekeyed,
            stats.points_inserted,
            if stats.full_rebuild { ", full rebuild" } else { "" }
        ));
        println!("{line}");
    }
    totals.sort();
    let median = totals[totals.len() / 2];
    let worst = totals[totals.len() - 1];
    let steps = app.world().resource::<Time<Fixed>>().map_or(0, Time::frame_count);
    println!(
        "{frames} frames, {steps} fixed steps: median {:.3} ms, worst {:.3} ms, mean grid skip ratio {:.1} %",
        median.as_secs_f64() * 1e3,
        worst.as_secs_f64() * 1e3,
        if stepped == 0 { 0.0 } else { skip_sum / stepped as f64 * 100.0 }
    );
    Ok(())
}

fn plural(n: u32) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn write_gif(app: &mut App, config: &BoidsConfig, frames: usize, path: &str) -> Result<(), String> {
    const SIZE: u16 = 480;
    // Each animation frame is 1/25 s of game time: two fixed steps of 1/50 s.
    app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(40)))
        .insert_resource(Time::<Fixed>::from_hz(50.0));
    app.build_schedules().map_err(|e| e.to_string())?;
    let file = std::fs::File::create(path).map_err(|e| format!("{path}: {e}"))?;
    let mut encoder =
        gif::Encoder::new(std::io::BufWriter::new(file), SIZE, SIZE, &PALETTE).map_err(|e| format!("{path}: {e}"))?;
    encoder.set_repeat(gif::Repeat::Infinite).map_err(|e| format!("{path}: {e}"))?;
    let extent = config.spawn_radius() * 1.15;
    let mut pixels = Vec::new();
    for frame in 0..frames {
        app.update();
        render_top_down(app.world_mut(), usize::from(SIZE), extent, &mut pixels);
        let mut image = gif::Frame::from_indexed_pixels(SIZE, SIZE, pixels.as_slice(), None);
        image.delay = 4; // hundredths of a second: 25 frames per second
        encoder.write_frame(&image).map_err(|e| format!("{path}: frame {frame}: {e}"))?;
    }
    println!("wrote {frames} frames to {path}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, String> {
        cli::parse_from(args).map_err(|e| e.to_string())
    }

    #[test]
    fn flags() {
        use clap::CommandFactory as _;
        Options::command().debug_assert();
        let o = parse(&["--boids", "50", "--frames", "3", "--active", "0.5", "--gif", "x.gif"]).unwrap();
        assert_eq!((o.boids, o.frames, o.active, o.gif.as_deref()), (50, Some(3), 0.5, Some("x.gif")));
        let o = parse(&[]).unwrap();
        assert_eq!((o.boids, o.frames, o.active, o.gif), (10_000, None, 0.25, None));
        assert!(parse(&["--help"]).unwrap_err().contains("--gif <PATH>"));
        assert!(parse(&["--boids", "0"]).unwrap_err().contains("--boids"));
        assert!(parse(&["--boids"]).unwrap_err().contains("a value is required for '--boids <N>'"));
        assert!(parse(&["--frames", "0"]).unwrap_err().contains("0 is not in 1.."));
        assert!(parse(&["--active", "1.5"]).unwrap_err().contains("1.5 is not in 0.0..=1.0"));
        assert!(parse(&["--fast"]).unwrap_err().contains("unexpected argument '--fast'"));
    }

    #[test]
    fn a_failed_run_is_an_error() {
        let o = parse(&["--boids", "1", "--frames", "1", "--gif", "/no/such/directory/boids.gif"]).unwrap();
        assert!(run(&o).unwrap_err().starts_with("/no/such/directory/boids.gif: "));
    }
}
