//! The world tick crosses 2^32: change detection must stay exact.

use ecs_core::storage::tick::MAX_CHANGE_AGE;
use ecs_core::{Changed, Component, Entity, World};

#[derive(Component)]
struct Pos(f32);

#[test]
fn change_detection_survives_tick_wrap() {
    let mut world = World::new();
    let es = world.spawn_batch((0..500).map(|i| (Pos(i as f32),)));
    let mut q = world.query_filtered::<Entity, Changed<Pos>>();
    assert_eq!(q.iter(&world).count(), 500);

    // Run up to just below the 32-bit wrap, with a periodic check.
    world.advance_change_tick_by((1u64 << 32) - 100);
    assert_eq!(q.iter(&world).count(), 0, "ancient stamps were clamped, not aliased");

    // Write across the wrap and check each step.
    for step in 0..200u64 {
        world.increment_change_tick();
        let e = es[(step % 500) as usize];
        world.get_mut::<Pos>(e).unwrap().0 += 1.0;
        world.increment_change_tick();
        let got: Vec<Entity> = q.iter(&world).collect();
        assert_eq!(got, vec![e], "step {step}, tick {}", world.change_tick());
    }
    assert!(world.change_tick() > 1 << 32);

    // Far past the wrap: a query that has not run for more than the
    // maximum age still sees the recent write and nothing older.
    let mut stale = world.query_filtered::<Entity, Changed<Pos>>();
    stale.iter(&world).count();
    world.advance_change_tick_by(3 * (1u64 << 32));
    world.get_mut::<Pos>(es[7]).unwrap().0 = 0.0;
    world.increment_change_tick();
    assert_eq!(stale.iter(&world).collect::<Vec<_>>(), vec![es[7]]);
    assert!(world.change_tick() - stale.last_run() < MAX_CHANGE_AGE as u64);
}
