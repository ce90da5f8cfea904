//! Where the `skip` scenario's scattered cases spend their time, ours
//! against bevy_ecs: the scenario's consumer (`Changed<Pos>` rows read
//! `Pos` and write `Matrix`) split into its read side (the same rows, `Pos`
//! summed, nothing written) and, for ours, its filter alone (the passing
//! rows counted), on the scenario's stride pattern and on movers drawn at
//! random. bevy_ecs's counting pass is timed and checked too but not
//! printed: it read about twice its reading pass (81 against 36-44 us), so
//! it does not isolate bevy's filter.
//!
//! `cargo run --release -p ecs-bench --features peers --example probe_skip`
//!
//! 100k `(Pos, Matrix)` entities as in the scenario; before every timed
//! pass an untimed writer moves the same movers (`get_mut`) and advances
//! the tick. The two stores run in turns (medians of the runs); every pass
//! checks that both saw exactly the movers.

use std::time::Instant;

use ecs_bench::scenes::replication::median;
use ecs_bench::scenes::spatial::SplitMix64;
use glam::{Mat4, Vec3};

#[derive(ecs_core::Component, bevy_ecs::component::Component, Clone, Copy)]
struct Pos(Vec3);
#[derive(ecs_core::Component, bevy_ecs::component::Component, Clone, Copy)]
struct Matrix(Mat4);

const ENTITIES: usize = 100_000;
const RUNS: usize = 301;

/// What a timed pass does with the rows whose `Pos` changed.
#[derive(Clone, Copy, PartialEq)]
enum Pass {
    /// Writes `Matrix` from `Pos` (the scenario's consumer).
    Full,
    /// Sums `Pos.x` (the consumer's reads alone).
    Read,
    /// Counts the rows (the filter alone).
    Count,
}

struct Ours {
    world: ecs_core::World,
    movers: Vec<ecs_core::Entity>,
    full: ecs_core::QueryState<(&'static Pos, &'static mut Matrix), (ecs_core::Changed<Pos>,)>,
    read: ecs_core::QueryState<(&'static Pos,), (ecs_core::Changed<Pos>,)>,
}

struct Bevy {
    world: bevy_ecs::world::World,
    movers: Vec<bevy_ecs::entity::Entity>,
    full: bevy_ecs::query::QueryState<(&'static Pos, &'static mut Matrix), bevy_ecs::query::Changed<Pos>>,
    read: bevy_ecs::query::QueryState<&'static Pos, bevy_ecs::query::Changed<Pos>>,
}

fn start(i: usize) -> Vec3 {
    Vec3::new(i as f32, 0.0, 1.0)
}

impl Ours {
    fn new(movers: &[usize]) -> Self {
        let mut world = ecs_core::World::new();
        let entities =
            world.spawn_batch((0..ENTITIES).map(|i| (Pos(start(i)), Matrix(Mat4::from_translation(start(i))))));
        let full = world.query_filtered::<(&Pos, &mut Matrix), (ecs_core::Changed<Pos>,)>();
        let read = world.query_filtered::<(&Pos,), (ecs_core::Changed<Pos>,)>();
        Self { world, movers: movers.iter().map(|&i| entities[i]).collect(), full, read }
    }

    fn write(&mut self) {
        for &e in &self.movers {
            if let Ok(mut p) = self.world.get_mut::<Pos>(e) {
                p.0.x += 1.0;
            }
        }
        self.world.increment_change_tick();
    }

    /// Rows seen and the sum of their `Pos.x`.
    fn pass(&mut self, pass: Pass) -> (usize, f64) {
        let (mut rows, mut sum) = (0, 0.0);
        match pass {
            Pass::Full => self.full.for_each_mut(&mut self.world, |(p, mut m)| {
                m.0 = Mat4::from_translation(p.0);
                rows += 1;
            }),
            Pass::Read => self.read.for_each(&self.world, |(p,)| {
                sum += f64::from(p.0.x);
                rows += 1;
            }),
            Pass::Count => self.read.for_each(&self.world, |_| rows += 1),
        }
        (rows, sum)
    }
}

impl Bevy {
    fn new(movers: &[usize]) -> Self {
        let mut world = bevy_ecs::world::World::new();
        let entities: Vec<_> = world
            .spawn_batch((0..ENTITIES).map(|i| (Pos(start(i)), Matrix(Mat4::from_translation(start(i))))))
            .collect();
        let full = world.query_filtered::<(&Pos, &mut Matrix), bevy_ecs::query::Changed<Pos>>();
        let read = world.query_filtered::<&Pos, bevy_ecs::query::Changed<Pos>>();
        Self { world, movers: movers.iter().map(|&i| entities[i]).collect(), full, read }
    }

    fn write(&mut self) {
        self.world.clear_trackers();
        for &e in &self.movers {
            if let Some(mut p) = self.world.get_mut::<Pos>(e) {
                p.0.x += 1.0;
            }
        }
    }

    fn pass(&mut self, pass: Pass) -> (usize, f64) {
        let (mut rows, mut sum) = (0, 0.0);
        match pass {
            Pass::Full => self.full.iter_mut(&mut self.world).for_each(|(p, mut m)| {
                m.0 = Mat4::from_translation(p.0);
                rows += 1;
            }),
            Pass::Read => self.read.iter(&self.world).for_each(|p| {
                sum += f64::from(p.0.x);
                rows += 1;
            }),
            Pass::Count => self.read.iter(&self.world).for_each(|_| rows += 1),
        }
        (rows, sum)
    }
}

/// Medians (µs) of ours and bevy's pass, in turns.
fn measure(movers: &[usize], pass: Pass) -> (f64, f64) {
    let (mut ours, mut bevy) = (Ours::new(movers), Bevy::new(movers));
    let (mut to, mut tb) = (Vec::with_capacity(RUNS), Vec::with_capacity(RUNS));
    for run in 0..RUNS + 2 {
        ours.write();
        let t = Instant::now();
        let o = ours.pass(pass);
        let ot = t.elapsed().as_secs_f64() * 1e6;
        bevy.write();
        let t = Instant::now();
        let b = bevy.pass(pass);
        let bt = t.elapsed().as_secs_f64() * 1e6;
        // The first pass sees every row (all were added): not timed.
        if run >= 2 {
            assert_eq!(o, b, "both saw the same rows");
            assert_eq!(o.0, movers.len(), "exactly the movers");
            to.push(ot);
            tb.push(bt);
        }
    }
    (median(&to), median(&tb))
}

fn main() {
    let filter = std::env::args().nth(1).unwrap_or_default();
    println!("{:<34} {:>10} {:>10} {:>10}", "case (us, medians)", "ours", "bevy", "ours/bevy");
    for percent in [1, 5, 10] {
        let count = ENTITIES * percent / 100;
        let stride: Vec<usize> = (0..ENTITIES).step_by(100 / percent).take(count).collect();
        let mut rng = SplitMix64::new(0x5C47_7E4E_D000 + percent as u64);
        let mut random: Vec<usize> = (0..ENTITIES).collect();
        for i in 0..count {
            let j = i + rng.below((ENTITIES - i) as u32) as usize;
            random.swap(i, j);
        }
        random.truncate(count);
        random.sort_unstable();
        for (layout, movers) in [("stride", &stride), ("random", &random)] {
            for (name, pass) in [("full", Pass::Full), ("read", Pass::Read), ("count", Pass::Count)] {
                let case = format!("{percent} % {layout}, {name}");
                if !case.contains(filter.as_str()) {
                    continue;
                }
                let (o, b) = measure(movers, pass);
                if pass == Pass::Count {
                    println!("{case:<34} {o:>10.1} {:>10} {:>10}", "-", "-");
                } else {
                    println!("{case:<34} {o:>10.1} {b:>10.1} {:>9.2}x", o / b);
                }
            }
        }
    }
}
