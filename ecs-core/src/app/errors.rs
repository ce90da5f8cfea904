//! What went wrong in a frame, and where it goes.
//!
//! An [`App`](super::App) collects, after each schedule it runs, every
//! problem the schedule's run met (and those of the schedules run inside
//! it, such as [`OnEnter`](super::OnEnter) or the fixed steps):
//! - a system that returned an error ([`fallible systems`](crate::system::output));
//! - a command that failed when applied (a stale entity and the like:
//!   nothing was changed for it);
//! - a system skipped because it could not run (a missing resource);
//! - an observer, hook command or one-shot command that failed
//!   ([`World::take_lifecycle_errors`](crate::World::take_lifecycle_errors));
//! - whatever a plugin reports through [`World::report_error`] (the
//!   transform plugin's refused hierarchy edits, for one).
//!
//! Each becomes an [`ErrorReport`] handed to the app's error handler, set
//! with [`App::set_error_handler`](super::App::set_error_handler). The
//! default, [`ErrorLog`], prints a report to standard error the first time
//! it sees its source and then only at the 10th, 100th, 1000th... repeat, so
//! a system failing every frame does not flood the log. [`panic_on_error`]
//! suits tests and development builds; [`ignore_error`] drops them.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use ecs_core::prelude::*;
//! use ecs_core::app::ErrorReport;
//!
//! struct Score(u32);
//! fn needs_score(score: Res<Score>) {}
//! fn despawn_stale(mut commands: Commands) {
//!     commands.despawn(Entity::from_parts(7, 3));
//! }
//! fn parse(mut out: Local<u32>) -> Result {
//!     *out = "not a number".parse()?;
//!     Ok(())
//! }
//!
//! let seen = Arc::new(Mutex::new(Vec::new()));
//! let sink = seen.clone();
//! let mut app = App::new();
//! app.add_systems(Update, (needs_score, despawn_stale, parse))
//!     .set_error_handler(move |report: &ErrorReport| sink.lock().unwrap().push(report.to_string()));
//! app.update();
//! let seen = seen.lock().unwrap();
//! assert_eq!(seen.len(), 3, "{seen:?}");
//! assert!(seen.iter().any(|m| m.contains("needs_score") && m.contains("Score")));
//! assert!(seen.iter().any(|m| m.contains("despawn_stale")));
//! assert!(seen.iter().any(|m| m.contains("parse") && m.contains("invalid digit")));
//! assert_eq!(app.errors_reported(), 3);
//! ```

use std::collections::HashMap;
use std::fmt;
use std::io::Write;

use crate::error::StoreError;
use crate::schedule::{CommandError, Schedule, ScheduleError, SkippedSystem};
use crate::system::output::Subject;
use crate::system::{FailedSystem, SystemError};
use crate::world::World;

/// One problem of a frame, with where it came from (see the
/// [module docs](self)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorReport {
    /// A system returned an error.
    System {
        /// The schedule's label, as `Debug` prints it.
        schedule: String,
        /// The system's name.
        system: String,
        /// What it returned.
        error: SystemError,
    },
    /// A command failed when applied; nothing was changed for it.
    Command {
        /// The schedule's label.
        schedule: String,
        /// The system that recorded the command.
        system: String,
        /// Why it failed.
        error: StoreError,
    },
    /// A system could not run (a missing resource or event type) and was
    /// skipped.
    Skipped {
        /// The schedule's label.
        schedule: String,
        /// The system's name.
        system: String,
        /// Why (names the missing type).
        error: ScheduleError,
    },
    /// A hook's command, an observer or a one-shot command failed (the
    /// message names it).
    Lifecycle(String),
    /// Reported by a plugin or by game code through
    /// [`World::report_error`].
    Other {
        /// Who reports it (a plugin's name, a subsystem).
        source: String,
        /// What went wrong.
        message: String,
    },
}

/// Error reports a [`World`] keeps at most until taken (the oldest are
/// dropped first); see [`World::take_error_reports`].
pub const DEFAULT_REPORT_LIMIT: usize = 1024;

impl World {
    /// Reports an error that is not a system's, a command's or an
    /// observer's: a plugin's own bookkeeping that refused something (the
    /// transform plugin reports hierarchy edits that would make a loop).
    /// An [`App`](super::App) hands it to its error handler after the
    /// schedule that reported it, as [`ErrorReport::Other`].
    ///
    /// ```
    /// use ecs_core::World;
    /// use ecs_core::app::ErrorReport;
    ///
    /// let mut world = World::new();
    /// world.report_error("save", "disk full");
    /// let reports = world.take_error_reports();
    /// assert_eq!(reports, vec![ErrorReport::Other { source: "save".into(), message: "disk full".into() }]);
    /// assert_eq!(reports[0].to_string(), "save: disk full");
    /// ```
    pub fn report_error(&mut self, source: impl Into<String>, message: impl fmt::Display) {
        self.error_reports.push(ErrorReport::Other { source: source.into(), message: message.to_string() });
    }

    /// Takes what went wrong in the schedules run through
    /// [`World::run_schedule`] (failed systems and commands, skipped
    /// systems) and what [`World::report_error`] reported, oldest first.
    /// An [`App`](super::App) takes them after each schedule of its frame;
    /// in a world no app runs, at most [`DEFAULT_REPORT_LIMIT`] wait (the
    /// oldest dropped first, counted by [`World::error_reports_dropped`]).
    ///
    /// ```
    /// use ecs_core::app::Schedules;
    /// use ecs_core::prelude::*;
    ///
    /// #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    /// struct Tools;
    /// impl ScheduleLabel for Tools {}
    ///
    /// fn fails() -> Result {
    ///     Err("no save file".into())
    /// }
    /// let mut world = World::new();
    /// let mut schedules = Schedules::new();
    /// schedules.entry(Tools).unwrap().add_systems(fails);
    /// world.insert_resource(schedules);
    /// world.run_schedule(Tools).unwrap();
    /// let reports = world.take_error_reports();
    /// assert_eq!(reports.len(), 1);
    /// assert!(reports[0].to_string().contains("no save file"));
    /// ```
    pub fn take_error_reports(&mut self) -> Vec<ErrorReport> {
        self.error_reports.take()
    }

    /// Error reports dropped to stay within [`DEFAULT_REPORT_LIMIT`] while
    /// nobody took them.
    pub fn error_reports_dropped(&self) -> u64 {
        self.error_reports.dropped()
    }
}

impl ErrorReport {
    /// The schedule the problem came from (`None` for lifecycle errors and
    /// other reports).
    pub fn schedule(&self) -> Option<&str> {
        self.origin().map(|(schedule, _)| schedule)
    }

    /// The system the problem came from (`None` for lifecycle errors and
    /// other reports).
    pub fn system(&self) -> Option<&str> {
        self.origin().map(|(_, system)| system)
    }

    /// The schedule and system of a report that has them.
    fn origin(&self) -> Option<(&str, &str)> {
        match self {
            ErrorReport::System { schedule, system, .. }
            | ErrorReport::Command { schedule, system, .. }
            | ErrorReport::Skipped { schedule, system, .. } => Some((schedule, system)),
            ErrorReport::Lifecycle(_) | ErrorReport::Other { .. } => None,
        }
    }

    /// The reports of a schedule's latest run: failed systems, failed
    /// commands, skipped systems.
    pub(crate) fn of_schedule(label: &str, schedule: &Schedule) -> impl Iterator<Item = ErrorReport> {
        let failed = schedule.failed_systems().iter().map(|FailedSystem { system, error }| ErrorReport::System {
            schedule: label.to_string(),
            system: system.clone(),
            error: error.clone(),
        });
        let commands = schedule.command_errors().iter().map(|CommandError { system, error }| ErrorReport::Command {
            schedule: label.to_string(),
            system: system.clone(),
            error: error.clone(),
        });
        let skipped = schedule.skipped_systems().iter().map(|SkippedSystem { system, error }| ErrorReport::Skipped {
            schedule: label.to_string(),
            system: system.clone(),
            error: error.clone(),
        });
        failed.chain(commands).chain(skipped)
    }

    /// What identifies the report's source for [`ErrorLog`]'s repeats: the
    /// kind, schedule and system (a lifecycle or other error: its source
    /// and message).
    fn source(&self) -> (u8, String, String) {
        match self {
            ErrorReport::System { schedule, system, .. } => (0, schedule.clone(), system.clone()),
            ErrorReport::Command { schedule, system, .. } => (1, schedule.clone(), system.clone()),
            ErrorReport::Skipped { schedule, system, .. } => (2, schedule.clone(), system.clone()),
            ErrorReport::Lifecycle(message) => (3, String::new(), message.clone()),
            ErrorReport::Other { source, message } => (4, source.clone(), message.clone()),
        }
    }
}

impl fmt::Display for ErrorReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorReport::System { schedule, system, error } => {
                write!(f, "schedule {schedule}: {} returned an error: {error}", Subject(system))
            }
            ErrorReport::Command { schedule, system, error } => {
                write!(f, "schedule {schedule}: a command of system {system} failed: {error}")
            }
            ErrorReport::Skipped { schedule, error, .. } => write!(f, "schedule {schedule}: skipped: {error}"),
            ErrorReport::Lifecycle(message) => write!(f, "lifecycle: {message}"),
            ErrorReport::Other { source, message } => write!(f, "{source}: {message}"),
        }
    }
}

/// An error handler that panics with the report (for tests and
/// development builds: the first problem stops the game where it shows).
///
/// ```should_panic
/// use ecs_core::prelude::*;
/// use ecs_core::app::panic_on_error;
///
/// fn fails() -> Result {
///     Err("boom".into())
/// }
/// let mut app = App::new();
/// app.add_systems(Update, fails).set_error_handler(panic_on_error);
/// app.update(); // panics: "... system ...fails returned an error: boom"
/// ```
pub fn panic_on_error(report: &ErrorReport) {
    panic!("{report}");
}

/// An error handler that drops every report ([`App::errors_reported`]
/// still counts them).
///
/// [`App::errors_reported`]: super::App::errors_reported
pub fn ignore_error(_report: &ErrorReport) {}

/// Sources remembered by an [`ErrorLog`] at most; a report from a source
/// past them is printed each time (never hidden), and not remembered.
pub const ERROR_LOG_SOURCES: usize = 1024;

/// The default error handler's log: prints a report the first time its
/// source (kind, schedule, system; a lifecycle error's message) is seen,
/// then at its 10th, 100th, 1000th... occurrence with the count, so a
/// system failing every frame shows once and then rarely. It remembers at
/// most [`ERROR_LOG_SOURCES`] sources.
///
/// ```
/// use ecs_core::app::{ErrorLog, ErrorReport};
///
/// let mut log = ErrorLog::default();
/// let report = ErrorReport::Lifecycle("observer on_hit: no resource Score".into());
/// let mut out = Vec::new();
/// for _ in 0..100 {
///     log.write(&report, &mut out).unwrap();
/// }
/// let text = String::from_utf8(out).unwrap();
/// assert_eq!(text.lines().count(), 3); // the 1st, 10th and 100th
/// assert!(text.lines().last().unwrap().contains("(100 times)"));
/// ```
#[derive(Debug, Default)]
pub struct ErrorLog {
    counts: HashMap<(u8, String, String), u64>,
}

impl ErrorLog {
    /// Counts `report` and writes it to `out` if its count is 1, 10, 100...
    /// (or its source is past the ones remembered).
    ///
    /// # Errors
    /// Those of `out`.
    pub fn write(&mut self, report: &ErrorReport, out: &mut impl Write) -> std::io::Result<()> {
        let source = report.source();
        let full = self.counts.len() >= ERROR_LOG_SOURCES;
        let count = match self.counts.get_mut(&source) {
            Some(count) => {
                *count += 1;
                *count
            }
            None => {
                if !full {
                    self.counts.insert(source, 1);
                }
                1
            }
        };
        if count == 1 {
            writeln!(out, "error: {report}")
        } else if is_power_of_ten(count) {
            writeln!(out, "error: {report} ({count} times)")
        } else {
            Ok(())
        }
    }

    /// Counts `report` and prints it to standard error as
    /// [`ErrorLog::write`] decides.
    pub fn report(&mut self, report: &ErrorReport) {
        // A closed standard error leaves nothing to tell.
        let _ = self.write(report, &mut std::io::stderr().lock());
    }
}

fn is_power_of_ten(mut n: u64) -> bool {
    while n >= 10 && n.is_multiple_of(10) {
        n /= 10;
    }
    n == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powers_of_ten() {
        let found: Vec<u64> = (1..=100_000).filter(|&n| is_power_of_ten(n)).collect();
        assert_eq!(found, vec![1, 10, 100, 1000, 10_000, 100_000]);
    }

    #[test]
    fn the_log_keeps_a_bounded_count_of_sources_and_never_hides_a_new_one() {
        let mut log = ErrorLog::default();
        let mut out = Vec::new();
        for k in 0..ERROR_LOG_SOURCES + 10 {
            let report = ErrorReport::Lifecycle(format!("error {k}"));
            log.write(&report, &mut out).unwrap();
            log.write(&report, &mut out).unwrap();
        }
        assert_eq!(log.counts.len(), ERROR_LOG_SOURCES);
        let text = String::from_utf8(out).unwrap();
        // Each remembered source printed once; each past them both times.
        assert_eq!(text.lines().count(), ERROR_LOG_SOURCES + 2 * 10);
    }
}
