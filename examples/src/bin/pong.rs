//! `pong`: two AI paddles and a ball on `ecs_core::App` (see
//! `ecs_examples::pong`), headless: runs a number of frames of 1/60 s (one
//! fixed step each), prints each point and the score.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use ecs_core::prelude::*;
use ecs_examples::cli;
use ecs_examples::pong::{PongConfig, PongPlugin, PongState, Score, Side};

/// pong: two paddles played by a simple AI and a ball; serve, play and score are states,
/// the physics runs in fixed steps of 1/60 s; headless: prints each point and the score
#[derive(Parser, Debug, PartialEq)]
#[command(name = "pong")]
struct Options {
    /// Frames to run, at least 1, 1/60 s of game time each (7200: two minutes); the run ends early
    /// when a side has won
    #[arg(long, value_name = "N", default_value_t = 7_200, value_parser = clap::value_parser!(u64).range(1..))]
    frames: u64,
    /// Points that win the game, 1..=99
    #[arg(long, value_name = "N", default_value_t = PongConfig::default().points_to_win, value_parser = clap::value_parser!(u32).range(1..=99))]
    points: u32,
    /// Seed of the serve angles and the AI's aim errors
    #[arg(long, value_name = "N", default_value_t = PongConfig::default().seed)]
    seed: u64,
}

impl Options {
    fn config(&self) -> PongConfig {
        PongConfig { points_to_win: self.points, seed: self.seed, ..PongConfig::default() }
    }
}

/// One frame of game time, and the fixed step.
const STEP: Duration = Duration::from_nanos(16_666_667);

fn main() -> ExitCode {
    cli::main_with("pong", |o| run(o).map(|_| ()))
}

fn name(side: Side) -> &'static str {
    match side {
        Side::Left => "left",
        Side::Right => "right",
    }
}

/// Plays; returns the final score.
fn run(options: &Options) -> Result<Score, String> {
    let config = options.config();
    let mut app = App::new();
    app.insert_resource(TimeUpdateStrategy::ManualDuration(STEP))
        .insert_resource(Time::<Fixed>::from_duration(STEP))
        .add_plugins(PongPlugin::new(config));
    app.build_schedules().map_err(|e| e.to_string())?;
    println!("pong: first to {} points, seed {}, {} frames at most", config.points_to_win, config.seed, options.frames);
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

    fn parse(args: &[&str]) -> Result<Options, clap::Error> {
        cli::parse_from(args)
    }

    #[test]
    fn flags() {
        use clap::CommandFactory as _;
        Options::command().debug_assert();
        let o = parse(&["--frames", "600", "--points", "3", "--seed", "9"]).unwrap();
        assert_eq!(o.frames, 600);
        assert_eq!((o.config().points_to_win, o.config().seed), (3, 9));
        let o = parse(&[]).unwrap();
        assert_eq!((o.frames, o.config()), (7_200, PongConfig::default()));
        assert_eq!(parse(&["--help"]).unwrap_err().kind(), clap::error::ErrorKind::DisplayHelp);
        for bad in [
            &["--frames", "0"][..],
            &["--frames"],
            &["--points", "0"],
            &["--points", "100"],
            &["--seed", "x"],
            &["--serve"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn a_short_game_is_played_to_its_winner() {
        let o = Options { frames: 60 * 600, points: 2, seed: PongConfig::default().seed };
        let score = run(&o).unwrap();
        assert_eq!(score.left.max(score.right), 2);
        assert!(score.winner.is_some());
        // A frame budget too short for a point: no winner, the score so far.
        let o = Options { frames: 10, ..parse(&[]).unwrap() };
        assert_eq!(run(&o).unwrap(), Score::default());
    }
}
