//! `melee`: two teams of RTS units fight; enemies within attack range are
//! found with the broad phase's all-pairs query (see `ecs_examples::melee`).
//! Prints a line every 50 frames and a summary.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use ecs_core::prelude::*;
use ecs_examples::cli;
use ecs_examples::melee::{Battle, MeleeConfig, MeleeOutcome, MeleeStats, add_melee, summary};

/// melee: two teams of RTS units march at each other; each unit attacks the nearest enemy
/// within attack range (2), found with the grid's all-pairs query; units at zero health die
#[derive(Parser, Debug, PartialEq)]
#[command(name = "melee")]
struct Options {
    /// Units per team, at least 1
    #[arg(long, value_name = "N", default_value_t = 5_000, value_parser = cli::count(1..))]
    units: usize,
    /// Frames to run, at least 1, each 1/30 s of game time and one fixed step; the run ends early
    /// when a team is wiped out
    #[arg(long, value_name = "N", default_value_t = 600, value_parser = cli::count(1..))]
    frames: usize,
}

/// One frame of game time, and the fixed step: 1/30 s.
const STEP: Duration = Duration::from_nanos(33_333_333);

fn main() -> ExitCode {
    cli::main_with("melee", run)
}

fn run(&Options { units, frames }: &Options) -> Result<(), String> {
    let mut app = App::new();
    app.insert_resource(TimeUpdateStrategy::ManualDuration(STEP)).insert_resource(Time::<Fixed>::from_duration(STEP));
    let config = MeleeConfig { units_per_team: units, ..MeleeConfig::default() };
    add_melee(&mut app, &config).map_err(|e| e.to_string())?;
    app.build_schedules().map_err(|e| e.to_string())?;
    println!("melee: {units} units per team, attack range {}, {frames} frames", config.attack_range);
    let mut times: Vec<Duration> = Vec::with_capacity(frames);
    for frame in 0..frames {
        let start = Instant::now();
        app.update();
        times.push(start.elapsed());
        if app.world().resource::<State<Battle>>().is_some_and(|s| *s.get() == Battle::Over) {
            let outcome = app.world().resource::<MeleeOutcome>().copied();
            let winner = match outcome.and_then(|o| o.winner) {
                Some(team) => format!("team {team} wins"),
                None => "no unit left".to_owned(),
            };
            println!("frame {:4}: the battle is over: {winner}", frame + 1);
            break;
        }
        if frame % 50 == 49 || frame + 1 == frames {
            let s = summary(app.world_mut());
            let pairs = app.world().resource::<MeleeStats>().map_or(0, |m| m.pairs_in_range);
            println!(
                "frame {:4}: alive {:5} vs {:5}, pairs in range {pairs:6}, frame {:.3} ms",
                frame + 1,
                s.alive[0],
                s.alive[1],
                times[frame].as_secs_f64() * 1e3
            );
        }
    }
    let s = summary(app.world_mut());
    times.sort();
    println!("summary after {} steps ({:.1} s of battle):", s.frames, s.frames as f64 * STEP.as_secs_f64());
    for team in 0..2 {
        println!(
            "  team {team}: {:5} alive, {:5} kills, {:9.0} damage dealt",
            s.alive[team], s.kills[team], s.damage[team]
        );
    }
    println!(
        "  frame time: median {:.3} ms, worst {:.3} ms",
        times[times.len() / 2].as_secs_f64() * 1e3,
        times[times.len() - 1].as_secs_f64() * 1e3
    );
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
        assert_eq!(parse(&["--units", "10", "--frames", "5"]), Ok(Options { units: 10, frames: 5 }));
        assert_eq!(parse(&[]), Ok(Options { units: 5_000, frames: 600 }));
        assert!(parse(&["--help"]).unwrap_err().contains("--units <N>"));
        assert!(parse(&["--units", "x"]).unwrap_err().contains("--units"));
        assert!(parse(&["--units", "0"]).unwrap_err().contains("0 is not in 1.."));
        assert!(parse(&["--frames"]).unwrap_err().contains("a value is required"));
        assert!(parse(&["-x"]).unwrap_err().contains("unexpected argument '-x'"));
    }

    #[test]
    fn a_small_battle_runs_to_its_end() {
        assert!(run(&Options { units: 20, frames: 2_000 }).is_ok());
    }
}
