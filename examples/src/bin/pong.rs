//! `pong`: two AI paddles and a ball on `ecs_core::App` (see
//! `ecs_examples::pong`), headless: runs a number of frames of 1/60 s (one
//! fixed step each), prints each point and the score.

use std::process::ExitCode;
use std::time::Duration;

use ecs_core::prelude::*;
use ecs_examples::pong::{PongConfig, PongPlugin, PongState, Score, Side};

const HELP: &str = "pong: two paddles played by a simple AI and a ball; serve, play and score are states,
the physics runs in fixed steps of 1/60 s; headless: prints each point and the score

usage: pong [--frames N] [--points N] [--seed N]

  --frames N   frames to run, 1/60 s of game time each (default 7200: two minutes); the run
               ends early when a side has won
  --points N   points that win the game, 1..=99 (default 5)
  --seed N     seed of the serve angles and the AI's aim errors (default 5262919)
  --help       this text";

/// One frame of game time, and the fixed step.
const STEP: Duration = Duration::from_nanos(16_666_667);

#[derive(Debug, PartialEq)]
struct Options {
    frames: u64,
    config: PongConfig,
}

fn parse(args: impl IntoIterator<Item = String>) -> Result<Option<Options>, String> {
    let mut o = Options { frames: 7_200, config: PongConfig::default() };
    let mut args = args.into_iter();
    while let Some(flag) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match flag.as_str() {
            "--help" | "-h" => return Ok(None),
            "--frames" => {
                let v = value("--frames")?;
                o.frames = v
                    .parse()
                    .ok()
                    .filter(|&n| n >= 1)
                    .ok_or_else(|| format!("--frames: `{v}` is not a count of at least 1"))?;
            }
            "--points" => {
                let v = value("--points")?;
                o.config.points_to_win = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=99).contains(n))
                    .ok_or_else(|| format!("--points: `{v}` is not within 1..=99"))?;
            }
            "--seed" => {
                let v = value("--seed")?;
                o.config.seed = v.parse().map_err(|_| format!("--seed: `{v}` is not a number"))?;
            }
            other => return Err(format!("unknown flag `{other}`")),
        }
    }
    Ok(Some(o))
}

fn main() -> ExitCode {
    ecs_examples::cli::main_with("pong", HELP, parse, |o| run(o).map(|_| ()))
}

fn name(side: Side) -> &'static str {
    match side {
        Side::Left => "left",
        Side::Right => "right",
    }
}

/// Plays; returns the final score.
fn run(options: &Options) -> Result<Score, String> {
    let mut app = App::new();
    app.insert_resource(TimeUpdateStrategy::ManualDuration(STEP))
        .insert_resource(Time::<Fixed>::from_duration(STEP))
        .add_plugins(PongPlugin::new(options.config));
    app.build_schedules().map_err(|e| e.to_string())?;
    println!(
        "pong: first to {} points, seed {}, {} frames at most",
        options.config.points_to_win, options.config.seed, options.frames
    );
    let mut last = Score::default();
    for frame in 1..=options.frames {
        app.update();
        let world = app.world();
        let score = world.resource::<Score>().copied().ok_or("no score")?;
        if (score.left, score.right) != (last.left, last.right) {
            let scorer = if score.left > last.left { Side::Left } else { Side::Right };
            println!(
                "{:6.2} s: {} scores, {} - {} ({} paddle hits so far)",
                frame as f64 * STEP.as_secs_f64(),
                name(scorer),
                score.left,
                score.right,
                score.hits
            );
        }
        last = score;
        if world.resource::<State<PongState>>().is_some_and(|s| *s.get() == PongState::Over) {
            break;
        }
    }
    match last.winner {
        Some(side) => println!("final score: left {} - right {}, {} wins", last.left, last.right, name(side)),
        None => println!("score after {} frames: left {} - right {}", options.frames, last.left, last.right),
    }
    Ok(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags() {
        let o = parse(args(&["--frames", "600", "--points", "3", "--seed", "9"])).unwrap().unwrap();
        assert_eq!(o.frames, 600);
        assert_eq!((o.config.points_to_win, o.config.seed), (3, 9));
        assert_eq!(parse(args(&["--help"])), Ok(None));
        for bad in [
            &["--frames", "0"][..],
            &["--frames"],
            &["--points", "0"],
            &["--points", "100"],
            &["--seed", "x"],
            &["--serve"],
        ] {
            assert!(parse(args(bad)).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn a_short_game_is_played_to_its_winner() {
        let o = Options { frames: 60 * 600, config: PongConfig { points_to_win: 2, ..PongConfig::default() } };
        let score = run(&o).unwrap();
        assert_eq!(score.left.max(score.right), 2);
        assert!(score.winner.is_some());
        // A frame budget too short for a point: no winner, the score so far.
        let o = Options { frames: 10, config: PongConfig::default() };
        assert_eq!(run(&o).unwrap(), Score::default());
    }
}
