//! Command-line parsing and the top-level driver of the `ecs-bench` binary.

use std::io::Write as _;

use crate::measure::Config;
use crate::runner::{self, Row, Scenario};

/// Usage text printed by `--help` and after a command-line error.
pub const USAGE: &str = "\
usage: ecs-bench SCENARIO [--json] [--quick]

SCENARIO:
  suite     ecs_bench_suite cases: simple_insert, simple_iter, frag_iter, heavy_compute, add_remove
  skip      chunk skipping: 100k entities, Changed<Pos> consumer, 0-100 % movers
  schedule  ecs_bench_suite schedule: systems ab, cd, ce in one schedule, 4 x 10k entities
  transform hierarchy propagation vs bevy_transform: wide, deep, flat, humanoids; static, 5 %, all moving
  spatial   broad phase vs kiddo and rstar, one thread: 100k points (uniform, clustered), radius 5;
            build, all radius queries, all pairs, std sort reference
  all       suite, skip, schedule, transform, then spatial

options:
  --json   one JSON object per line instead of a table
  --quick  short warm-up and few samples (a scenario finishes in well under a minute)
  -h, --help  this text

Peers (bevy_ecs, hecs, bevy_transform, kiddo, rstar) are measured when built with `--features peers`.";

/// Parsed command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Scenarios to run, in order.
    pub scenarios: Vec<Scenario>,
    /// Print JSON lines instead of tables.
    pub json: bool,
    /// Use [`Config::quick`].
    pub quick: bool,
}

/// What the command line asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Run benchmarks.
    Run(Options),
    /// Print the usage text.
    Help,
}

/// Parses the arguments (without the program name).
pub fn parse<I, S>(args: I) -> Result<Command, String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut scenario: Option<Vec<Scenario>> = None;
    let mut json = false;
    let mut quick = false;
    for arg in args {
        match arg.as_ref() {
            "--json" => json = true,
            "--quick" => quick = true,
            "-h" | "--help" => return Ok(Command::Help),
            flag if flag.starts_with('-') => return Err(format!("unknown option `{flag}`")),
            name => {
                if scenario.is_some() {
                    return Err(format!("unexpected argument `{name}`: give exactly one scenario"));
                }
                scenario = Some(match name {
                    "suite" => vec![Scenario::Suite],
                    "skip" => vec![Scenario::Skip],
                    "schedule" => vec![Scenario::Schedule],
                    "transform" => vec![Scenario::Transform],
                    "spatial" => vec![Scenario::Spatial],
                    "all" => vec![
                        Scenario::Suite,
                        Scenario::Skip,
                        Scenario::Schedule,
                        Scenario::Transform,
                        Scenario::Spatial,
                    ],
                    other => {
                        return Err(format!(
                            "unknown scenario `{other}` (expected suite, skip, schedule, transform, spatial or all)"
                        ));
                    }
                });
            }
        }
    }
    let scenarios =
        scenario.ok_or_else(|| "missing SCENARIO (suite, skip, schedule, transform, spatial or all)".to_owned())?;
    Ok(Command::Run(Options { scenarios, json, quick }))
}

/// Runs the binary on `args` (without the program name); returns the exit code.
pub fn main_with_args<I, S>(args: I) -> i32
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let opts = match parse(args) {
        Ok(Command::Help) => {
            let _ = writeln!(std::io::stdout(), "{USAGE}");
            return 0;
        }
        Ok(Command::Run(opts)) => opts,
        Err(e) => {
            eprintln!("ecs-bench: {e}\n\n{USAGE}");
            return 2;
        }
    };
    let cfg = if opts.quick { Config::quick() } else { Config::full() };
    if !cfg!(feature = "peers") && !opts.json {
        eprintln!("note: built without feature `peers`; only `ours` is measured");
    }
    let json = opts.json;
    let on_row = |row: &Row| {
        if json {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", row.to_json());
            let _ = out.flush();
        } else {
            eprintln!(
                "  {}/{}/{}: {:.3} us ({} samples x {} iters)",
                row.scenario.name(),
                row.case,
                row.imp.name(),
                row.measurement.median_us,
                row.measurement.samples,
                row.measurement.iters_per_sample
            );
        }
    };
    for scenario in opts.scenarios {
        let rows = match runner::run(scenario, &cfg, on_row) {
            Ok(rows) => rows,
            Err(e) => {
                eprintln!("ecs-bench: check failed: {e}");
                return 1;
            }
        };
        if !json {
            let _ = writeln!(std::io::stdout(), "{}", runner::table(scenario, &rows));
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_scenarios_and_flags() {
        assert_eq!(
            parse(["suite", "--json"]),
            Ok(Command::Run(Options { scenarios: vec![Scenario::Suite], json: true, quick: false }))
        );
        assert_eq!(
            parse(["--quick", "all"]),
            Ok(Command::Run(Options {
                scenarios: vec![
                    Scenario::Suite,
                    Scenario::Skip,
                    Scenario::Schedule,
                    Scenario::Transform,
                    Scenario::Spatial
                ],
                json: false,
                quick: true
            }))
        );
        assert_eq!(
            parse(["schedule", "--quick", "--json"]),
            Ok(Command::Run(Options { scenarios: vec![Scenario::Schedule], json: true, quick: true }))
        );
        assert_eq!(
            parse(["transform", "--quick"]),
            Ok(Command::Run(Options { scenarios: vec![Scenario::Transform], json: false, quick: true }))
        );
        assert_eq!(
            parse(["spatial", "--json"]),
            Ok(Command::Run(Options { scenarios: vec![Scenario::Spatial], json: true, quick: false }))
        );
        assert_eq!(parse(["--help"]), Ok(Command::Help));
    }

    #[test]
    fn rejects_bad_input() {
        assert!(parse(Vec::<String>::new()).is_err());
        assert!(parse(["nope"]).is_err());
        assert!(parse(["suite", "--fast"]).is_err());
        assert!(parse(["suite", "skip"]).is_err());
        assert!(parse(["schedule", "all"]).is_err());
        assert!(parse(["Schedule"]).is_err());
        assert!(parse(["spatial", "transform"]).is_err());
        assert!(parse(["spatial", "--peers"]).is_err());
    }
}
