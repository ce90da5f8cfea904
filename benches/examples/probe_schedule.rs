//! Schedules with many conflicting systems, ours against bevy_ecs: the
//! first run of a schedule (which builds it) and a frame once built.
//!
//! `cargo run --release -p ecs-bench --features peers --example probe_schedule [filter]`
//!
//! - `build`: `n` systems that all write one resource (every pair
//!   conflicts, none is ordered), the first run of a new schedule, for `n`
//!   of 250, 500 and 1000.
//! - `frame`: `n` systems writing one shared resource and `n` systems each
//!   writing a resource of its own, on each app's multi-threaded executor,
//!   one run of the built schedule.
//!
//! Each case times the two in turns (medians of the runs).

use std::time::Instant;

use ecs_bench::scenes::replication::median;

#[derive(bevy_ecs::resource::Resource, Default)]
struct Shared(u64);

/// One resource per free system (`Own<K>` for `K` in `0..FREE_KINDS`).
#[derive(bevy_ecs::resource::Resource, Default)]
struct Own<const K: usize>(u64);

/// Kinds of [`Own`]: the free systems of the `frame` case cycle through
/// them, so the free systems conflict in groups of `n / FREE_KINDS`.
const FREE_KINDS: usize = 16;

fn ours_world() -> ecs_core::World {
    let mut world = ecs_core::World::new();
    world.insert_resource(Shared::default());
    macro_rules! own {
        ($($k:literal)*) => { $( world.insert_resource(Own::<$k>::default()); )* };
    }
    own!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
    world
}

fn bevy_world() -> bevy_ecs::world::World {
    let mut world = bevy_ecs::world::World::new();
    world.insert_resource(Shared::default());
    macro_rules! own {
        ($($k:literal)*) => { $( world.insert_resource(Own::<$k>::default()); )* };
    }
    own!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
    world
}

/// Adds free system `i` (writing `Own<i % FREE_KINDS>`) to either schedule.
macro_rules! add_free {
    ($schedule:expr, $i:expr, $res:ident) => {
        match $i % FREE_KINDS {
            0 => $schedule.add_systems(|mut r: $res<Own<0>>| r.0 += 1),
            1 => $schedule.add_systems(|mut r: $res<Own<1>>| r.0 += 1),
            2 => $schedule.add_systems(|mut r: $res<Own<2>>| r.0 += 1),
            3 => $schedule.add_systems(|mut r: $res<Own<3>>| r.0 += 1),
            4 => $schedule.add_systems(|mut r: $res<Own<4>>| r.0 += 1),
            5 => $schedule.add_systems(|mut r: $res<Own<5>>| r.0 += 1),
            6 => $schedule.add_systems(|mut r: $res<Own<6>>| r.0 += 1),
            7 => $schedule.add_systems(|mut r: $res<Own<7>>| r.0 += 1),
            8 => $schedule.add_systems(|mut r: $res<Own<8>>| r.0 += 1),
            9 => $schedule.add_systems(|mut r: $res<Own<9>>| r.0 += 1),
            10 => $schedule.add_systems(|mut r: $res<Own<10>>| r.0 += 1),
            11 => $schedule.add_systems(|mut r: $res<Own<11>>| r.0 += 1),
            12 => $schedule.add_systems(|mut r: $res<Own<12>>| r.0 += 1),
            13 => $schedule.add_systems(|mut r: $res<Own<13>>| r.0 += 1),
            14 => $schedule.add_systems(|mut r: $res<Own<14>>| r.0 += 1),
            _ => $schedule.add_systems(|mut r: $res<Own<15>>| r.0 += 1),
        }
    };
}

fn ours_schedule(shared: usize, free: usize) -> ecs_core::Schedule {
    use ecs_core::ResMut;
    let mut schedule = ecs_core::Schedule::new();
    schedule.set_executor(ecs_core::schedule::ExecutorKind::MultiThreaded);
    for _ in 0..shared {
        schedule.add_systems(|mut r: ResMut<Shared>| r.0 += 1);
    }
    for i in 0..free {
        add_free!(schedule, i, ResMut);
    }
    schedule
}

fn bevy_schedule(shared: usize, free: usize) -> bevy_ecs::schedule::Schedule {
    use bevy_ecs::system::ResMut;
    let mut schedule = bevy_ecs::schedule::Schedule::default();
    for _ in 0..shared {
        schedule.add_systems(|mut r: ResMut<Shared>| r.0 += 1);
    }
    for i in 0..free {
        add_free!(schedule, i, ResMut);
    }
    schedule
}

/// The first run of a new schedule of `n` systems writing one resource.
fn build(n: usize, runs: usize) {
    let mut ours = Vec::new();
    let mut bevy = Vec::new();
    for _ in 0..runs {
        let mut world = ours_world();
        let mut schedule = ours_schedule(n, 0);
        let t = Instant::now();
        schedule.run(&mut world).expect("the schedule builds");
        ours.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(world.resource::<Shared>().map(|s| s.0), Some(n as u64));

        let mut world = bevy_world();
        let mut schedule = bevy_schedule(n, 0);
        let t = Instant::now();
        schedule.run(&mut world);
        bevy.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(world.resource::<Shared>().0, n as u64);
    }
    let (o, b) = (median(&ours), median(&bevy));
    println!("build, {n} systems writing one resource: ours {o:.2} ms, bevy {b:.2} ms, {:.2}x", o / b);
}

/// A frame of `n` systems on one shared resource and `n` on their own.
fn frame(n: usize, frames: usize) {
    let mut ours_world = ours_world();
    let mut ours = ours_schedule(n, n);
    let mut bevy_world = bevy_world();
    let mut bevy = bevy_schedule(n, n);
    ours.run(&mut ours_world).expect("the schedule builds");
    bevy.run(&mut bevy_world);
    let (mut o, mut b) = (Vec::new(), Vec::new());
    for _ in 0..frames {
        let t = Instant::now();
        ours.run(&mut ours_world).expect("built");
        o.push(t.elapsed().as_secs_f64() * 1e6);
        let t = Instant::now();
        bevy.run(&mut bevy_world);
        b.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let runs = frames as u64 + 1;
    assert_eq!(ours_world.resource::<Shared>().map(|s| s.0), Some(n as u64 * runs));
    assert_eq!(bevy_world.resource::<Shared>().0, n as u64 * runs);
    let (o, b) = (median(&o), median(&b));
    println!(
        "frame, {n} systems on one resource + {n} in {FREE_KINDS} groups: ours {o:.0} us, bevy {b:.0} us, {:.2}x",
        o / b
    );
}

fn main() {
    let filter = std::env::args().nth(1).unwrap_or_default();
    if "build".contains(filter.as_str()) {
        for n in [250, 500, 1000] {
            build(n, 5);
        }
    }
    if "frame".contains(filter.as_str()) {
        for n in [50, 200] {
            frame(n, 200);
        }
    }
}
