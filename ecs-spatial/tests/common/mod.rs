//! What the integration tests share: a deterministic point generator.
#![allow(dead_code, reason = "each test crate uses a part of it")]

use glam::Vec3;

/// SplitMix64, for deterministic point sets.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Below `n` (not exactly uniform; fine for tests).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// A standard normal value (Box-Muller).
    pub fn gaussian(&mut self) -> f32 {
        let (u, v) = (self.unit().max(1e-7), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f32::consts::TAU * v).cos()
    }

    /// A standard normal vector.
    pub fn gauss3(&mut self) -> Vec3 {
        Vec3::new(self.gaussian(), self.gaussian(), self.gaussian())
    }

    /// Uniform in the box `[0, side)^3`.
    pub fn in_box(&mut self, side: f32) -> Vec3 {
        Vec3::new(self.unit(), self.unit(), self.unit()) * side
    }

    /// Multiples of 1/4 in [-40, 40), so cell borders (cell 4) are hit often.
    pub fn coord(&mut self) -> f32 {
        (self.below(320) as f32 - 160.0) * 0.25
    }

    /// A point of three [`Rng::coord`]s.
    pub fn point(&mut self) -> Vec3 {
        Vec3::new(self.coord(), self.coord(), self.coord())
    }
}
