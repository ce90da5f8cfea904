//! One entity at a time, ours against bevy_ecs: random `Query::get` and
//! `get_mut`, `World::get` and `get_mut`, and deferred spawns and
//! despawns through `Commands` (recorded, then applied).
//!
//! `cargo run --release -p ecs-bench --features peers --example probe_access [filter]`
//!
//! `get`: 10k entities of four components, 200k lookups in one random order
//! (the same for both). `commands`: 10k spawns of a two-component bundle
//! recorded into a command queue and applied, then 10k despawns the same
//! way. Each case times the two in turns (medians of the runs).

use std::time::Instant;

use ecs_bench::scenes::replication::median;

#[derive(ecs_core::Component, bevy_ecs::component::Component, Clone, Copy)]
struct P([f32; 3]);
#[derive(ecs_core::Component, bevy_ecs::component::Component, Clone, Copy)]
struct U(u32, #[allow(dead_code, reason = "a payload that gives the component its size")] u32);
#[derive(ecs_core::Component, bevy_ecs::component::Component, Clone, Copy)]
struct A(f32, #[allow(dead_code, reason = "a payload that gives the component its size")] f32);
#[derive(ecs_core::Component, bevy_ecs::component::Component, Clone, Copy)]
struct H(i64);
#[derive(ecs_core::Component, bevy_ecs::component::Component, Clone, Copy)]
struct V(#[allow(dead_code, reason = "a payload that gives the component its size")] [f32; 3]);

const ENTITIES: usize = 10_000;
const LOOKUPS: usize = 200_000;
const RUNS: usize = 15;

/// Prints one row: the medians and their ratio.
fn row(case: &str, ours: &[f64], bevy: &[f64]) {
    let (o, b) = (median(ours), median(bevy));
    println!("{case:<44} ours {o:>8.0} us   bevy {b:>8.0} us   {:.2}x", o / b);
}

fn get() {
    let mut ow = ecs_core::World::new();
    let oe: Vec<_> = (0..ENTITIES).map(|i| ow.spawn((P([i as f32; 3]), U(i as u32, 0), A(1.0, 2.0), H(5)))).collect();
    let mut bw = bevy_ecs::world::World::new();
    let be: Vec<_> =
        (0..ENTITIES).map(|i| bw.spawn((P([i as f32; 3]), U(i as u32, 0), A(1.0, 2.0), H(5))).id()).collect();
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let order: Vec<usize> = (0..LOOKUPS)
        .map(|_| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % ENTITIES as u64) as usize
        })
        .collect();
    let oq = ow.query::<(&P, &U, &A)>();
    let mut bq = bw.query::<(&P, &U, &A)>();
    let ohq = ow.query::<&mut H>();
    let mut bhq = bw.query::<&mut H>();
    let mut t = [(); 8].map(|()| Vec::with_capacity(RUNS));
    let (mut so, mut sb) = (0.0f64, 0.0f64);
    let time = |f: &mut dyn FnMut()| {
        let start = Instant::now();
        f();
        start.elapsed().as_secs_f64() * 1e6
    };
    for _ in 0..RUNS {
        t[0].push(time(&mut || {
            for &i in &order {
                if let Ok((p, u, a)) = oq.get(&ow, oe[i]) {
                    so += f64::from(p.0[0] + u.0 as f32 + a.0);
                }
            }
        }));
        t[1].push(time(&mut || {
            for &i in &order {
                if let Ok((p, u, a)) = bq.get(&bw, be[i]) {
                    sb += f64::from(p.0[0] + u.0 as f32 + a.0);
                }
            }
        }));
        t[2].push(time(&mut || {
            for &i in &order {
                if let Ok(mut h) = ohq.get_mut(&mut ow, oe[i]) {
                    h.0 += 1;
                }
            }
        }));
        t[3].push(time(&mut || {
            for &i in &order {
                if let Ok(mut h) = bhq.get_mut(&mut bw, be[i]) {
                    h.0 += 1;
                }
            }
        }));
        t[4].push(time(&mut || {
            for &i in &order {
                if let Ok(p) = ow.get::<P>(oe[i]) {
                    so += f64::from(p.0[1]);
                }
            }
        }));
        t[5].push(time(&mut || {
            for &i in &order {
                if let Some(p) = bw.get::<P>(be[i]) {
                    sb += f64::from(p.0[1]);
                }
            }
        }));
        t[6].push(time(&mut || {
            for &i in &order {
                if let Ok(mut h) = ow.get_mut::<H>(oe[i]) {
                    h.0 += 1;
                }
            }
        }));
        t[7].push(time(&mut || {
            for &i in &order {
                if let Some(mut h) = bw.get_mut::<H>(be[i]) {
                    h.0 += 1;
                }
            }
        }));
    }
    assert_eq!(so, sb, "both read the same values");
    for (i, &e) in oe.iter().enumerate() {
        assert_eq!(ow.get::<H>(e).map(|h| h.0).ok(), bw.get::<H>(be[i]).map(|h| h.0), "both wrote the same");
    }
    row("Query::get (&P, &U, &A), 200k random", &t[0], &t[1]);
    row("Query::get_mut &mut H, 200k random", &t[2], &t[3]);
    row("World::get::<P>, 200k random", &t[4], &t[5]);
    row("World::get_mut::<H>, 200k random", &t[6], &t[7]);
}

fn commands() {
    let mut ow = ecs_core::World::new();
    let mut bw = bevy_ecs::world::World::new();
    let mut oqueue = ecs_core::CommandQueue::default();
    let mut bqueue = bevy_ecs::world::CommandQueue::default();
    let (mut oents, mut bents) = (Vec::with_capacity(ENTITIES), Vec::with_capacity(ENTITIES));
    let mut t = [(); 4].map(|()| Vec::with_capacity(RUNS));
    for run in 0..RUNS + 2 {
        oents.clear();
        bents.clear();
        let start = Instant::now();
        let mut c = oqueue.commands(&ow);
        oents.extend((0..ENTITIES).map(|i| c.spawn((P([i as f32; 3]), V([1.0; 3])))));
        assert!(oqueue.apply(&mut ow).is_empty());
        let os = start.elapsed().as_secs_f64() * 1e6;
        let start = Instant::now();
        let mut c = bevy_ecs::system::Commands::new(&mut bqueue, &bw);
        bents.extend((0..ENTITIES).map(|i| c.spawn((P([i as f32; 3]), V([1.0; 3]))).id()));
        bqueue.apply(&mut bw);
        let bs = start.elapsed().as_secs_f64() * 1e6;
        let bevy_live = bw.query::<&P>().iter(&bw).count();
        assert_eq!((ow.len() as usize, bevy_live), (ENTITIES, ENTITIES));
        let start = Instant::now();
        let mut c = oqueue.commands(&ow);
        oents.iter().for_each(|&e| c.despawn(e));
        assert!(oqueue.apply(&mut ow).is_empty());
        let od = start.elapsed().as_secs_f64() * 1e6;
        let start = Instant::now();
        let mut c = bevy_ecs::system::Commands::new(&mut bqueue, &bw);
        bents.iter().for_each(|&e| c.entity(e).despawn());
        bqueue.apply(&mut bw);
        let bd = start.elapsed().as_secs_f64() * 1e6;
        assert_eq!(ow.len(), 0);
        // The first two rounds warm both worlds' storage up.
        if run >= 2 {
            t[0].push(os);
            t[1].push(bs);
            t[2].push(od);
            t[3].push(bd);
        }
    }
    row("Commands::spawn x 10k, then apply", &t[0], &t[1]);
    row("Commands::despawn x 10k, then apply", &t[2], &t[3]);
}

fn main() {
    let filter = std::env::args().nth(1).unwrap_or_default();
    if "get".contains(filter.as_str()) {
        get();
    }
    if "commands".contains(filter.as_str()) {
        commands();
    }
}
