//! An interpolation buffer: the last few (tick, position, rotation)
//! samples per entity, sampled at a fractional render tick between them.

use std::collections::{HashMap, VecDeque};

use glam::{Quat, Vec3};

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
/// use ecs_replication::interpolation::InterpolationBuffer;
/// use glam::{Quat, Vec3};
/// let mut buffer = InterpolationBuffer::new(4);
/// buffer.push(1, 10, Vec3::ZERO, Quat::IDENTITY);
/// buffer.push(1, 12, Vec3::new(2.0, 0.0, 0.0), Quat::IDENTITY);
/// let (p, _) = buffer.sample(1, 11.0).unwrap();
/// assert!((p.x - 1.0).abs() < 1e-6);
/// assert_eq!(buffer.sample(1, 50.0).unwrap().0.x, 2.0); // holds the newest
/// assert!(buffer.sample(2, 11.0).is_none());
/// ```
#[derive(Clone, Debug, Default)]
pub struct InterpolationBuffer {
    capacity: usize,
    samples: HashMap<u64, VecDeque<Sample>>,
}

impl InterpolationBuffer {
    /// Keeps up to `capacity` samples per entity (at least 2).
    pub fn new(capacity: usize) -> Self {
        InterpolationBuffer { capacity: capacity.max(2), samples: HashMap::new() }
    }

    /// Adds a sample; samples not newer than the newest held are ignored.
    pub fn push(&mut self, net_id: u64, tick: u32, position: Vec3, rotation: Quat) {
        let ring = self.samples.entry(net_id).or_default();
        if ring.back().is_some_and(|s| s.tick >= tick) {
            return;
        }
        ring.push_back(Sample { tick, position, rotation });
        while ring.len() > self.capacity {
            ring.pop_front();
        }
    }

    /// Forgets an entity.
    pub fn remove(&mut self, net_id: u64) {
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

    /// The state at fractional tick `tick`: linear between the samples
    /// around it, the oldest before them, the newest after them (no
    /// extrapolation).
    pub fn sample(&self, net_id: u64, tick: f64) -> Option<(Vec3, Quat)> {
        let ring = self.samples.get(&net_id)?;
        let first = ring.front()?;
        if tick <= first.tick as f64 {
            return Some((first.position, first.rotation));
        }
        for pair in ring.iter().collect::<Vec<_>>().windows(2) {
            let (a, b) = (pair[0], pair[1]);
            if tick <= b.tick as f64 {
                let t = ((tick - a.tick as f64) / (b.tick as f64 - a.tick as f64)) as f32;
                return Some((a.position.lerp(b.position, t), a.rotation.slerp(b.rotation, t)));
            }
        }
        let last = ring.back()?;
        Some((last.position, last.rotation))
    }
}
