//! `Disabled`: skipped by every query that does not name it.

use ecs_core::prelude::*;
use ecs_core::{Disabled, Entity};

#[derive(Component, Debug, PartialEq)]
struct Pos(i32);

#[test]
fn disabled_entities_are_skipped_until_enabled_and_do_not_count_as_chunks() {
    let mut world = World::new();
    let live = world.spawn_batch((0..300).map(|i| (Pos(i),)));
    let pooled = world.spawn_batch((0..500).map(|i| (Pos(1000 + i), Disabled)));
    let mut all = world.query::<(Entity, &Pos)>();
    assert_eq!(all.iter(&world).count(), 300);
    let stats = all.stats();
    assert_eq!(stats.entities, 300, "disabled rows are not in the matched archetypes");
    let mut with_flag = world.query_filtered::<Entity, With<Disabled>>();
    assert_eq!(with_flag.iter(&world).count(), 500);
    let mut either = world.query::<(Entity, Option<&Disabled>)>();
    assert_eq!(either.iter(&world).count(), 800);
    let mut without = world.query_filtered::<Entity, Without<Disabled>>();
    assert_eq!(without.iter(&world).count(), 300);

    // Lookups by entity still see a disabled entity; queries do not.
    assert_eq!(world.get::<Pos>(pooled[0]), Ok(&Pos(1000)));
    let by_query = world.query::<&Pos>();
    assert!(by_query.get(&world, pooled[0]).is_err());
    assert!(by_query.get(&world, live[0]).is_ok());

    // Systems too; enabling brings the entity back.
    world.remove_one::<Disabled>(pooled[0]).unwrap();
    world.insert_one(live[0], Disabled).unwrap();
    world.insert_resource(0usize);
    let mut schedule = Schedule::new();
    schedule.add_systems(|mut q: Query<&mut Pos>, mut n: ResMut<usize>| {
        q.for_each_mut(|mut p| {
            p.0 += 1;
            *n += 1;
        })
    });
    schedule.run(&mut world).unwrap();
    assert_eq!(*world.resource::<usize>().unwrap(), 300);
    assert_eq!(world.get::<Pos>(pooled[0]), Ok(&Pos(1001)));
    assert_eq!(world.get::<Pos>(live[0]), Ok(&Pos(0)), "disabled: untouched");
}
