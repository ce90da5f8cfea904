//! Fallible systems: a system function may return [`Result`] and use `?`.
//!
//! A system returning `Err` stops where it returned; what it wrote before
//! stays written, and its commands still apply (as they would after an
//! early `return`). The error is recorded with the system's name: a
//! [`Schedule`](crate::Schedule) lists it in
//! [`Schedule::failed_systems`](crate::Schedule::failed_systems) until its
//! next run, and an [`App`](crate::App) hands it to its error handler (see
//! [`App::set_error_handler`](crate::App::set_error_handler)).
//!
//! ```
//! use ecs_core::QuerySingleError;
//! use ecs_core::prelude::*;
//!
//! #[derive(Component)]
//! struct Player;
//! #[derive(Component)]
//! struct Health(u32);
//!
//! fn heal(mut q: Query<&mut Health, With<Player>>) -> Result {
//!     let mut health = q.single_mut()?; // an error when there is no player
//!     health.0 = health.0.checked_add(10).ok_or("health overflow")?;
//!     Ok(())
//! }
//!
//! let mut world = World::new();
//! let mut schedule = Schedule::new();
//! schedule.add_systems(heal);
//! schedule.run(&mut world).unwrap(); // runs; `heal` returns an error
//! let failed = schedule.failed_systems();
//! assert_eq!(failed.len(), 1);
//! assert!(failed[0].system.ends_with("heal"));
//! assert!(failed[0].error.downcast_ref::<QuerySingleError>().is_some());
//!
//! world.spawn((Player, Health(90)));
//! schedule.run(&mut world).unwrap();
//! assert!(schedule.failed_systems().is_empty());
//! ```

use std::error::Error;
use std::fmt;
use std::sync::Arc;

/// What a system returns: `Result` alone is `Result<(), SystemError>`, and
/// `?` turns any error type (and `&str` or `String` messages) into a
/// [`SystemError`]. `Result<T, E>` with both given is the usual result.
pub type Result<T = (), E = SystemError> = std::result::Result<T, E>;

/// The error a fallible system returned: any error type, or a message.
/// Cheap to clone (shared); compare two by their messages.
///
/// ```
/// use ecs_core::SystemError;
///
/// let error = SystemError::from("no player");
/// assert_eq!(error.to_string(), "no player");
/// let parsed: SystemError = "x".parse::<u32>().unwrap_err().into();
/// assert!(parsed.downcast_ref::<std::num::ParseIntError>().is_some());
/// ```
#[derive(Clone)]
pub struct SystemError(Arc<dyn Error + Send + Sync + 'static>);

impl SystemError {
    /// The error, as the system gave it.
    pub fn inner(&self) -> &(dyn Error + Send + Sync + 'static) {
        &*self.0
    }

    /// The error as type `E`, if it is one.
    pub fn downcast_ref<E: Error + 'static>(&self) -> Option<&E> {
        self.0.downcast_ref::<E>()
    }
}

/// Any error type, `&str` or `String` (whatever `Box<dyn Error>` takes).
/// `SystemError` is not itself an [`Error`], so this does not overlap the
/// conversion of a value into itself.
impl<E> From<E> for SystemError
where
    Box<dyn Error + Send + Sync + 'static>: From<E>,
{
    fn from(error: E) -> Self {
        let boxed: Box<dyn Error + Send + Sync + 'static> = error.into();
        SystemError(Arc::from(boxed))
    }
}

impl fmt::Display for SystemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl fmt::Debug for SystemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

/// Equal when the messages are (the error types need not be comparable).
impl PartialEq for SystemError {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.to_string() == other.to_string()
    }
}

impl Eq for SystemError {}

/// What a system function may return: `()` (it cannot fail) or a
/// [`Result`] whose error converts into a [`SystemError`].
pub trait SystemOutput: 'static {
    /// The outcome, as a [`Result`].
    fn into_result(self) -> Result;
}

impl SystemOutput for () {
    #[inline]
    fn into_result(self) -> Result {
        Ok(())
    }
}

impl<E: Into<SystemError> + 'static> SystemOutput for std::result::Result<(), E> {
    #[inline]
    fn into_result(self) -> Result {
        self.map_err(Into::into)
    }
}

/// What a run condition function may return: `bool`, or a
/// `Result<bool, E>` whose error converts into a [`SystemError`]. A
/// condition that returns an error says no to the systems it guards
/// (whatever [`not`](crate::schedule::not), `and` or `or` around it would
/// make of it) and the error is recorded with the condition's name, as a
/// failed system's is.
pub trait ConditionOutput: 'static {
    /// The outcome, as a [`Result`].
    fn into_condition_result(self) -> Result<bool>;
}

impl ConditionOutput for bool {
    #[inline]
    fn into_condition_result(self) -> Result<bool> {
        Ok(self)
    }
}

impl<E: Into<SystemError> + 'static> ConditionOutput for std::result::Result<bool, E> {
    #[inline]
    fn into_condition_result(self) -> Result<bool> {
        self.map_err(Into::into)
    }
}

/// How the name of a failed run condition starts in a [`FailedSystem`].
pub(crate) const CONDITION_PREFIX: &str = "run condition ";

/// A failed system's name as messages spell it: `system NAME`, or the name
/// alone for a run condition (already `run condition NAME`).
pub(crate) struct Subject<'a>(pub(crate) &'a str);

impl fmt::Display for Subject<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.starts_with(CONDITION_PREFIX) { f.write_str(self.0) } else { write!(f, "system {}", self.0) }
    }
}

/// A system (or a run condition) that returned an error in a schedule's
/// latest run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailedSystem {
    /// The system's name; a run condition's is spelled `run condition NAME`.
    pub system: String,
    /// What it returned.
    pub error: SystemError,
}

impl fmt::Display for FailedSystem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", Subject(&self.system), self.error)
    }
}
