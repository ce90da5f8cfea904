//! An interpolation buffer: the last few (tick, position, rotation)
//! samples per entity, sampled at a fractional render tick between them.

use std::collections::{HashMap, VecDeque};

use glam::{Quat, Vec3};

use crate::codec::NetId;
use crate::tick::tick_newer;

/// One received state of one entity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// The snapshot tick.
    pub tick: u32,
    /// Position at that tick.
    pub position: Vec3,
    /// Rotation at that tick.
    pub rotation: Quat,
}

/// Recent samples per entity, for rendering between snapshots (render a
/// little in the past, e.g. two ticks behind the newest, so a lost packet
/// is bridged).
///
/// ```
/// use ecs_replication::codec::NetId;
/// use ecs_replication::interpolation::InterpolationBuffer;
/// use glam::{Quat, Vec3};
/// let mut buffer = InterpolationBuffer::new(4);
/// buffer.push(NetId(1), 10, Vec3::ZERO, Quat::IDENTITY);
/// buffer.push(NetId(1), 12, Vec3::new(2.0, 0.0, 0.0), Quat::IDENTITY);
/// let (p, _) = buffer.sample(NetId(1), 11.0).unwrap();
/// assert!((p.x - 1.0).abs() < 1e-6);
/// assert_eq!(buffer.sample(NetId(1), 50.0).unwrap().0.x, 2.0); // holds the newest
/// assert!(buffer.sample(NetId(2), 11.0).is_none());
/// ```
#[derive(Clone, Debug, Default)]
pub struct InterpolationBuffer {
    capacity: usize,
    samples: HashMap<NetId, VecDeque<Sample>>,
}

impl InterpolationBuffer {
    /// Keeps up to `capacity` samples per entity (at least 2).
    pub fn new(capacity: usize) -> Self {
        InterpolationBuffer { capacity: capacity.max(2), samples: HashMap::new() }
    }

    /// Adds a sample; samples not newer than the newest held (in serial
    /// number order, [`crate::tick`]) are ignored.
    pub fn push(&mut self, net_id: NetId, tick: u32, position: Vec3, rotation: Quat) {
        let ring = self.samples.entry(net_id).or_default();
        if ring.back().is_some_and(|s| !tick_newer(tick, s.tick)) {
            return;
        }
        ring.push_back(Sample { tick, position, rotation });
        while ring.len() > self.capacity {
            ring.pop_front();
        }
    }

    /// The tick of an entity's newest sample.
    pub fn newest_tick(&self, net_id: NetId) -> Option<u32> {
        self.samples.get(&net_id)?.back().map(|s| s.tick)
    }

    /// Forgets an entity.
    pub fn remove(&mut self, net_id: NetId) {
        self.samples.remove(&net_id);
    }

    /// Entities with samples.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether no entity has samples.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// The state at fractional tick `tick` like [`InterpolationBuffer::sample`],
    /// but past the newest sample the position moves on along the last two
    /// samples' velocity for at most `max_extrapolation` ticks, then holds
    /// (the rotation holds at once). The flag says whether it extrapolated.
    ///
    /// ```
    /// use ecs_replication::codec::NetId;
    /// use ecs_replication::interpolation::InterpolationBuffer;
    /// use glam::{Quat, Vec3};
    /// let mut buffer = InterpolationBuffer::new(4);
    /// buffer.push(NetId(1), 10, Vec3::ZERO, Quat::IDENTITY);
    /// buffer.push(NetId(1), 11, Vec3::X, Quat::IDENTITY);
    /// assert_eq!(buffer.sample_capped(NetId(1), 12.0, 3.0).unwrap().0.x, 2.0);
    /// let (far, _, extrapolated) = buffer.sample_capped(NetId(1), 40.0, 3.0).unwrap();
    /// assert!(extrapolated && far.x == 4.0); // capped at 3 ticks past the newest
    /// ```
    pub fn sample_capped(&self, net_id: NetId, tick: f64, max_extrapolation: f64) -> Option<(Vec3, Quat, bool)> {
        let ring = self.samples.get(&net_id)?;
        let last = ring.back()?;
        let mut ahead = (tick - last.tick as f64).rem_euclid(4_294_967_296.0);
        if ahead >= 2_147_483_648.0 {
            ahead -= 4_294_967_296.0;
        }
        if !(ahead > 0.0 && ahead.is_finite() && ring.len() >= 2 && max_extrapolation > 0.0) {
            return self.sample(net_id, tick).map(|(p, q)| (p, q, false));
        }
        let before = ring[ring.len() - 2];
        let span = last.tick.wrapping_sub(before.tick) as f64;
        let velocity = (last.position - before.position) / span.max(1.0) as f32;
        let run = ahead.min(max_extrapolation) as f32;
        Some((last.position + velocity * run, last.rotation, true))
    }

    /// The state at fractional tick `tick`: linear between the samples
    /// around it, the oldest before them, the newest after them (no
    /// extrapolation).
    ///
    /// Ticks wrap ([`crate::tick`]): `tick` is taken modulo 2^32, as the
    /// value nearest the newest sample, so a render tick computed as e.g.
    /// `last_applied as f64 - 2.5` works across the wrap (-1.5 is
    /// `u32::MAX - 0.5`). A tick that is not finite gives the newest sample.
    pub fn sample(&self, net_id: NetId, tick: f64) -> Option<(Vec3, Quat)> {
        const TURN: f64 = 4_294_967_296.0; // 2^32
        let ring = self.samples.get(&net_id)?;
        let last = ring.back()?;
        // Everything relative to the newest sample: its offset is 0, older
        // samples' offsets are minus their age (ages fall along the ring).
        let offset = |s: &Sample| -(last.tick.wrapping_sub(s.tick) as f64);
        let mut at = (tick - last.tick as f64).rem_euclid(TURN);
        if !at.is_finite() {
            return Some((last.position, last.rotation));
        }
        if at >= TURN / 2.0 {
            at -= TURN;
        }
        let first = ring.front()?;
        if at <= offset(first) {
            return Some((first.position, first.rotation));
        }
        for (a, b) in ring.iter().zip(ring.iter().skip(1)) {
            let (oa, ob) = (offset(a), offset(b));
            if at <= ob {
                let t = ((at - oa) / (ob - oa)) as f32;
                return Some((a.position.lerp(b.position, t), a.rotation.slerp(b.rotation, t)));
            }
        }
        Some((last.position, last.rotation))
    }
}
