//! Where the `skip` scenario's scattered cases spend their time, ours
//! against bevy_ecs: the scenario's consumer (`Changed<Pos>` rows read
//! `Pos` and write `Matrix`) split into its read side (the same rows, `Pos`
//! summed, nothing written) and, for ours, its filter alone (the passing
//! rows counted), on the scenario's stride pattern and on movers drawn at
//! random; and the full pass of the clustered 10 % and 100 % cases (whole
//! groups of changed rows). bevy_ecs's filter alone is not timed: a counting pass of its
//! read about twice its reading pass (81 against 36-44 us), so it did not
//! isolate the filter.
//!
//! `cargo run --release -p ecs-bench --features peers --example probe_skip`
//!
//! The scenario's scenes (`ecs_bench::scenes::{ours, bevy}::Skip`: 100k
//! `(Pos, Matrix)` entities, an untimed writer that moves the movers with
//! `get_mut` and advances the tick before every timed pass). The two stores
//! run in turns (medians of the runs); every pass checks that both saw
//! exactly the movers (and, reading, the same sum).

use std::time::Instant;

use ecs_bench::scenes::replication::median;
use ecs_bench::scenes::spatial::SplitMix64;
use ecs_bench::scenes::{SKIP_CASES, SKIP_ENTITIES, SkipScene, bevy, ours};

const RUNS: usize = 301;

/// What a timed pass does with the rows whose `Pos` changed.
#[derive(Clone, Copy, PartialEq)]
enum Pass {
    /// Writes `Matrix` from `Pos` (the scenario's consumer).
    Full,
    /// Sums `Pos.x` (the consumer's reads alone).
    Read,
    /// Counts the rows (the filter alone; ours only).
    Count,
}

/// Rows seen by one pass, and the sum of their `Pos.x` when it reads.
fn ours_pass(scene: &mut ours::Skip, pass: Pass) -> (usize, f64) {
    match pass {
        Pass::Full => (scene.consume(), 0.0),
        Pass::Read => scene.read_changed(),
        Pass::Count => (scene.count_changed(), 0.0),
    }
}

/// Medians (µs) of ours and bevy's pass, in turns (bevy's is NaN for the
/// counting pass, which only ours runs).
fn measure(movers: &[usize], pass: Pass) -> (f64, f64) {
    let (mut ours, mut bevy) = (ours::Skip::with_movers(movers), bevy::Skip::with_movers(movers));
    let (mut to, mut tb) = (Vec::with_capacity(RUNS), Vec::with_capacity(RUNS));
    for run in 0..RUNS + 2 {
        ours.write();
        let t = Instant::now();
        let o = ours_pass(&mut ours, pass);
        let ot = t.elapsed().as_secs_f64() * 1e6;
        // The first pass sees every row (all were added): not timed.
        if run >= 2 {
            assert_eq!(o.0, movers.len(), "exactly the movers");
            to.push(ot);
        }
        if pass == Pass::Count {
            continue;
        }
        bevy.write();
        let t = Instant::now();
        let b = if pass == Pass::Read { bevy.read_changed() } else { (bevy.consume(), 0.0) };
        let bt = t.elapsed().as_secs_f64() * 1e6;
        if run >= 2 {
            assert_eq!(o, b, "both saw the same rows");
            tb.push(bt);
        }
    }
    (median(&to), median(&tb))
}

fn main() {
    let filter = std::env::args().nth(1).unwrap_or_default();
    println!("{:<34} {:>10} {:>10} {:>10}", "case (us, medians)", "ours", "bevy", "ours/bevy");
    for name in ["clustered_10pct", "clustered_100pct"] {
        let Some(case) = SKIP_CASES.iter().find(|c| c.name == name) else { continue };
        let label = format!("{name}, full");
        if label.contains(filter.as_str()) {
            let (o, b) = measure(&case.mover_indices(SKIP_ENTITIES), Pass::Full);
            println!("{label:<34} {o:>10.1} {b:>10.1} {:>9.2}x", o / b);
        }
    }
    for percent in [1, 5, 10] {
        let name = format!("scattered_{percent}pct");
        let Some(case) = SKIP_CASES.iter().find(|c| c.name == name) else { continue };
        let stride = case.mover_indices(SKIP_ENTITIES);
        let count = stride.len();
        let mut rng = SplitMix64::new(0x5C47_7E4E_D000 + percent as u64);
        let mut random: Vec<usize> = (0..SKIP_ENTITIES).collect();
        for i in 0..count {
            let j = i + rng.below((SKIP_ENTITIES - i) as u32) as usize;
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
