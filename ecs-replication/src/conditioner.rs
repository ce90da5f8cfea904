//! An in-process link conditioner for tests and benches: one direction of a
//! link that loses, delays, reorders, duplicates and corrupts datagrams,
//! deterministically from a seed. Time is counted in ticks, not read from a
//! clock, so runs repeat exactly.

/// What the link does to datagrams.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkConfig {
    /// Chance a datagram is dropped (0.0 to 1.0).
    pub loss: f64,
    /// Ticks every datagram waits.
    pub delay: u32,
    /// Extra random wait, 0 to `jitter` ticks: datagrams overtake each other.
    pub jitter: u32,
    /// Chance a datagram arrives twice.
    pub duplicate: f64,
    /// Chance one random bit of a datagram is flipped.
    pub corrupt: f64,
}

impl LinkConfig {
    /// A perfect link with `delay` ticks of latency.
    pub fn clean(delay: u32) -> Self {
        LinkConfig { loss: 0.0, delay, jitter: 0, duplicate: 0.0, corrupt: 0.0 }
    }
}

impl Default for LinkConfig {
    fn default() -> Self {
        Self::clean(0)
    }
}

/// Counters of a conditioned link.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Datagrams handed to the link.
    pub sent: u64,
    /// Datagrams dropped.
    pub lost: u64,
    /// Extra copies made.
    pub duplicated: u64,
    /// Datagrams with a flipped bit.
    pub corrupted: u64,
    /// Bytes handed to the link.
    pub bytes_sent: u64,
}

/// One direction of a conditioned link.
///
/// ```
/// use ecs_replication::conditioner::{Conditioner, LinkConfig};
/// let mut link = Conditioner::new(LinkConfig::clean(2), 1);
/// link.send(0, b"hello");
/// let mut out = Vec::new();
/// link.receive(1, &mut out);
/// assert!(out.is_empty());
/// link.receive(2, &mut out);
/// assert_eq!(out, vec![b"hello".to_vec()]);
/// ```
#[derive(Clone, Debug)]
pub struct Conditioner {
    config: LinkConfig,
    rng: u64,
    sequence: u64,
    queue: Vec<(u64, u64, Vec<u8>)>,
    stats: LinkStats,
}

impl Conditioner {
    /// A link with `config`, its randomness from `seed`.
    pub fn new(config: LinkConfig, seed: u64) -> Self {
        Conditioner {
            config,
            rng: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            sequence: 0,
            queue: Vec::new(),
            stats: LinkStats::default(),
        }
    }

    /// Changes what the link does from now on (datagrams in flight keep
    /// their arrival time).
    pub fn set_config(&mut self, config: LinkConfig) {
        self.config = config;
    }

    /// The configuration.
    pub fn config(&self) -> LinkConfig {
        self.config
    }

    /// The counters.
    pub fn stats(&self) -> LinkStats {
        self.stats
    }

    /// Datagrams in flight.
    pub fn in_flight(&self) -> usize {
        self.queue.len()
    }

    fn next(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    /// Sends a datagram at tick `now`.
    pub fn send(&mut self, now: u64, bytes: &[u8]) {
        self.stats.sent += 1;
        self.stats.bytes_sent += bytes.len() as u64;
        if self.chance(self.config.loss) {
            self.stats.lost += 1;
            return;
        }
        let copies = if self.chance(self.config.duplicate) {
            self.stats.duplicated += 1;
            2
        } else {
            1
        };
        for _ in 0..copies {
            let mut data = bytes.to_vec();
            if !data.is_empty() && self.chance(self.config.corrupt) {
                let bit = (self.next() % (data.len() as u64 * 8)) as usize;
                data[bit / 8] ^= 1 << (bit % 8);
                self.stats.corrupted += 1;
            }
            let jitter = if self.config.jitter > 0 { self.next() % (self.config.jitter as u64 + 1) } else { 0 };
            let due = now + self.config.delay as u64 + jitter;
            self.sequence += 1;
            self.queue.push((due, self.sequence, data));
        }
    }

    /// Moves every datagram due by tick `now` into `out`, in arrival order.
    pub fn receive(&mut self, now: u64, out: &mut Vec<Vec<u8>>) {
        let mut due: Vec<(u64, u64, Vec<u8>)> = Vec::new();
        let mut i = 0;
        while i < self.queue.len() {
            if self.queue[i].0 <= now {
                due.push(self.queue.swap_remove(i));
            } else {
                i += 1;
            }
        }
        due.sort_unstable_by_key(|(t, s, _)| (*t, *s));
        out.extend(due.into_iter().map(|(_, _, d)| d));
    }
}
