//! Criterion bench of the `game` scene: one whole frame (one `App::update`,
//! one fixed step) of a small case, 10k entities with 5 % of the rigs and
//! boids moving, ours and (with feature `peers`) bevy. The scenes keep
//! running from frame to frame, as a game does.
//!
//! After timing, the scene that ran fewer frames is brought to the other's
//! frame count and the two worlds are compared (entities, the dead,
//! positions), as `ecs-bench game` does.

#![allow(missing_docs, reason = "criterion_group! and criterion_main! generate undocumented items")]

use criterion::{Criterion, criterion_group, criterion_main};
use ecs_bench::row::Impl;
use ecs_bench::scenes::game::{GameScene, Layout, check_agree, scene};

/// The small case: 10k entities, 5 % active.
const ENTITIES: usize = 10_000;
const ACTIVE: f64 = 0.05;

fn game(c: &mut Criterion) {
    let layout = Layout::new(ENTITIES, ACTIVE).unwrap_or_else(|e| panic!("game layout: {e}"));
    let mut group = c.benchmark_group("game_10k_5pct");
    group.sample_size(20);
    let mut scenes: Vec<(Impl, Box<dyn GameScene>)> = Vec::new();
    let mut frames: Vec<u64> = Vec::new();
    for &imp in Impl::compiled() {
        let Some(mut scene) = scene(imp, &layout).unwrap_or_else(|e| panic!("game/{}: setup: {e}", imp.name())) else {
            continue;
        };
        let mut ran = 0u64;
        group.bench_function(imp.name(), |b| {
            b.iter(|| {
                if let Err(e) = scene.frame() {
                    panic!("game/{}: {e}", imp.name());
                }
                ran += 1;
            });
        });
        scenes.push((imp, scene));
        frames.push(ran);
    }
    group.finish();
    let most = frames.iter().copied().max().unwrap_or(0);
    for ((imp, scene), ran) in scenes.iter_mut().zip(frames) {
        for _ in ran..most {
            if let Err(e) = scene.frame() {
                panic!("game/{}: {e}", imp.name());
            }
        }
    }
    if let Err(e) = check_agree(&mut scenes, &format!("after {most} frames")) {
        panic!("game: {e}");
    }
}

criterion_group!(benches, game);
criterion_main!(benches);
