//! The `main` every example binary shares: flags in, exit code out.

use std::fmt::Display;
use std::io::Write as _;
use std::process::ExitCode;

/// Parses the process arguments with `parse` (`Ok(None)` asks for `help`),
/// runs `run` on the options, and maps the outcome to an exit code: 0 for
/// success or `--help`, 2 for bad flags (after the error and the help text),
/// 1 when the run fails. Errors go to stderr prefixed with `name`.
pub fn main_with<O, E: Display>(
    name: &str,
    help: &str,
    parse: impl FnOnce(std::iter::Skip<std::env::Args>) -> Result<Option<O>, String>,
    run: impl FnOnce(&O) -> Result<(), E>,
) -> ExitCode {
    exit_code(name, help, parse(std::env::args().skip(1)), run)
}

/// [`main_with`] after parsing, for tests: what the binary prints and returns.
pub fn exit_code<O, E: Display>(
    name: &str,
    help: &str,
    parsed: Result<Option<O>, String>,
    run: impl FnOnce(&O) -> Result<(), E>,
) -> ExitCode {
    match parsed {
        Ok(None) => {
            // A closed pipe (`--help | head`) is not an error of ours.
            let _ = writeln!(std::io::stdout(), "{help}");
            ExitCode::SUCCESS
        }
        Ok(Some(options)) => match run(&options) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{name}: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            eprintln!("{name}: {e}\n\n{help}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_map_to_exit_codes() {
        let ran = |o: &u32| if *o == 7 { Ok(()) } else { Err("boom") };
        assert_eq!(exit_code("t", "help", Ok(Some(7)), ran), ExitCode::SUCCESS);
        assert_eq!(exit_code("t", "help", Ok(Some(8)), ran), ExitCode::FAILURE);
        assert_eq!(exit_code("t", "help", Ok(None), ran), ExitCode::SUCCESS);
        assert_eq!(exit_code("t", "help", Err("bad flag".into()), ran), ExitCode::from(2));
    }
}
