//! The command line every example binary shares: flags in, exit code out.
//!
//! A binary describes its flags as a struct deriving [`clap::Parser`]: the
//! struct's doc comment is the text of `--help`, each field's doc comment
//! the line of its flag, and the value parsers here ([`count`], [`within`])
//! refuse a value outside its bounds with a message that names them. The
//! binary's `main` is then one call of [`main_with`], which keeps the exit
//! codes every binary has: 0 for success and `--help`, 2 for bad flags
//! (clap's usage error, on stderr), 1 when the run fails (`name: error` on
//! stderr).
//!
//! ```
//! use std::process::ExitCode;
//!
//! use clap::Parser;
//! use ecs_examples::cli;
//!
//! /// frames: counts frames.
//! #[derive(Parser)]
//! #[command(name = "frames")]
//! struct Options {
//!     /// Frames to run, 1..=100 (default 10).
//!     #[arg(long, value_name = "N", default_value_t = 10, value_parser = cli::count(1..=100))]
//!     frames: usize,
//! }
//!
//! let run = |o: &Options| if o.frames > 1 { Ok(()) } else { Err("too few frames") };
//! let code = |args: &[&str]| cli::exit_code("frames", cli::parse_from::<Options, _>(args), run);
//! assert_eq!(code(&["--frames", "5"]), ExitCode::SUCCESS);
//! assert_eq!(code(&["--help"]), ExitCode::SUCCESS);
//! assert_eq!(code(&["--frames", "0"]), ExitCode::from(cli::USAGE_ERROR));
//! assert_eq!(code(&["--frames", "1"]), ExitCode::FAILURE);
//! ```

use std::ffi::OsString;
use std::fmt::Display;
use std::ops::RangeBounds;
use std::process::ExitCode;
use std::str::FromStr;

use clap::Parser;
use clap::builder::RangedU64ValueParser;
use clap::error::ErrorKind;

/// The exit code of a bad flag or value (clap's usage error code).
pub const USAGE_ERROR: u8 = 2;

/// The widest the help gets, in columns, however wide the terminal.
pub const HELP_WIDTH: usize = 100;

/// Parses the process arguments into `O`, runs `run` on them, and maps the
/// outcome to an exit code (see [`exit_code`]).
pub fn main_with<O: Parser, E: Display>(name: &str, run: impl FnOnce(&O) -> Result<(), E>) -> ExitCode {
    exit_code(name, parse(std::env::args_os()), run)
}

/// [`main_with`] after parsing, for tests: prints what the binary prints and
/// returns its exit code. `--help` goes to stdout with 0; a bad flag's error
/// (what was wrong, the usage line, a pointer to `--help`) to stderr with
/// [`USAGE_ERROR`]; a failed run's error to stderr as `name: error` with 1.
pub fn exit_code<O, E: Display>(
    name: &str,
    parsed: Result<O, clap::Error>,
    run: impl FnOnce(&O) -> Result<(), E>,
) -> ExitCode {
    match parsed {
        Ok(options) => match run(&options) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{name}: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            // A closed pipe (`--help | head`) is not an error of ours.
            let _ = e.print();
            match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => ExitCode::SUCCESS,
                _ => ExitCode::from(USAGE_ERROR),
            }
        }
    }
}

/// Parses `args` (without the program name) into `O`, as the binary would
/// parse its command line: the tests' way in.
pub fn parse_from<O: Parser, S: Into<OsString> + Clone>(args: impl IntoIterator<Item = S>) -> Result<O, clap::Error> {
    let name = O::command().get_name().to_owned();
    parse(std::iter::once(OsString::from(name)).chain(args.into_iter().map(Into::into)))
}

/// Parses a whole command line (the program first) into `O`, the help
/// wrapped to the terminal but at most [`HELP_WIDTH`] columns.
fn parse<O: Parser>(command_line: impl IntoIterator<Item = OsString>) -> Result<O, clap::Error> {
    let mut command = O::command().max_term_width(HELP_WIDTH);
    let mut matches = command.try_get_matches_from_mut(command_line)?;
    O::from_arg_matches_mut(&mut matches).map_err(|e| e.format(&mut command))
}

/// A value parser for a count (`usize`) within `range`: `--frames 0` for
/// `count(1..)` is refused with "0 is not in 1..", and so is a value that is
/// not a whole number.
pub fn count(range: impl RangeBounds<u64>) -> RangedU64ValueParser<usize> {
    RangedU64ValueParser::new().range(range)
}

/// A value parser for a number (a share, a radius, a latency) within
/// `range`: refuses what does not parse as `T` and what the range does not
/// contain (`NaN` included), naming the range.
///
/// Write the bounds in the field's type (`within(0.0_f32..=1.0)` for an
/// `f32` field): clap compares the parsed type with the field's only when a
/// value is parsed, so a bare `0.0..=1.0` (an `f64` range) on an `f32` field
/// compiles and then panics. Each binary's tests parse its defaults for that.
pub fn within<T, R>(range: R) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: FromStr + PartialOrd + 'static,
    R: RangeBounds<T> + std::fmt::Debug + Clone + Send + Sync + 'static,
{
    move |text: &str| {
        let value: T = text.parse().map_err(|_| format!("`{text}` is not a number"))?;
        if range.contains(&value) { Ok(value) } else { Err(format!("{text} is not in {range:?}")) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// t: a test command.
    #[derive(Parser, Debug)]
    #[command(name = "t")]
    struct Flags {
        /// A count, 1..=64.
        #[arg(long, default_value_t = 7, value_parser = count(1..=64))]
        n: usize,
        /// A share, 0.0..=1.0.
        #[arg(long, default_value_t = 0.5, value_parser = within(0.0..=1.0))]
        share: f64,
    }

    #[test]
    fn the_command_is_well_formed() {
        use clap::CommandFactory as _;
        Flags::command().debug_assert();
    }

    #[test]
    fn outcomes_map_to_exit_codes() {
        let ran = |o: &Flags| if o.n == 7 { Ok(()) } else { Err("boom") };
        let code = |args: &[&str]| exit_code("t", parse_from::<Flags, _>(args), ran);
        assert_eq!(code(&[]), ExitCode::SUCCESS);
        assert_eq!(code(&["--n", "8"]), ExitCode::FAILURE);
        assert_eq!(code(&["--help"]), ExitCode::SUCCESS);
        assert_eq!(code(&["-h"]), ExitCode::SUCCESS);
        assert_eq!(code(&["--bad"]), ExitCode::from(USAGE_ERROR));
        assert_eq!(code(&["--n"]), ExitCode::from(USAGE_ERROR));
        assert_eq!(code(&["--n", "0"]), ExitCode::from(USAGE_ERROR));
    }

    #[test]
    fn clap_reports_usage_errors_with_the_usage_code() {
        let e = parse_from::<Flags, _>(["--n", "x"]).unwrap_err();
        assert_eq!(e.exit_code(), i32::from(USAGE_ERROR));
        assert_eq!(parse_from::<Flags, _>(["--help"]).unwrap_err().exit_code(), 0);
    }

    #[test]
    fn value_parsers_keep_their_bounds() {
        let o = parse_from::<Flags, _>(["--n", "64", "--share", "1.0"]).unwrap();
        assert_eq!((o.n, o.share), (64, 1.0));
        let o = parse_from::<Flags, _>(["--n", "1", "--share", "0"]).unwrap();
        assert_eq!((o.n, o.share), (1, 0.0));
        for (bad, complaint) in [
            (&["--n", "0"][..], "0 is not in 1..=64"),
            (&["--n", "65"], "65 is not in 1..=64"),
            (&["--n", "-1"], "unexpected argument '-1'"),
            (&["--n", "x"], "invalid digit"),
            (&["--share", "1.5"], "1.5 is not in 0.0..=1.0"),
            (&["--share", "NaN"], "NaN is not in 0.0..=1.0"),
            (&["--share", "half"], "`half` is not a number"),
            (&["--shares", "1"], "similar argument exists: '--share'"),
        ] {
            let e = parse_from::<Flags, _>(bad).unwrap_err().to_string();
            assert!(e.contains(complaint), "{bad:?}: {e}");
        }
    }
}
