//! The store against bevy_ecs and hecs on worlds the `suite` scenario does
//! not have: fragmented worlds (64, 1024 or 16384 archetypes, from 1 to
//! 100 entities each) iterated by a `&mut A` query and scanned by a
//! `Changed<A>` query when nothing changed, and 100k entities despawned in
//! a scattered order and spawned again one at a time.
//!
//! `cargo run --release -p ecs-bench --features peers --example probe_store [filter]`
//!
//! Each case times the three stores in turns (medians of the runs). Our
//! chunk memory is printed too: each archetype holds at least one 16 KiB
//! chunk.

use std::time::Instant;

use ecs_bench::scenes::replication::median;

macro_rules! components {
    ($($name:ident),*) => {
        $(
            #[derive(ecs_core::Component, bevy_ecs::component::Component, Clone, Copy, Default)]
            struct $name(#[allow(dead_code, reason = "a payload that makes the component non-empty")] u32);
        )*
    };
}
components!(M0, M1, M2, M3, M4, M5, M6, M7, M8, M9, M10, M11, M12, M13);

#[derive(ecs_core::Component, bevy_ecs::component::Component, Clone, Copy, Default)]
struct A(f32);
#[derive(ecs_core::Component, bevy_ecs::component::Component, Clone, Copy, Default)]
struct B(#[allow(dead_code, reason = "a payload that makes the component non-empty")] f32);

/// Inserts marker `k` (0..14) on an entity of each store.
macro_rules! for_bit {
    ($bit:expr, $m:ident => $body:expr) => {
        match $bit {
            0 => {
                let $m = M0(0);
                $body
            }
            1 => {
                let $m = M1(1);
                $body
            }
            2 => {
                let $m = M2(2);
                $body
            }
            3 => {
                let $m = M3(3);
                $body
            }
            4 => {
                let $m = M4(4);
                $body
            }
            5 => {
                let $m = M5(5);
                $body
            }
            6 => {
                let $m = M6(6);
                $body
            }
            7 => {
                let $m = M7(7);
                $body
            }
            8 => {
                let $m = M8(8);
                $body
            }
            9 => {
                let $m = M9(9);
                $body
            }
            10 => {
                let $m = M10(10);
                $body
            }
            11 => {
                let $m = M11(11);
                $body
            }
            12 => {
                let $m = M12(12);
                $body
            }
            _ => {
                let $m = M13(13);
                $body
            }
        }
    };
}

/// The archetype (set of markers) of entity `i` among `combos` (a power of
/// two up to 2^14): every combination gets `n / combos` entities.
fn bits(i: usize, combos: usize) -> u32 {
    (i % combos) as u32
}

/// Medians in µs of `reps` runs of each closure, taken in turns.
fn in_turns<const N: usize>(reps: usize, fs: &mut [&mut dyn FnMut(); N]) -> [f64; N] {
    let mut times: [Vec<f64>; N] = std::array::from_fn(|_| Vec::with_capacity(reps));
    for f in fs.iter_mut() {
        f(); // warm
    }
    for _ in 0..reps {
        for (f, t) in fs.iter_mut().zip(times.iter_mut()) {
            let start = Instant::now();
            f();
            t.push(start.elapsed().as_secs_f64() * 1e6);
        }
    }
    times.map(|t| median(&t))
}

fn fragmented(per: usize, combos: usize) {
    let n = per * combos;
    let mut ours = ecs_core::World::new();
    let mut bevy = bevy_ecs::world::World::new();
    let mut hecs = hecs::World::new();
    for i in 0..n {
        let (e, b, h) = (ours.spawn((A(i as f32),)), bevy.spawn(A(i as f32)).id(), hecs.spawn((A(i as f32),)));
        let set = bits(i, combos);
        for k in (0..14).filter(|k| set & (1 << k) != 0) {
            for_bit!(k, m => {
                ours.insert(e, (m,)).expect("live");
                bevy.entity_mut(b).insert(m);
                hecs.insert_one(h, m).expect("live");
            });
        }
    }
    let chunks: usize = ours.archetypes().iter().map(|a| a.chunk_count()).sum();
    let mut q = ours.query::<&mut A>();
    let mut bq = bevy.query::<&mut A>();
    let [o, b, h] = in_turns(
        31,
        &mut [
            &mut || q.for_each_mut(&mut ours, |mut a| a.0 += 1.0),
            &mut || bq.iter_mut(&mut bevy).for_each(|mut a| a.0 += 1.0),
            &mut || hecs.query_mut::<&mut A>().into_iter().for_each(|a| a.0 += 1.0),
        ],
    );
    println!(
        "{combos:>5} archetypes x {per:>3}: iterate &mut A  ours {o:8.1}  bevy {b:8.1}  hecs {h:8.1} us  ({:.2}x bevy, {:.2}x hecs); our chunks {:.1} MiB",
        o / b,
        o / h,
        (chunks * ecs_core::CHUNK_SIZE) as f64 / (1 << 20) as f64
    );
    // Nothing changed since the previous scan: ours skips every chunk from
    // its chunk tick; bevy checks each row's tick.
    let mut qc = ours.query_filtered::<&A, ecs_core::Changed<A>>();
    let mut bqc = bevy.query_filtered::<&A, bevy_ecs::query::Changed<A>>();
    let (mut seen, mut bevy_seen) = (0usize, 0usize);
    qc.for_each(&ours, |_| seen += 1);
    bevy.clear_trackers();
    let [o, b] = in_turns(
        31,
        &mut [&mut || qc.for_each(&ours, |_| seen += 1), &mut || {
            bevy.clear_trackers();
            bqc.iter(&bevy).for_each(|_| bevy_seen += 1)
        }],
    );
    assert_eq!((seen, bevy_seen), (n, 0), "only our first scan sees the changes");
    println!(
        "{combos:>5} archetypes x {per:>3}: Changed<A>, none   ours {o:8.1}  bevy {b:8.1} us  ({:.2}x bevy)",
        o / b
    );
}

fn scattered_churn(n: usize) {
    let order: Vec<usize> = (0..n).map(|i| (i * 7919) % n).collect();
    let mut ours = ecs_core::World::new();
    let mut bevy = bevy_ecs::world::World::new();
    let mut hecs = hecs::World::new();
    let mut ol: Vec<_> = (0..n).map(|i| ours.spawn((A(i as f32), B(0.0)))).collect();
    let mut bl: Vec<_> = (0..n).map(|i| bevy.spawn((A(i as f32), B(0.0))).id()).collect();
    let mut hl: Vec<_> = (0..n).map(|i| hecs.spawn((A(i as f32), B(0.0)))).collect();
    let [o, b, h] = in_turns(
        11,
        &mut [
            &mut || {
                for &k in &order {
                    ours.despawn(ol[k]).expect("live");
                }
                for (i, e) in ol.iter_mut().enumerate() {
                    *e = ours.spawn((A(i as f32), B(0.0)));
                }
            },
            &mut || {
                for &k in &order {
                    bevy.despawn(bl[k]);
                }
                for (i, e) in bl.iter_mut().enumerate() {
                    *e = bevy.spawn((A(i as f32), B(0.0))).id();
                }
            },
            &mut || {
                for &k in &order {
                    hecs.despawn(hl[k]).expect("live");
                }
                for (i, e) in hl.iter_mut().enumerate() {
                    *e = hecs.spawn((A(i as f32), B(0.0)));
                }
            },
        ],
    );
    assert_eq!(ours.len() as usize, n);
    println!(
        "despawn {n} in a scattered order, spawn {n}: ours {o:8.0}  bevy {b:8.0}  hecs {h:8.0} us  ({:.2}x bevy, {:.2}x hecs)",
        o / b,
        o / h
    );
}

fn main() {
    let filter = std::env::args().nth(1).unwrap_or_default();
    if "fragmented".contains(filter.as_str()) {
        // Few archetypes (all in cache), then many.
        fragmented(1, 64);
        for per in [1, 16, 100] {
            fragmented(per, 1024);
        }
        fragmented(1, 16384);
    }
    if "churn".contains(filter.as_str()) {
        scattered_churn(100_000);
    }
}
