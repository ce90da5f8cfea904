//! The suite's `simple_iter` and `frag_iter` frames in both loop forms,
//! ours against bevy_ecs and hecs: internal iteration (`for_each_mut` for
//! ours, `for_each` for the peers, which runs their own `fold`; the form the
//! suite times) and a `for` loop over the query (the form a user writes
//! first).
//!
//! `cargo run --release -p ecs-bench --features peers --example probe_iter`
//!
//! The worlds are the suite's own scenes. Every store and form runs in turns
//! within each round (many frames per sample, medians of the rounds), so
//! the host's drift falls on all of them alike.

use std::time::Instant;

use ecs_bench::scenes::replication::median;
use ecs_bench::scenes::{Frame, bevy, hecs, ours};

const ROUNDS: usize = 101;

/// Microseconds per call of `f`, over `calls` calls.
fn time(calls: usize, mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..calls {
        f();
    }
    t.elapsed().as_secs_f64() * 1e6 / calls as f64
}

/// Medians (us per frame) of the six passes, in the order printed.
fn measure(calls: usize, mut passes: [&mut dyn FnMut(); 6]) -> [f64; 6] {
    let mut samples: [Vec<f64>; 6] = Default::default();
    for _ in 0..ROUNDS {
        for (pass, out) in passes.iter_mut().zip(&mut samples) {
            out.push(time(calls, &mut **pass));
        }
    }
    samples.map(|s| median(&s))
}

fn print(case: &str, m: [f64; 6]) {
    let [ours_each, bevy_each, hecs_each, ours_for, bevy_for, hecs_for] = m;
    println!(
        "{case:<12} for_each: ours {ours_each:>8.3} bevy {bevy_each:>8.3} hecs {hecs_each:>8.3} ({:.2}x bevy, {:.2}x hecs)",
        ours_each / bevy_each,
        ours_each / hecs_each
    );
    println!(
        "{:<12} for loop: ours {ours_for:>8.3} bevy {bevy_for:>8.3} hecs {hecs_for:>8.3} ({:.2}x bevy, {:.2}x hecs)",
        "",
        ours_for / bevy_for,
        ours_for / hecs_for
    );
}

/// Times one scene (a type of that name in `ours`, `bevy` and `hecs`, each
/// with `frame` and `for_loop`) in both forms, `$calls` frames a sample,
/// and prints it.
macro_rules! case {
    ($name:literal, $scene:ident, $calls:expr) => {{
        let (mut o, mut b, mut h) = (ours::$scene::new(), bevy::$scene::new(), hecs::$scene::new());
        let (mut o2, mut b2, mut h2) = (ours::$scene::new(), bevy::$scene::new(), hecs::$scene::new());
        let m = measure(
            $calls,
            [
                &mut || o.frame(),
                &mut || b.frame(),
                &mut || h.frame(),
                &mut || o2.for_loop(),
                &mut || b2.for_loop(),
                &mut || h2.for_loop(),
            ],
        );
        print($name, m);
    }};
}

fn main() {
    println!("us per frame, medians of {ROUNDS} rounds");
    case!("simple_iter", SimpleIter, 20);
    case!("frag_iter", FragIter, 2000);
}
