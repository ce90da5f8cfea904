//! A small, dependency-free timing harness shared by the CLI.
//!
//! Each *sample* times a batch of iterations and divides by the batch size, so
//! cases far below the timer's resolution (a few hundred nanoseconds) are still
//! measured accurately; the reported figure is the median over all samples, in
//! microseconds. Work that must not be timed (the change-detection writer, for
//! instance) goes into a per-iteration setup closure, see [`measure_with_setup`].

use std::hint::black_box;
use std::time::{Duration, Instant};

/// How long to warm up and how many samples to take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Wall-clock time spent running the case untimed before sampling.
    pub warmup: Duration,
    /// Number of samples; the median of these is reported.
    pub samples: usize,
    /// Minimum wall-clock time of one sample; short iterations are batched up to it.
    pub min_sample_time: Duration,
    /// Upper bound on the wall-clock time of the sampling phase, per
    /// implementation measured; fewer samples are taken (at least 5) when a
    /// case is slower than expected.
    pub max_total_time: Duration,
}

impl Config {
    /// The default configuration: about one to two seconds per case.
    pub const fn full() -> Self {
        Self {
            warmup: Duration::from_millis(300),
            samples: 60,
            min_sample_time: Duration::from_millis(10),
            max_total_time: Duration::from_secs(4),
        }
    }

    /// A fast configuration (`--quick`): well under a second per case, so a
    /// whole scenario with peers takes some 5-20 s.
    pub const fn quick() -> Self {
        Self {
            warmup: Duration::from_millis(150),
            samples: 25,
            min_sample_time: Duration::from_millis(4),
            max_total_time: Duration::from_millis(1500),
        }
    }
}

/// The result of measuring one case.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Measurement {
    /// Median time of one iteration, in microseconds.
    #[serde(with = "crate::row::figure")]
    pub median_us: f64,
    /// Fastest sample (per iteration), in microseconds.
    #[serde(with = "crate::row::figure", default = "crate::row::figure::missing")]
    pub min_us: f64,
    /// Slowest sample (per iteration), in microseconds.
    #[serde(with = "crate::row::figure", default = "crate::row::figure::missing")]
    pub max_us: f64,
    /// Number of samples taken.
    #[serde(default)]
    pub samples: usize,
    /// Number of iterations per sample (the last batch size used).
    #[serde(default)]
    pub iters_per_sample: u64,
}

impl Measurement {
    fn from_samples(mut per_iter_us: Vec<f64>, iters_per_sample: u64) -> Self {
        per_iter_us.sort_by(f64::total_cmp);
        let n = per_iter_us.len();
        let median_us = if n == 0 {
            f64::NAN
        } else if n % 2 == 1 {
            per_iter_us[n / 2]
        } else {
            (per_iter_us[n / 2 - 1] + per_iter_us[n / 2]) / 2.0
        };
        Self {
            median_us,
            min_us: per_iter_us.first().copied().unwrap_or(f64::NAN),
            max_us: per_iter_us.last().copied().unwrap_or(f64::NAN),
            samples: n,
            iters_per_sample,
        }
    }
}

fn as_us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Something that can be warmed up and sampled; see [`measure_interleaved`].
pub trait Sampler {
    /// Runs the case untimed for [`Config::warmup`] (and calibrates batch sizes).
    fn warm_up(&mut self, cfg: &Config);

    /// Takes one sample: returns the time of one iteration in microseconds
    /// (averaged over the sample's batch) and the batch size.
    fn sample(&mut self, cfg: &Config) -> (f64, u64);
}

/// A [`Sampler`] for a routine without setup: batches of back-to-back
/// iterations, the timer read once per batch.
pub struct Batched<R: FnMut()> {
    routine: R,
    batch: u64,
}

impl<R: FnMut()> Batched<R> {
    /// Wraps `routine`, which runs one iteration (one frame) of a case.
    pub fn new(routine: R) -> Self {
        Self { routine, batch: 1 }
    }
}

impl<R: FnMut()> Sampler for Batched<R> {
    fn warm_up(&mut self, cfg: &Config) {
        let start = Instant::now();
        let mut iters: u64 = 0;
        loop {
            (self.routine)();
            iters += 1;
            if start.elapsed() >= cfg.warmup {
                break;
            }
        }
        let per_iter = start.elapsed().as_secs_f64() / iters as f64;
        self.batch = ((cfg.min_sample_time.as_secs_f64() / per_iter.max(1e-9)).ceil() as u64).max(1);
    }

    fn sample(&mut self, _cfg: &Config) -> (f64, u64) {
        let start = Instant::now();
        for _ in 0..self.batch {
            (self.routine)();
        }
        (as_us(start.elapsed()) / self.batch as f64, self.batch)
    }
}

/// A [`Sampler`] with an untimed per-iteration setup.
///
/// Both closures receive the same mutable state. Each iteration runs
/// `setup(state)` untimed, then times `routine(state)` on its own; a sample
/// accumulates the routine's time over as many iterations as fit into
/// [`Config::min_sample_time`] of wall-clock time (setup included) and divides
/// by their number. The clock is read twice per iteration, so some 20-50 ns of
/// timer overhead are included in each figure.
pub struct WithSetup<'a, S, U, R> {
    state: &'a mut S,
    setup: U,
    routine: R,
}

impl<'a, S, U, R, O> WithSetup<'a, S, U, R>
where
    U: FnMut(&mut S),
    R: FnMut(&mut S) -> O,
{
    /// Wraps `state`, the untimed `setup` and the timed `routine`.
    pub fn new(state: &'a mut S, setup: U, routine: R) -> Self {
        Self { state, setup, routine }
    }
}

impl<S, U, R, O> Sampler for WithSetup<'_, S, U, R>
where
    U: FnMut(&mut S),
    R: FnMut(&mut S) -> O,
{
    fn warm_up(&mut self, cfg: &Config) {
        let start = Instant::now();
        loop {
            (self.setup)(self.state);
            black_box((self.routine)(self.state));
            if start.elapsed() >= cfg.warmup {
                break;
            }
        }
    }

    fn sample(&mut self, cfg: &Config) -> (f64, u64) {
        let wall = Instant::now();
        let mut timed = Duration::ZERO;
        let mut iters: u64 = 0;
        loop {
            (self.setup)(self.state);
            let start = Instant::now();
            black_box((self.routine)(self.state));
            timed += start.elapsed();
            iters += 1;
            if wall.elapsed() >= cfg.min_sample_time {
                break;
            }
        }
        (as_us(timed) / iters as f64, iters)
    }
}

/// Measures several samplers of one case *interleaved*: after each one's
/// warm-up, samples are taken round-robin (one from each per round), so slow
/// drifts of the machine (other processes, frequency changes) affect every
/// implementation alike and the ratios stay meaningful. Returns one
/// [`Measurement`] per sampler, in order.
pub fn measure_interleaved(cfg: &Config, samplers: &mut [&mut dyn Sampler]) -> Vec<Measurement> {
    for s in samplers.iter_mut() {
        s.warm_up(cfg);
    }
    let mut samples: Vec<Vec<f64>> = vec![Vec::with_capacity(cfg.samples); samplers.len()];
    let mut batches = vec![0; samplers.len()];
    let budget = cfg.max_total_time * samplers.len().max(1) as u32;
    let phase = Instant::now();
    for round in 0..cfg.samples {
        for (i, s) in samplers.iter_mut().enumerate() {
            let (us, batch) = s.sample(cfg);
            samples[i].push(us);
            batches[i] = batch;
        }
        if round + 1 >= 5 && phase.elapsed() >= budget {
            break;
        }
    }
    samples.into_iter().zip(batches).map(|(s, b)| Measurement::from_samples(s, b)).collect()
}

/// Measures one [`Sampler`]: warm-up, then [`Config::samples`] samples (fewer,
/// but at least 5, if [`Config::max_total_time`] runs out).
pub fn measure_sampler(cfg: &Config, sampler: &mut dyn Sampler) -> Measurement {
    measure_interleaved(cfg, &mut [sampler]).remove(0)
}

/// Measures `routine`, which runs one iteration (one frame) of a case; see
/// [`Batched`].
pub fn measure<R: FnMut()>(cfg: &Config, routine: R) -> Measurement {
    measure_sampler(cfg, &mut Batched::new(routine))
}

/// Measures `routine` with an untimed `setup` before every iteration; see
/// [`WithSetup`].
pub fn measure_with_setup<S, U, R, O>(cfg: &Config, state: &mut S, setup: U, routine: R) -> Measurement
where
    U: FnMut(&mut S),
    R: FnMut(&mut S) -> O,
{
    measure_sampler(cfg, &mut WithSetup::new(state, setup, routine))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even() {
        let m = Measurement::from_samples(vec![3.0, 1.0, 2.0], 1);
        assert_eq!(m.median_us, 2.0);
        let m = Measurement::from_samples(vec![4.0, 1.0, 2.0, 3.0], 1);
        assert_eq!(m.median_us, 2.5);
        assert_eq!(m.min_us, 1.0);
        assert_eq!(m.max_us, 4.0);
    }

    #[test]
    fn measures_something() {
        let cfg = Config {
            warmup: Duration::from_millis(5),
            samples: 5,
            min_sample_time: Duration::from_micros(200),
            max_total_time: Duration::from_millis(50),
        };
        let m = measure(&cfg, || {
            black_box((0..100u64).sum::<u64>());
        });
        assert!(m.median_us.is_finite() && m.median_us >= 0.0);
        let mut n = 0u32;
        let m = measure_with_setup(&cfg, &mut n, |n| *n += 1, |n| *n * 2);
        assert!(m.median_us.is_finite());
        assert!(n > 0);
        let (mut a, mut b) = (0u64, 0u64);
        let ms = measure_interleaved(&cfg, &mut [&mut Batched::new(|| a += 1), &mut Batched::new(|| b += 2)]);
        assert_eq!(ms.len(), 2);
        assert!(ms.iter().all(|m| m.samples >= 5));
    }
}
