//! Time: the clocks an [`App`](super::App) drives each frame, and the fixed
//! step.
//!
//! Before the first schedule of each frame the app reads its clock
//! ([`TimeUpdateStrategy`]: the real clock by default, or a fixed duration
//! per frame for tests and replays) and advances three clocks:
//!
//! - [`Time<Real>`]: the raw frame time, never paused, scaled or clamped.
//! - [`Time<Virtual>`]: game time. The raw delta is first clamped to
//!   [`Time::max_delta`] (default 50 ms, so a stall, a breakpoint or a
//!   dragged window does not explode the simulation), then multiplied by the
//!   relative speed, and is zero while paused.
//! - [`Time<Fixed>`]: the fixed step. Virtual time accumulates; each whole
//!   step in the accumulator runs the fixed schedules once
//!   ([`FixedUpdate`](super::FixedUpdate) and its neighbours), at most
//!   [`Time::max_steps_per_frame`] times per frame. What is left over, less
//!   than one step, is the overstep: [`Time::overstep_fraction`] says how
//!   far the frame is between two steps, for interpolation.
//!
//! Systems read [`Time`] (that is, `Time<()>`): a copy of the virtual clock
//! in every schedule, and of the fixed clock inside the fixed schedules, so
//! one `time.delta_secs()` is right in both places.
//!
//! ```
//! use std::time::Duration;
//! use ecs_core::prelude::*;
//!
//! #[derive(Default)]
//! struct Steps(u32);
//! let mut app = App::new();
//! app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(25)))
//!     .insert_resource(Time::<Fixed>::from_hz(100.0))
//!     .init_resource::<Steps>()
//!     .add_systems(FixedUpdate, |mut s: ResMut<Steps>, time: Res<Time>| {
//!         assert_eq!(time.delta(), Duration::from_millis(10));
//!         s.0 += 1;
//!     });
//! app.run_frames(4); // 100 ms of frames at 100 Hz
//! assert_eq!(app.world().resource::<Steps>().unwrap().0, 10);
//! let fixed = app.world().resource::<Time<Fixed>>().unwrap();
//! assert_eq!(fixed.overstep(), Duration::ZERO);
//! ```

use std::time::{Duration, Instant};

use crate::system::Res;

/// A clock: the time since it started, the latest step, and how many steps
/// it took. `T` is the kind ([`Real`], [`Virtual`], [`Fixed`]) and holds
/// what is particular to it; `Time<()>` ([`Time`]) is what systems read
/// (see the [module docs](self)).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Time<T: Default = ()> {
    context: T,
    delta: Duration,
    delta_secs: f32,
    delta_secs_f64: f64,
    elapsed: Duration,
    elapsed_secs: f32,
    elapsed_secs_f64: f64,
    counter: u64,
}

impl<T: Default> Time<T> {
    /// A clock at zero with this context.
    pub fn new_with(context: T) -> Self {
        Time { context, ..Default::default() }
    }

    /// Advances the clock by `delta` (one step).
    pub fn advance_by(&mut self, delta: Duration) {
        self.delta = delta;
        self.delta_secs = delta.as_secs_f32();
        self.delta_secs_f64 = delta.as_secs_f64();
        self.elapsed += delta;
        self.elapsed_secs = self.elapsed.as_secs_f32();
        self.elapsed_secs_f64 = self.elapsed.as_secs_f64();
        self.counter += 1;
    }

    /// The latest step.
    pub fn delta(&self) -> Duration {
        self.delta
    }

    /// The latest step in seconds.
    pub fn delta_secs(&self) -> f32 {
        self.delta_secs
    }

    /// The latest step in seconds, as `f64`.
    pub fn delta_secs_f64(&self) -> f64 {
        self.delta_secs_f64
    }

    /// Time since the clock started (the sum of its steps).
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }

    /// [`Time::elapsed`] in seconds (`f32` loses precision after hours: use
    /// [`Time::elapsed_secs_f64`] for long runs).
    pub fn elapsed_secs(&self) -> f32 {
        self.elapsed_secs
    }

    /// [`Time::elapsed`] in seconds, as `f64`.
    pub fn elapsed_secs_f64(&self) -> f64 {
        self.elapsed_secs_f64
    }

    /// How many steps the clock took: frames for real and virtual time,
    /// fixed steps for fixed time (so inside `FixedUpdate`, [`Time`]
    /// counts fixed steps).
    pub fn frame_count(&self) -> u64 {
        self.counter
    }

    /// What is particular to this kind of clock.
    pub fn context(&self) -> &T {
        &self.context
    }

    /// What is particular to this kind of clock, mutably.
    pub fn context_mut(&mut self) -> &mut T {
        &mut self.context
    }

    /// A plain copy of the clock's figures, as systems read it.
    pub fn as_generic(&self) -> Time<()> {
        Time {
            context: (),
            delta: self.delta,
            delta_secs: self.delta_secs,
            delta_secs_f64: self.delta_secs_f64,
            elapsed: self.elapsed,
            elapsed_secs: self.elapsed_secs,
            elapsed_secs_f64: self.elapsed_secs_f64,
            counter: self.counter,
        }
    }
}

/// Real time: the raw frame time, never paused, scaled or clamped.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Real {
    last_update: Option<Instant>,
}

impl Time<Real> {
    /// Advances to `now` (the first call advances by zero).
    pub fn update_with_instant(&mut self, now: Instant) {
        let delta = self.context.last_update.map_or(Duration::ZERO, |last| now.saturating_duration_since(last));
        self.context.last_update = Some(now);
        self.advance_by(delta);
    }

    /// The instant of the latest [`Time::update_with_instant`].
    pub fn last_update(&self) -> Option<Instant> {
        self.context.last_update
    }
}

/// Game time: clamped, scaled and pausable (see the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Virtual {
    max_delta: Duration,
    paused: bool,
    relative_speed: f64,
}

impl Default for Virtual {
    fn default() -> Self {
        Virtual { max_delta: Time::<Virtual>::DEFAULT_MAX_DELTA, paused: false, relative_speed: 1.0 }
    }
}

impl Time<Virtual> {
    /// The default largest raw step a frame counts: 50 ms.
    pub const DEFAULT_MAX_DELTA: Duration = Duration::from_millis(50);

    /// Advances by one frame of raw time `raw`: clamped to the maximum
    /// delta, scaled by the relative speed, zero while paused.
    pub fn advance_with_raw_delta(&mut self, raw: Duration) {
        let delta = if self.context.paused {
            Duration::ZERO
        } else {
            raw.min(self.context.max_delta).mul_f64(self.context.relative_speed)
        };
        self.advance_by(delta);
    }

    /// The largest raw step one frame counts (longer frames are cut to it).
    pub fn max_delta(&self) -> Duration {
        self.context.max_delta
    }

    /// Sets the largest raw step one frame counts.
    ///
    /// # Panics
    /// If `max_delta` is zero.
    pub fn set_max_delta(&mut self, max_delta: Duration) {
        assert!(!max_delta.is_zero(), "the maximum delta must be positive");
        self.context.max_delta = max_delta;
    }

    /// Stops game time: frames advance it by zero until [`Time::unpause`].
    pub fn pause(&mut self) {
        self.context.paused = true;
    }

    /// Lets game time run again.
    pub fn unpause(&mut self) {
        self.context.paused = false;
    }

    /// Whether game time is paused.
    pub fn is_paused(&self) -> bool {
        self.context.paused
    }

    /// How fast game time runs against real time (1.0: as fast).
    pub fn relative_speed(&self) -> f64 {
        self.context.relative_speed
    }

    /// Sets how fast game time runs against real time.
    ///
    /// # Panics
    /// If `speed` is negative or not finite.
    pub fn set_relative_speed(&mut self, speed: f64) {
        assert!(speed.is_finite() && speed >= 0.0, "the relative speed must be finite and not negative");
        self.context.relative_speed = speed;
    }

    /// The speed game time runs at now: 0 while paused, else the relative
    /// speed.
    pub fn effective_speed(&self) -> f64 {
        if self.context.paused { 0.0 } else { self.context.relative_speed }
    }
}

/// The fixed step (see the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fixed {
    timestep: Duration,
    overstep: Duration,
    max_steps_per_frame: u32,
    steps_this_frame: u32,
    discarded: Duration,
}

impl Default for Fixed {
    fn default() -> Self {
        Fixed {
            timestep: Time::<Fixed>::DEFAULT_TIMESTEP,
            overstep: Duration::ZERO,
            max_steps_per_frame: Time::<Fixed>::DEFAULT_MAX_STEPS_PER_FRAME,
            steps_this_frame: 0,
            discarded: Duration::ZERO,
        }
    }
}

/// The fixed clock: `Time<Fixed>`.
pub type FixedTime = Time<Fixed>;

impl Time<Fixed> {
    /// The default step: 1/60 s.
    pub const DEFAULT_TIMESTEP: Duration = Duration::from_nanos(16_666_667);
    /// The default cap on steps per frame.
    pub const DEFAULT_MAX_STEPS_PER_FRAME: u32 = 16;

    /// A fixed clock of `hz` steps per second.
    ///
    /// # Panics
    /// If `hz` is not positive and finite.
    pub fn from_hz(hz: f64) -> Self {
        assert!(hz.is_finite() && hz > 0.0, "the fixed rate must be positive and finite");
        Self::from_duration(Duration::from_secs_f64(1.0 / hz))
    }

    /// A fixed clock of steps of `seconds`.
    ///
    /// # Panics
    /// If `seconds` is not positive and finite.
    pub fn from_seconds(seconds: f64) -> Self {
        assert!(seconds.is_finite() && seconds > 0.0, "the fixed step must be positive and finite");
        Self::from_duration(Duration::from_secs_f64(seconds))
    }

    /// A fixed clock of steps of `timestep`.
    ///
    /// # Panics
    /// If `timestep` is zero.
    pub fn from_duration(timestep: Duration) -> Self {
        let mut time = Self::default();
        time.set_timestep(timestep);
        time
    }

    /// The step.
    pub fn timestep(&self) -> Duration {
        self.context.timestep
    }

    /// Sets the step.
    ///
    /// # Panics
    /// If `timestep` is zero.
    pub fn set_timestep(&mut self, timestep: Duration) {
        assert!(!timestep.is_zero(), "the fixed step must be positive");
        self.context.timestep = timestep;
    }

    /// The time accumulated but not yet stepped (less than one step after a
    /// frame's steps).
    pub fn overstep(&self) -> Duration {
        self.context.overstep
    }

    /// [`Time::overstep`] as a fraction of the step, in `[0, 1)`: how far
    /// rendering is between the latest step and the next, to interpolate.
    pub fn overstep_fraction(&self) -> f32 {
        self.overstep_fraction_f64() as f32
    }

    /// [`Time::overstep_fraction`] as `f64`.
    pub fn overstep_fraction_f64(&self) -> f64 {
        self.context.overstep.as_secs_f64() / self.context.timestep.as_secs_f64()
    }

    /// The most steps one frame runs; whole steps beyond it are dropped
    /// (see [`Time::discarded`]).
    pub fn max_steps_per_frame(&self) -> u32 {
        self.context.max_steps_per_frame
    }

    /// Sets the most steps one frame runs.
    ///
    /// # Panics
    /// If `steps` is zero.
    pub fn set_max_steps_per_frame(&mut self, steps: u32) {
        assert!(steps > 0, "at least one fixed step per frame");
        self.context.max_steps_per_frame = steps;
    }

    /// How many steps the latest frame ran.
    pub fn steps_this_frame(&self) -> u32 {
        self.context.steps_this_frame
    }

    /// Virtual time dropped so far because a frame held more whole steps
    /// than [`Time::max_steps_per_frame`].
    pub fn discarded(&self) -> Duration {
        self.context.discarded
    }

    /// Adds a frame's virtual time to the accumulator.
    pub(crate) fn accumulate(&mut self, delta: Duration) {
        self.context.overstep += delta;
        self.context.steps_this_frame = 0;
    }

    /// Takes one step out of the accumulator if a whole one is there and
    /// the frame's cap allows; when the cap stops it, drops the whole steps
    /// left.
    pub(crate) fn expend(&mut self) -> bool {
        let step = self.context.timestep;
        if self.context.overstep < step {
            return false;
        }
        if self.context.steps_this_frame >= self.context.max_steps_per_frame {
            let whole = self.context.overstep.as_nanos() / step.as_nanos();
            let dropped = step.saturating_mul(whole.min(u32::MAX as u128) as u32);
            self.context.overstep -= dropped;
            self.context.discarded += dropped;
            return false;
        }
        self.context.overstep -= step;
        self.context.steps_this_frame += 1;
        self.advance_by(step);
        true
    }
}

/// Where an [`App`](super::App) gets each frame's raw time from (a
/// resource; [`TimeUpdateStrategy::Automatic`] by default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimeUpdateStrategy {
    /// The real clock ([`Instant::now`]); the first frame advances by zero.
    #[default]
    Automatic,
    /// Every frame advances by exactly this much: deterministic, for tests,
    /// replays and servers stepping a simulation. Change it between frames
    /// for irregular frame times.
    ManualDuration(Duration),
    /// The next frame ends at this instant (the first frame advances by
    /// zero).
    ManualInstant(Instant),
}

/// Reads the frame's raw time and advances [`Time<Real>`],
/// [`Time<Virtual>`] and [`Time`].
pub(crate) fn update_time(world: &mut crate::world::World) {
    let strategy = world.resource::<TimeUpdateStrategy>().copied().unwrap_or_default();
    let raw = {
        let Some(real) = world.resource_mut::<Time<Real>>() else { return };
        match strategy {
            TimeUpdateStrategy::Automatic => real.update_with_instant(Instant::now()),
            TimeUpdateStrategy::ManualInstant(now) => real.update_with_instant(now),
            TimeUpdateStrategy::ManualDuration(delta) => real.advance_by(delta),
        }
        real.delta()
    };
    let generic = match world.resource_mut::<Time<Virtual>>() {
        Some(virt) => {
            virt.advance_with_raw_delta(raw);
            virt.as_generic()
        }
        None => return,
    };
    match world.resource_mut::<Time>() {
        Some(time) => *time = generic,
        None => {
            world.insert_resource(generic);
        }
    }
}

/// Whether a [`Timer`] runs once or repeats.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimerMode {
    /// Finishes once and stays finished.
    #[default]
    Once,
    /// Starts over each time it finishes.
    Repeating,
}

/// Counts time up to a duration: tick it with each frame's delta.
///
/// ```
/// use std::time::Duration;
/// use ecs_core::app::{Timer, TimerMode};
///
/// let mut serve = Timer::new(Duration::from_millis(500), TimerMode::Once);
/// serve.tick(Duration::from_millis(300));
/// assert!(!serve.finished());
/// serve.tick(Duration::from_millis(300));
/// assert!(serve.just_finished() && serve.finished());
/// serve.tick(Duration::from_millis(300));
/// assert!(!serve.just_finished() && serve.finished());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timer {
    duration: Duration,
    elapsed: Duration,
    mode: TimerMode,
    finished: bool,
    times_finished_this_tick: u32,
}

impl Timer {
    /// A timer of `duration`.
    pub fn new(duration: Duration, mode: TimerMode) -> Self {
        Timer { duration, mode, ..Default::default() }
    }

    /// A timer of `seconds`.
    pub fn from_seconds(seconds: f32, mode: TimerMode) -> Self {
        Self::new(Duration::from_secs_f32(seconds), mode)
    }

    /// Advances by `delta`.
    pub fn tick(&mut self, delta: Duration) -> &Self {
        self.times_finished_this_tick = 0;
        if self.mode == TimerMode::Once && self.finished {
            return self;
        }
        self.elapsed += delta;
        if self.elapsed >= self.duration {
            self.finished = true;
            match self.mode {
                TimerMode::Once => {
                    self.elapsed = self.duration;
                    self.times_finished_this_tick = 1;
                }
                TimerMode::Repeating if self.duration.is_zero() => {
                    self.elapsed = Duration::ZERO;
                    self.times_finished_this_tick = 1;
                }
                TimerMode::Repeating => {
                    let laps = self.elapsed.as_nanos() / self.duration.as_nanos();
                    self.times_finished_this_tick = laps.min(u32::MAX as u128) as u32;
                    let rest = self.elapsed.as_nanos() % self.duration.as_nanos();
                    self.elapsed = Duration::from_nanos(rest as u64);
                }
            }
        } else if self.mode == TimerMode::Repeating {
            self.finished = false;
        }
        self
    }

    /// Whether the timer finished (a repeating timer: in the latest tick).
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// Whether the latest tick finished it.
    pub fn just_finished(&self) -> bool {
        self.times_finished_this_tick > 0
    }

    /// How many times the latest tick finished it (a repeating timer can
    /// lap several times in one long tick).
    pub fn times_finished_this_tick(&self) -> u32 {
        self.times_finished_this_tick
    }

    /// Time counted toward the duration.
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }

    /// The duration.
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// The fraction of the duration counted, in `[0, 1]`.
    pub fn fraction(&self) -> f32 {
        if self.duration.is_zero() { 1.0 } else { (self.elapsed.as_secs_f64() / self.duration.as_secs_f64()) as f32 }
    }

    /// Starts over.
    pub fn reset(&mut self) {
        self.elapsed = Duration::ZERO;
        self.finished = false;
        self.times_finished_this_tick = 0;
    }
}

/// A run condition: true once every `period` of [`Time`] (the fixed time
/// inside `FixedUpdate`): a repeating [`Timer`] ticked by
/// the time's delta each evaluation. A frame that covers several periods
/// counts once.
///
/// ```
/// use std::time::Duration;
/// use ecs_core::prelude::*;
///
/// let mut app = App::new();
/// app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(50)))
///     .insert_resource(0u32)
///     .add_systems(Update, (|mut n: ResMut<u32>| *n += 1).run_if(on_timer(Duration::from_secs(1))));
/// app.run_frames(40); // 2 s of time
/// assert_eq!(app.world().resource::<u32>(), Some(&2));
/// ```
pub fn on_timer(period: Duration) -> impl FnMut(Res<Time>) -> bool {
    let mut timer = Timer::new(period, TimerMode::Repeating);
    move |time: Res<Time>| {
        timer.tick(time.delta());
        timer.just_finished()
    }
}
