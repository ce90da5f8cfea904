//! Clock sync: the client keeps its tick ahead of the server's by the
//! one-way trip plus a margin for jitter, so its input for tick T reaches
//! the server just before the server runs T (lightyear and Netcode for
//! Entities do the same).
//!
//! Every upstream datagram carries the client's clock in milliseconds
//! ([`ClockSync::timestamp`]); the server echoes the newest one in its
//! snapshots with the ticks it held it ([`crate::codec::TimeSync`]). The
//! round trip is `now - echo - hold`, smoothed as TCP does (RFC 6298:
//! `srtt`, `rttvar`). From the newest snapshot tick the client estimates
//! the server's tick now (`snapshot tick + rtt / 2`) and aims at
//! `server now + rtt / 2 + margin`, with `margin = margin_ticks + jitter_factor * rttvar`.
//! It runs its fixed step a little faster or slower (at most
//! [`ClockConfig::max_speed_change`]) to close the gap smoothly, and jumps
//! only when it is off by more than [`ClockConfig::snap_ticks`].

use std::time::Duration;

use crate::codec::TimeSync;
use crate::tick::{next_tick, tick_diff};

/// How the client clock chases the server's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockConfig {
    /// Fixed steps per second, the server's tick rate (default 60).
    pub tick_hz: f64,
    /// Ticks of lead beyond the one-way trip (default 1).
    pub margin_ticks: f64,
    /// How many round-trip deviations of extra lead cover jitter (default 2).
    pub jitter_factor: f64,
    /// Largest change of the step rate, as a fraction (default 0.1: 10 %
    /// faster or slower).
    pub max_speed_change: f64,
    /// An error beyond this many ticks jumps instead of drifting (default
    /// 10).
    pub snap_ticks: f64,
}

impl Default for ClockConfig {
    fn default() -> Self {
        ClockConfig { tick_hz: 60.0, margin_ticks: 1.0, jitter_factor: 2.0, max_speed_change: 0.1, snap_ticks: 10.0 }
    }
}

/// The client's clock. See the [module docs](self).
///
/// ```
/// use std::time::Duration;
/// use ecs_replication::clock::{ClockConfig, ClockSync};
/// use ecs_replication::codec::TimeSync;
///
/// let mut clock = ClockSync::new(ClockConfig::default());
/// let dt = Duration::from_secs_f64(1.0 / 60.0);
/// assert_eq!(clock.advance(dt), 0); // no snapshot yet: no ticks
/// let sent = clock.timestamp();
/// for _ in 0..6 {
///     clock.advance(dt); // 100 ms later the echo comes back
/// }
/// clock.on_snapshot(500, Some(TimeSync { echo: sent, hold: 0, lead: 0 }));
/// assert!((clock.rtt().unwrap().as_secs_f64() - 0.1).abs() < 0.002);
/// let ran = clock.advance(dt);
/// assert_eq!(ran, 1);
/// // rtt/2 + margin ahead of the server's estimated tick now (504): the
/// // first sample sets the deviation to rtt/2 (RFC 6298), so the margin
/// // starts wide (1 + 2 x 3 ticks) and narrows as samples agree.
/// assert_eq!(clock.tick(), 514);
/// ```
#[derive(Clone, Debug)]
pub struct ClockSync {
    config: ClockConfig,
    /// Local time in milliseconds since the clock was made.
    now_ms: f64,
    srtt_ms: Option<f64>,
    rttvar_ms: f64,
    /// Server ticks, unwrapped: the newest snapshot tick seen, as a count.
    server_tick: Option<(u32, f64)>,
    /// Estimated `server ticks - local ticks` (local ticks: `now_ms` in
    /// ticks).
    offset: Option<f64>,
    /// The client's newest simulated tick (0: none yet) and the fraction of
    /// the next one that has elapsed.
    tick: u32,
    fraction: f64,
    /// Ticks moved by jumps, and how often.
    jumps: u64,
    last_error: f64,
}

impl ClockSync {
    /// A clock that has not heard from the server.
    pub fn new(config: ClockConfig) -> ClockSync {
        ClockSync {
            config,
            now_ms: 0.0,
            srtt_ms: None,
            rttvar_ms: 0.0,
            server_tick: None,
            offset: None,
            tick: 0,
            fraction: 0.0,
            jumps: 0,
            last_error: 0.0,
        }
    }

    /// The configuration.
    pub fn config(&self) -> ClockConfig {
        self.config
    }

    fn tick_ms(&self) -> f64 {
        1000.0 / self.config.tick_hz
    }

    /// The local clock as sent upstream (ms, wraps at 2^16).
    pub fn timestamp(&self) -> u16 {
        (self.now_ms as u64 & 0xffff) as u16
    }

    /// The smoothed round-trip time, once measured.
    pub fn rtt(&self) -> Option<Duration> {
        self.srtt_ms.map(|ms| Duration::from_secs_f64(ms.max(0.0) / 1000.0))
    }

    /// The round-trip deviation (jitter), once measured.
    pub fn jitter(&self) -> Duration {
        Duration::from_secs_f64(self.rttvar_ms.max(0.0) / 1000.0)
    }

    /// The client's newest simulated tick (0 before the first).
    pub fn tick(&self) -> u32 {
        self.tick
    }

    /// Times the clock jumped instead of drifting.
    pub fn jumps(&self) -> u64 {
        self.jumps
    }

    /// The latest error (target minus client tick), in ticks.
    pub fn error_ticks(&self) -> f64 {
        self.last_error
    }

    /// Takes the tick of a newly applied snapshot and its time sync block.
    pub fn on_snapshot(&mut self, tick: u32, sync: Option<TimeSync>) {
        if let Some(sync) = sync {
            let elapsed = (self.timestamp().wrapping_sub(sync.echo)) as f64;
            let sample = (elapsed - sync.hold as f64 * self.tick_ms()).max(0.0);
            match self.srtt_ms {
                None => {
                    self.srtt_ms = Some(sample);
                    self.rttvar_ms = sample / 2.0;
                }
                Some(srtt) => {
                    self.rttvar_ms = 0.75 * self.rttvar_ms + 0.25 * (srtt - sample).abs();
                    self.srtt_ms = Some(0.875 * srtt + 0.125 * sample);
                }
            }
        }
        let unwrapped = match self.server_tick {
            None => tick as f64,
            Some((last, count)) => count + tick_diff(tick, last) as f64,
        };
        if self.server_tick.is_some_and(|(_, count)| unwrapped <= count) {
            return;
        }
        self.server_tick = Some((tick, unwrapped));
        let one_way = self.srtt_ms.unwrap_or(0.0) / 2.0 / self.tick_ms();
        let sample = unwrapped + one_way - self.now_ms / self.tick_ms();
        self.offset = Some(match self.offset {
            None => sample,
            // Late snapshots (jitter) pull down; smooth, but follow a
            // higher estimate faster (it is the less delayed one).
            Some(o) if sample > o => o + (sample - o) * 0.5,
            Some(o) => o + (sample - o) * 0.05,
        });
    }

    /// The server's tick now, estimated (unwrapped count, fractional).
    fn server_now(&self) -> Option<f64> {
        Some(self.now_ms / self.tick_ms() + self.offset?)
    }

    /// The tick the client should be at now, in the unwrapped count; none
    /// before the first round trip is measured (a guess would start the
    /// client too far behind, and it would catch up slowly).
    fn target(&self) -> Option<f64> {
        let tick_ms = self.tick_ms();
        let one_way = self.srtt_ms? / 2.0 / tick_ms;
        let margin = self.config.margin_ticks + self.config.jitter_factor * self.rttvar_ms / tick_ms;
        Some(self.server_now()? + one_way + margin)
    }

    /// The tick remote entities are rendered at: the snapshot tick that
    /// should be arriving now (the server's tick now minus the one-way
    /// trip) minus `delay_ticks` of buffer, fractional and wrapping as
    /// ticks do. It moves with the local clock, not with packet arrival,
    /// so rendering stays smooth when packets bunch up. `None` before the
    /// first round trip is measured.
    pub fn interpolation_tick(&self, delay_ticks: f64) -> Option<f64> {
        let (tick, count) = self.server_tick?;
        let one_way = self.srtt_ms? / 2.0 / self.tick_ms();
        Some(tick as f64 + (self.server_now()? - one_way - delay_ticks - count))
    }

    /// The server tick the client estimates now, fractional; `None` before the first snapshot.
    /// Wraps as ticks do.
    pub fn server_tick_estimate(&self) -> Option<f64> {
        let (tick, count) = self.server_tick?;
        let ahead = self.server_now()? - count;
        Some(tick as f64 + ahead)
    }

    /// Advances the local clock by `dt` and returns how many fixed steps the
    /// client runs now (0 before the first snapshot that echoes one of its
    /// timestamps): the caller runs the
    /// steps for ticks `tick() - n + 1 ..= tick()` in order. A jump (the
    /// first sync, or an error beyond [`ClockConfig::snap_ticks`]) moves
    /// [`ClockSync::tick`] at once and returns 1, for the new tick (forward:
    /// ticks in between are skipped; backward: ticks run again).
    pub fn advance(&mut self, dt: Duration) -> u32 {
        self.now_ms += dt.as_secs_f64() * 1000.0;
        let Some(target) = self.target() else { return 0 };
        let (server_tick, count) = self.server_tick.expect("a target needs a server tick");
        // The client's tick in the unwrapped count.
        let current = if self.tick == 0 { f64::NEG_INFINITY } else { count + tick_diff(self.tick, server_tick) as f64 };
        let error = target - (current + self.fraction);
        self.last_error = if error.is_finite() { error } else { 0.0 };
        if !error.is_finite() || error.abs() > self.config.snap_ticks {
            // Jump: the next step is the target's tick.
            let to = target.floor();
            let tick = server_tick.wrapping_add((to - count) as i64 as u32);
            self.tick = tick.max(1);
            self.fraction = 0.0;
            self.jumps += 1;
            return 1;
        }
        let speed = 1.0 + (error * 0.1).clamp(-self.config.max_speed_change, self.config.max_speed_change);
        self.fraction += dt.as_secs_f64() * self.config.tick_hz * speed;
        let steps = self.fraction.floor().max(0.0);
        self.fraction -= steps;
        for _ in 0..steps as u32 {
            self.tick = next_tick(self.tick);
        }
        steps as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client and a server ticking at 60 Hz, `one_way` ticks apart each
    /// way: the client's inputs should arrive about `margin` ticks early.
    fn lead_after(one_way: u32, seconds: u32) -> (f64, ClockSync) {
        let dt = Duration::from_secs_f64(1.0 / 60.0);
        let mut clock = ClockSync::new(ClockConfig::default());
        let mut server_tick = 1000u32;
        // (arrival frame, timestamp, client tick) upstream and (arrival
        // frame, server tick, echo) downstream.
        let mut up: Vec<(u32, u16, u32)> = Vec::new();
        let mut down: Vec<(u32, u32, Option<u16>)> = Vec::new();
        let mut echo = None;
        let mut leads = Vec::new();
        for frame in 0..seconds * 60 {
            server_tick += 1;
            for (_, stamp, client_tick) in up.iter().filter(|u| u.0 == frame) {
                echo = Some(*stamp);
                if *client_tick != 0 {
                    leads.push(tick_diff(*client_tick, server_tick) as f64);
                }
            }
            down.push((frame + one_way, server_tick, echo));
            for (_, tick, echo) in down.iter().filter(|d| d.0 == frame) {
                clock.on_snapshot(*tick, echo.map(|e| TimeSync { echo: e, hold: 0, lead: 0 }));
            }
            let steps = clock.advance(dt);
            if steps > 0 {
                up.push((frame + one_way, clock.timestamp(), clock.tick()));
            } else {
                up.push((frame + one_way, clock.timestamp(), 0));
            }
        }
        let tail = &leads[leads.len() - 60..];
        (tail.iter().sum::<f64>() / tail.len() as f64, clock)
    }

    #[test]
    fn inputs_arrive_a_margin_early() {
        for one_way in [1, 3, 6, 15] {
            let (lead, clock) = lead_after(one_way, 10);
            let rtt = clock.rtt().unwrap().as_secs_f64() * 60.0;
            // Upstream datagrams leave at the end of a frame and are read at
            // the start of the one they arrive in: a tick less that way.
            assert!((rtt - (2 * one_way - 1) as f64).abs() <= 0.5, "rtt {rtt} ticks for one way {one_way}");
            // Lead: the margin (1 tick + 2 deviations), give or take a tick.
            assert!((0.0..=3.5).contains(&lead), "lead {lead} ticks at one way {one_way}");
        }
    }

    #[test]
    fn the_clock_jumps_only_when_far_off_and_survives_the_wrap() {
        let dt = Duration::from_secs_f64(1.0 / 60.0);
        let mut clock = ClockSync::new(ClockConfig::default());
        let mut tick = u32::MAX - 100;
        for _ in 0..400 {
            tick = next_tick(tick);
            clock.on_snapshot(tick, Some(TimeSync { echo: clock.timestamp(), hold: 0, lead: 0 }));
            clock.advance(dt);
        }
        // One jump at the start, then drift.
        assert_eq!(clock.jumps(), 1);
        let ahead = tick_diff(clock.tick(), tick);
        assert!((0..=3).contains(&ahead), "{ahead}");
        // The server restarts 1000 ticks later: one more jump.
        for _ in 0..10 {
            tick = tick.wrapping_add(1000).max(1);
            clock.on_snapshot(tick, Some(TimeSync { echo: clock.timestamp(), hold: 0, lead: 0 }));
            clock.advance(dt);
        }
        assert!(clock.jumps() >= 2);
    }
}
