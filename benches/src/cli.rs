//! Command-line parsing and the top-level driver of the `ecs-bench` binary.

use std::io::Write as _;

use crate::measure::Config;
use crate::runner::{self, Row, Scenario};

/// Usage text printed by `--help` and after a command-line error.
pub const USAGE: &str = "\
usage: ecs-bench SCENARIO [--json] [--quick] [--skip-1m]
       ecs-bench report [--quick] [--out DIR] [--from FILE]

SCENARIO:
  suite     ecs_bench_suite cases: simple_insert, simple_iter, frag_iter, heavy_compute, add_remove
  skip      chunk skipping: 100k entities, Changed<Pos> consumer, 0-100 % movers
  schedule  ecs_bench_suite schedule: systems ab, cd, ce in one schedule, 4 x 10k entities; app frames
            vs bevy_app: 50 trivial systems in 7 labelled schedules, all running, half skipped by
            run conditions, all on one thread
  transform hierarchy propagation vs bevy_transform: wide, deep, flat, humanoids; static, 5 %, all moving
  spatial   broad phase vs kiddo and rstar, one thread: 100k points (uniform, clustered: radius 5;
            clustered-sparse: radius 2 and 4; far outliers: radius 5 and 10; cells = radius);
            build, all radius queries, all pairs, std sort reference; the broad-phase system
            (ours) with nothing, 5 % and all entities moved
  replication snapshot replication (ours): cube scene kbps per client at 0/5/20 % loss and at rest,
            encode us per client per tick for 100k entities at 0/1/10 % changed, 64 clients x 10k fan-out
  game      the showcase's scene without the network, whole frames vs bevy (App, time, transform;
            neighbours on the same sparse grid, rebuilt each step): scenery, spinning rigs, boids,
            two armies; 0/1/5/20/100 % of rigs and boids active at 100k entities, 5 % at 1M;
            both worlds checked equal after the frames
  all       suite, skip, schedule, transform, spatial, then replication (not game)

report:   runs every scenario of `all` and writes DIR/index.html (default target/ecs-report) with SVG
          charts of time per frame against the share of entities changed, ours against each peer,
          the SVG files, and the raw JSON lines (results.jsonl) next to them;
          --from FILE draws the report from saved JSON lines instead of measuring

options:
  --json   one JSON object per line instead of a table
  --quick  short warm-up and few samples (a scenario finishes in well under a minute)
  --skip-1m  `game` only: leave out the 1M-entity case
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
    /// Run every scenario and write the HTML report.
    Report(ReportOptions),
    /// Print the usage text.
    Help,
}

/// Options of `ecs-bench report`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportOptions {
    /// Use [`Config::quick`].
    pub quick: bool,
    /// Output directory; `None` is `target/ecs-report` (under `CARGO_TARGET_DIR` when set).
    pub out: Option<std::path::PathBuf>,
    /// Draw from these saved JSON lines instead of measuring.
    pub from: Option<std::path::PathBuf>,
}

fn parse_report<I, S>(args: I) -> Result<Command, String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut opts = ReportOptions { quick: false, out: None, from: None };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| {
            args.next()
                .map(|v| std::path::PathBuf::from(v.as_ref()))
                .ok_or_else(|| format!("`{flag}` needs a path after it"))
        };
        match arg.as_ref() {
            "--quick" => opts.quick = true,
            "--out" => opts.out = Some(value("--out")?),
            "--from" => opts.from = Some(value("--from")?),
            "-h" | "--help" => return Ok(Command::Help),
            other => {
                return Err(format!(
                    "unknown argument `{other}` for `report` (expected --quick, --out DIR, --from FILE)"
                ));
            }
        }
    }
    Ok(Command::Report(opts))
}

/// Parses the arguments (without the program name).
pub fn parse<I, S>(args: I) -> Result<Command, String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut args = args.into_iter().peekable();
    if args.peek().is_some_and(|a| a.as_ref() == "report") {
        args.next();
        return parse_report(args);
    }
    let mut scenario: Option<Vec<Scenario>> = None;
    let mut json = false;
    let mut quick = false;
    let mut skip_1m = false;
    for arg in args {
        match arg.as_ref() {
            "--json" => json = true,
            "--quick" => quick = true,
            "--skip-1m" => skip_1m = true,
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
                    "replication" => vec![Scenario::Replication],
                    "game" => vec![Scenario::Game { skip_1m: false }],
                    "all" => vec![
                        Scenario::Suite,
                        Scenario::Skip,
                        Scenario::Schedule,
                        Scenario::Transform,
                        Scenario::Spatial,
                        Scenario::Replication,
                    ],
                    other => {
                        return Err(format!(
                            "unknown scenario `{other}` (expected suite, skip, schedule, transform, spatial, replication, game or all)"
                        ));
                    }
                });
            }
        }
    }
    let mut scenarios = scenario.ok_or_else(|| {
        "missing SCENARIO (suite, skip, schedule, transform, spatial, replication, game or all)".to_owned()
    })?;
    if skip_1m {
        match scenarios.as_mut_slice() {
            [Scenario::Game { skip_1m }] => *skip_1m = true,
            _ => return Err("`--skip-1m` applies to the `game` scenario only".to_owned()),
        }
    }
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
        Ok(Command::Report(opts)) => return report(&opts),
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

/// The scenarios `all` runs, in order.
pub fn all_scenarios() -> Vec<Scenario> {
    match parse(["all"]) {
        Ok(Command::Run(opts)) => opts.scenarios,
        _ => unreachable!("`all` always parses to a run"),
    }
}

/// `ecs-bench report`: measures every scenario (or reads `--from`), writes the
/// page; returns the exit code.
fn report(opts: &ReportOptions) -> i32 {
    let out = opts.out.clone().unwrap_or_else(|| {
        let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| "target".into(), std::path::PathBuf::from);
        target.join("ecs-report")
    });
    let (lines, about) = match &opts.from {
        Some(path) => match std::fs::File::open(path).map_err(|e| e.to_string()).and_then(crate::report::read_lines) {
            Ok(lines) => (lines, format!("Drawn from {}.", path.display())),
            Err(e) => {
                eprintln!("ecs-bench: reading {}: {e}", path.display());
                return 1;
            }
        },
        None => {
            let cfg = if opts.quick { Config::quick() } else { Config::full() };
            if !cfg!(feature = "peers") {
                eprintln!("note: built without feature `peers`; only `ours` is measured");
            }
            let mut lines = Vec::new();
            for scenario in all_scenarios() {
                eprintln!("report: running {}", scenario.name());
                let on_row = |row: &Row| {
                    eprintln!(
                        "  {}/{}/{}: {:.3} us",
                        row.scenario.name(),
                        row.case,
                        row.imp.name(),
                        row.measurement.median_us
                    );
                };
                match runner::run(scenario, &cfg, on_row) {
                    Ok(rows) => lines.extend(rows.iter().map(Row::to_json)),
                    Err(e) => {
                        eprintln!("ecs-bench: check failed: {e}");
                        return 1;
                    }
                }
            }
            let peers = if cfg!(feature = "peers") { "with peers" } else { "without peers (ours only)" };
            let threads = std::thread::available_parallelism().map_or(1, usize::from);
            let mode = if opts.quick { "quick" } else { "full" };
            (lines, format!("Measured {peers}, {mode} run, {threads} hardware threads."))
        }
    };
    match crate::report::write_report(&out, &lines, &about) {
        Ok(page) => {
            let _ = writeln!(std::io::stdout(), "wrote {}", page.display());
            0
        }
        Err(e) => {
            eprintln!("ecs-bench: report: {e}");
            1
        }
    }
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
                    Scenario::Spatial,
                    Scenario::Replication
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
        assert_eq!(
            parse(["game", "--quick"]),
            Ok(Command::Run(Options { scenarios: vec![Scenario::Game { skip_1m: false }], json: false, quick: true }))
        );
        assert_eq!(
            parse(["--skip-1m", "game"]),
            Ok(Command::Run(Options { scenarios: vec![Scenario::Game { skip_1m: true }], json: false, quick: false }))
        );
        assert_eq!(parse(["--help"]), Ok(Command::Help));
        assert_eq!(
            parse(["report", "--quick", "--out", "r", "--from", "x.jsonl"]),
            Ok(Command::Report(ReportOptions { quick: true, out: Some("r".into()), from: Some("x.jsonl".into()) }))
        );
        assert_eq!(parse(["report"]), Ok(Command::Report(ReportOptions { quick: false, out: None, from: None })));
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
        assert!(parse(["report", "--json"]).is_err());
        assert!(parse(["report", "--out"]).is_err());
        assert!(parse(["suite", "report"]).is_err());
        assert!(parse(["suite", "--skip-1m"]).is_err());
        assert!(parse(["all", "--skip-1m"]).is_err());
        assert!(parse(["game", "game"]).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn report_from_an_endless_file_fails() {
        // `/dev/zero` never ends: the read is bounded, the command exits 1
        // and writes nothing.
        let out = std::env::temp_dir().join(format!("ecs-bench-report-zero-{}", std::process::id()));
        let code = main_with_args(["report", "--from", "/dev/zero", "--out", out.to_str().unwrap_or("x")]);
        assert_eq!(code, 1);
        assert!(!out.exists());
    }
}
