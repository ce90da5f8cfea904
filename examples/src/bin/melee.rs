//! `melee`: two teams of RTS units fight; enemies within attack range are
//! found with the broad phase's all-pairs query (see `ecs_examples::melee`).
//! Prints a line every 50 frames and a summary.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use ecs_core::prelude::*;
use ecs_examples::melee::{Battle, MeleeConfig, MeleeOutcome, MeleeStats, add_melee, summary};

const HELP: &str = "melee: two teams of RTS units march at each other; each unit attacks the nearest enemy
within attack range (2), found with the grid's all-pairs query; units at zero health die

usage: melee [--units N] [--frames N]

  --units N    units per team (default 5000)
  --frames N   frames to run, each 1/30 s of game time and one fixed step (default 600);
               the run ends early when a team is wiped out
  --help       this text";

/// One frame of game time, and the fixed step: 1/30 s.
const STEP: Duration = Duration::from_nanos(33_333_333);

fn parse(args: impl IntoIterator<Item = String>) -> Result<Option<(usize, usize)>, String> {
    let (mut units, mut frames) = (5_000usize, 600usize);
    let mut args = args.into_iter();
    while let Some(flag) = args.next() {
        let mut count = |name: &str| -> Result<usize, String> {
            let v = args.next().ok_or_else(|| format!("{name} needs a value"))?;
            v.parse().ok().filter(|&n| n >= 1).ok_or_else(|| format!("{name}: `{v}` is not a count of at least 1"))
        };
        match flag.as_str() {
            "--help" | "-h" => return Ok(None),
            "--units" => units = count("--units")?,
            "--frames" => frames = count("--frames")?,
            other => return Err(format!("unknown flag `{other}`")),
        }
    }
    Ok(Some((units, frames)))
}

fn main() -> ExitCode {
    ecs_examples::cli::main_with("melee", HELP, parse, run)
}

fn run(&(units, frames): &(usize, usize)) -> Result<(), String> {
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

    #[test]
    fn flags() {
        let args = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(parse(args(&["--units", "10", "--frames", "5"])).unwrap(), Some((10, 5)));
        assert_eq!(parse(args(&["--help"])).unwrap(), None);
        assert!(parse(args(&["--units", "x"])).unwrap_err().contains("--units"));
        assert!(parse(args(&["--frames"])).unwrap_err().contains("needs a value"));
        assert!(parse(args(&["-x"])).unwrap_err().contains("unknown flag"));
    }

    #[test]
    fn a_small_battle_runs_to_its_end() {
        assert!(run(&(20, 2_000)).is_ok());
    }
}
