//! The command line of the `ecs-bench` binary: clap derive through
//! [`ecs_examples::cli`] (the parser every example binary shares), with
//! the scenarios and their one-line descriptions taken from
//! [`SCENARIOS`].
//!
//! Exit codes: 0 for a finished run and `--help`, 2 for a bad command line
//! (clap's usage error), 1 when a run fails (a check before or after timing
//! found the implementations doing different work, or the report could not
//! be read or written).

use std::ffi::OsString;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::LazyLock;

use clap::builder::PossibleValue;
use clap::error::ErrorKind;
use clap::{CommandFactory as _, Parser, Subcommand, ValueEnum};
use ecs_examples::cli;

use crate::measure::Config;
use crate::progress::Progress;
use crate::row::{Row, ScenarioId};
use crate::scenarios::{RunOptions, SCENARIOS, Scenario};

/// What the positional argument names: one scenario, or all of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// One scenario.
    One(ScenarioId),
    /// Every scenario of [`SCENARIOS`], in order.
    All,
}

/// Every [`Target`]: the scenarios in table order, then `all`.
static TARGETS: LazyLock<Vec<Target>> =
    LazyLock::new(|| SCENARIOS.iter().map(|s| Target::One(s.id)).chain([Target::All]).collect());

impl ValueEnum for Target {
    fn value_variants<'a>() -> &'a [Self] {
        &TARGETS
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            Target::One(id) => PossibleValue::new(id.name()).help(crate::scenarios::scenario(*id).about),
            Target::All => PossibleValue::new("all").help("every scenario above, in this order"),
        })
    }
}

impl Target {
    /// The scenarios to run, in order.
    pub fn scenarios(self) -> Vec<&'static Scenario> {
        match self {
            Target::One(id) => vec![crate::scenarios::scenario(id)],
            Target::All => SCENARIOS.iter().collect(),
        }
    }
}

/// ecs-bench: the chunked archetype ECS against bevy_ecs, hecs,
/// bevy_transform, kiddo and rstar, scenario by scenario. The peers are
/// measured when built with `--features peers`.
#[derive(Parser, Debug, PartialEq, Eq)]
#[command(
    name = "ecs-bench",
    subcommand_negates_reqs = true,
    disable_help_subcommand = true,
    override_usage = "ecs-bench <SCENARIO> [--json] [--quick] [--skip-1m]\n       \
                      ecs-bench report [--quick] [--skip-1m] [--out DIR] [--from FILE]",
    after_help = "Each implementation of a case is checked before and after timing; a failed check exits with 1."
)]
pub struct Cli {
    /// The scenario to run.
    #[arg(value_name = "SCENARIO", required = true)]
    pub scenario: Option<Target>,
    /// One JSON object per line on stdout instead of tables (no progress bar).
    #[arg(long)]
    pub json: bool,
    /// Short warm-up and few samples (a scenario finishes in about a minute).
    #[arg(long)]
    pub quick: bool,
    /// `game` (alone or in `all`): leave out the 1M-entity case.
    #[arg(long = "skip-1m")]
    pub skip_1m: bool,
    /// Or write the HTML report.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The subcommands.
#[derive(Subcommand, Debug, PartialEq, Eq)]
pub enum Command {
    /// Run every scenario (or read saved rows) and write DIR/index.html: the goals met and not met, charts of
    /// time against the share of entities changed (ours against each peer), the SVG files and the rows
    /// (results.jsonl).
    Report(ReportOptions),
}

/// Options of `ecs-bench report`.
#[derive(clap::Args, Debug, PartialEq, Eq)]
pub struct ReportOptions {
    /// Short warm-up and few samples.
    #[arg(long)]
    pub quick: bool,
    /// Leave out `game`'s 1M-entity case.
    #[arg(long = "skip-1m")]
    pub skip_1m: bool,
    /// Output directory [default: target/ecs-report, under CARGO_TARGET_DIR when set].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Draw the report from saved JSON lines (a results.jsonl) instead of measuring.
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
}

/// Parses the arguments (without the program name).
///
/// # Errors
///
/// clap's error (usage, exit code 2; or the help text, exit code 0), also
/// for `--skip-1m` with a scenario other than `game` or `all`.
pub fn parse<S: Into<OsString> + Clone>(args: impl IntoIterator<Item = S>) -> Result<Cli, clap::Error> {
    let parsed: Cli = cli::parse_from(args)?;
    if parsed.command.is_some() && (parsed.scenario.is_some() || parsed.json || parsed.quick || parsed.skip_1m) {
        return Err(Cli::command().error(
            ErrorKind::ArgumentConflict,
            "`report` takes no SCENARIO, and its flags come after it (`ecs-bench report --quick`)",
        ));
    }
    if parsed.skip_1m && !matches!(parsed.scenario, Some(Target::One(ScenarioId::Game) | Target::All)) {
        return Err(Cli::command().error(ErrorKind::ArgumentConflict, "`--skip-1m` applies to `game` and `all` only"));
    }
    Ok(parsed)
}

/// Runs the binary on `args` (without the program name): prints what the
/// binary prints, returns its exit code.
pub fn main_with_args<S: Into<OsString> + Clone>(args: impl IntoIterator<Item = S>) -> ExitCode {
    cli::exit_code("ecs-bench", parse(args), run)
}

/// Runs what the command line asks for.
///
/// # Errors
///
/// What failed: a check of a scenario, or reading or writing the report.
pub fn run(cli: &Cli) -> Result<(), String> {
    if let Some(Command::Report(opts)) = &cli.command {
        return report(opts);
    }
    let Some(target) = cli.scenario else {
        return Err("no scenario given".to_owned());
    };
    let cfg = if cli.quick { Config::quick() } else { Config::full() };
    let opts = RunOptions { skip_1m: cli.skip_1m };
    if !cfg!(feature = "peers") && !cli.json {
        eprintln!("note: built without feature `peers`; only `ours` is measured");
    }
    for scenario in target.scenarios() {
        let cases = scenario.case_names(opts).len();
        let mut progress = Progress::new(cases, scenario.long && !cli.json);
        progress.running(scenario.name());
        let mut on_row = |row: &Row| {
            progress.row(row);
            if cli.json {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{}", row.to_json());
                let _ = out.flush();
            } else {
                progress.line(&format!(
                    "  {}/{}/{}: {:.3} us ({} samples x {} iters)",
                    row.scenario.name(),
                    row.case,
                    row.imp.name(),
                    row.measurement.median_us,
                    row.measurement.samples,
                    row.measurement.iters_per_sample
                ));
            }
        };
        let rows = scenario.run(&cfg, opts, &mut on_row);
        progress.finish();
        let rows = rows.map_err(|e| format!("check failed: {e}"))?;
        if !cli.json {
            let _ = writeln!(std::io::stdout(), "{}", (scenario.table)(&rows));
        }
    }
    Ok(())
}

/// `ecs-bench report`: measures every scenario (or reads `--from`), writes
/// the page.
fn report(opts: &ReportOptions) -> Result<(), String> {
    let out = opts.out.clone().unwrap_or_else(|| {
        let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| "target".into(), PathBuf::from);
        target.join("ecs-report")
    });
    let (rows, about) = match &opts.from {
        Some(path) => {
            let rows = std::fs::File::open(path)
                .map_err(|e| e.to_string())
                .and_then(crate::report::read_rows)
                .map_err(|e| format!("reading {}: {e}", path.display()))?;
            (rows, format!("Drawn from {}.", path.display()))
        }
        None => {
            let cfg = if opts.quick { Config::quick() } else { Config::full() };
            let run_opts = RunOptions { skip_1m: opts.skip_1m };
            if !cfg!(feature = "peers") {
                eprintln!("note: built without feature `peers`; only `ours` is measured");
            }
            let cases = SCENARIOS.iter().map(|s| s.case_names(run_opts).len()).sum();
            let mut progress = Progress::new(cases, true);
            let mut rows = Vec::new();
            for scenario in &SCENARIOS {
                progress.running(scenario.name());
                if !progress.is_drawn() {
                    eprintln!("report: running {}", scenario.name());
                }
                let mut on_row = |row: &Row| {
                    progress.row(row);
                    if !progress.is_drawn() {
                        eprintln!(
                            "  {}/{}/{}: {:.3} us",
                            row.scenario.name(),
                            row.case,
                            row.imp.name(),
                            row.measurement.median_us
                        );
                    }
                };
                match scenario.run(&cfg, run_opts, &mut on_row) {
                    Ok(r) => rows.extend(r),
                    Err(e) => {
                        progress.finish();
                        return Err(format!("check failed: {e}"));
                    }
                }
            }
            progress.finish();
            let peers = if cfg!(feature = "peers") { "with peers" } else { "without peers (ours only)" };
            let threads = std::thread::available_parallelism().map_or(1, usize::from);
            let mode = if opts.quick { "quick" } else { "full" };
            let skipped = if opts.skip_1m { ", game's 1M case left out" } else { "" };
            (rows, format!("Measured {peers}, {mode} run{skipped}, {threads} hardware threads."))
        }
    };
    let page = crate::report::write_report(&out, &rows, &about).map_err(|e| format!("report: {e}"))?;
    let _ = writeln!(std::io::stdout(), "wrote {}", page.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_of(args: &[&str]) -> (Option<Target>, bool, bool, bool) {
        let cli = parse(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        assert_eq!(cli.command, None);
        (cli.scenario, cli.json, cli.quick, cli.skip_1m)
    }

    #[test]
    fn the_command_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_scenarios_and_flags() {
        use ScenarioId::*;
        assert_eq!(run_of(&["suite", "--json"]), (Some(Target::One(Suite)), true, false, false));
        assert_eq!(run_of(&["--quick", "all"]), (Some(Target::All), false, true, false));
        assert_eq!(run_of(&["schedule", "--quick", "--json"]), (Some(Target::One(Schedule)), true, true, false));
        assert_eq!(run_of(&["transform"]).0, Some(Target::One(Transform)));
        assert_eq!(run_of(&["spatial"]).0, Some(Target::One(Spatial)));
        assert_eq!(run_of(&["replication"]).0, Some(Target::One(Replication)));
        assert_eq!(run_of(&["skip"]).0, Some(Target::One(Skip)));
        assert_eq!(run_of(&["--skip-1m", "game"]), (Some(Target::One(Game)), false, false, true));
        assert_eq!(run_of(&["all", "--skip-1m"]), (Some(Target::All), false, false, true));
        assert_eq!(
            parse(["report", "--quick", "--out", "r", "--from", "x.jsonl"]).unwrap().command,
            Some(Command::Report(ReportOptions {
                quick: true,
                skip_1m: false,
                out: Some("r".into()),
                from: Some("x.jsonl".into())
            }))
        );
        assert_eq!(
            parse(["report", "--skip-1m"]).unwrap().command,
            Some(Command::Report(ReportOptions { quick: false, skip_1m: true, out: None, from: None }))
        );
    }

    #[test]
    fn all_runs_every_scenario_game_included() {
        let names: Vec<&str> = Target::All.scenarios().iter().map(|s| s.name()).collect();
        assert_eq!(names, ["suite", "skip", "schedule", "transform", "spatial", "replication", "game"]);
        assert_eq!(Target::One(ScenarioId::Game).scenarios()[0].name(), "game");
    }

    #[test]
    fn rejects_bad_input_as_usage_errors() {
        for bad in [
            &[][..],
            &["nope"],
            &["suite", "--fast"],
            &["suite", "skip"],
            &["schedule", "all"],
            &["Schedule"],
            &["spatial", "--peers"],
            &["report", "--json"],
            &["report", "--out"],
            &["suite", "report"],
            &["suite", "--skip-1m"],
            &["game", "game"],
            &["--json"],
            &["--quick", "report"],
            &["help"],
        ] {
            let e = parse(bad).expect_err(&format!("{bad:?} parsed"));
            assert_eq!(e.exit_code(), i32::from(cli::USAGE_ERROR), "{bad:?}: {e}");
            assert_eq!(main_with_args(bad), ExitCode::from(cli::USAGE_ERROR), "{bad:?}");
        }
        let e = parse(["suite", "--skip-1m"]).unwrap_err().to_string();
        assert!(e.contains("`--skip-1m` applies to `game` and `all` only"), "{e}");
        let e = parse(["suite", "report"]).unwrap_err().to_string();
        assert!(e.contains("`report` takes no SCENARIO"), "{e}");
        let e = parse(["suite", "skip"]).unwrap_err().to_string();
        assert!(e.contains("unexpected argument 'skip'"), "{e}");
        let e = parse(["sutie"]).unwrap_err().to_string();
        assert!(e.contains("invalid value 'sutie'") && e.contains("suite"), "{e}");
    }

    #[test]
    fn help_lists_every_scenario_with_its_description() {
        let help = parse(["--help"]).unwrap_err();
        assert_eq!(help.kind(), ErrorKind::DisplayHelp);
        let text = help.to_string();
        for s in &SCENARIOS {
            assert!(text.contains(&format!("{}:", s.name())), "help lacks {}:\n{text}", s.name());
            let first_words: String = s.about.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
            assert!(text.contains(&first_words), "help lacks {first_words:?}:\n{text}");
        }
        assert!(text.contains("all:") && text.contains("report"), "{text}");
        assert_eq!(main_with_args(["--help"]), ExitCode::SUCCESS);
        assert_eq!(main_with_args(["report", "--help"]), ExitCode::SUCCESS);
    }

    #[cfg(unix)]
    #[test]
    fn report_from_an_endless_file_fails() {
        // `/dev/zero` never ends: the read is bounded, the command exits 1
        // and writes nothing.
        let out = std::env::temp_dir().join(format!("ecs-bench-report-zero-{}", std::process::id()));
        let code = main_with_args(["report", "--from", "/dev/zero", "--out", out.to_str().unwrap_or("x")]);
        assert_eq!(code, ExitCode::FAILURE);
        assert!(!out.exists());
    }

    #[test]
    fn report_from_saved_rows_writes_the_page() {
        let dir = std::env::temp_dir().join(format!("ecs-bench-report-from-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let saved = dir.join("saved.jsonl");
        std::fs::write(
            &saved,
            "{\"scenario\":\"game\",\"case\":\"active_5pct\",\"impl\":\"ours\",\"median_us\":1000}\n\
             {\"scenario\":\"game\",\"case\":\"active_5pct\",\"impl\":\"bevy\",\"median_us\":4000}\n",
        )
        .unwrap();
        let out = dir.join("out");
        let code = main_with_args(["report", "--from", saved.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        assert_eq!(code, ExitCode::SUCCESS);
        let page = std::fs::read_to_string(out.join("index.html")).unwrap();
        assert!(page.contains("active_5pct") && page.contains("0.25"), "{page}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
