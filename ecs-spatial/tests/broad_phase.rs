//! The broad-phase system against brute force over many frames of random
//! moves, spawns, despawns, component removals and invalid positions; and
//! the skip counters of frames where nothing or little moved.
#![cfg(feature = "ecs")]

use ecs_core::Disabled;
use ecs_core::prelude::*;
use ecs_spatial::{BroadPhase, Position, update_broad_phase};
use glam::Vec3;

mod common;
use common::Rng;

/// Another component, so entities move between archetypes.
#[derive(Component)]
struct Tag;

fn setup(seed: u64, n: usize) -> (World, Schedule, Rng, Vec<Entity>) {
    let mut rng = Rng(seed);
    let mut world = World::new();
    world.insert_resource(BroadPhase::<Position>::new(Vec3::ZERO, 4.0).unwrap());
    let entities = world.spawn_batch((0..n).map(|_| (Position(rng.point()),)).collect::<Vec<_>>());
    let mut schedule = Schedule::new();
    schedule.add_systems(update_broad_phase::<Position>);
    (world, schedule, rng, entities)
}

fn brute(world: &mut World, center: Vec3, radius: f32) -> Vec<Entity> {
    let mut q = world.query::<(Entity, &Position)>();
    let mut out: Vec<Entity> =
        q.iter(world).filter(|(_, p)| p.0.distance_squared(center) <= radius * radius).map(|(e, _)| e).collect();
    out.sort();
    out
}

fn check_against_brute_force(world: &mut World, rng: &mut Rng) {
    let mut all = world.query::<(Entity, &Position)>();
    let mut valid: Vec<Entity> =
        all.iter(world).filter(|(_, p)| p.0.is_finite() && p.0.abs().max_element() < 1.0e6).map(|(e, _)| e).collect();
    valid.sort();
    let mut invalid: Vec<Entity> = all
        .iter(world)
        .filter(|(_, p)| !(p.0.is_finite() && p.0.abs().max_element() < 1.0e6))
        .map(|(e, _)| e)
        .collect();
    invalid.sort();
    let bp = world.resource::<BroadPhase<Position>>().unwrap();
    let mut ids = bp.grid().ids().to_vec();
    ids.sort();
    assert_eq!(ids, valid, "the grid holds exactly the entities with a valid position");
    let mut listed: Vec<Entity> = bp.invalid_entities().iter().map(|&(e, _)| e).collect();
    listed.sort();
    assert_eq!(listed, invalid, "the invalid list holds exactly the others");
    // Every stored position is the entity's current one.
    for (&e, p) in bp.grid().ids().iter().zip(bp.grid().positions()) {
        assert_eq!(world.get::<Position>(e).unwrap().0, p);
    }
    for _ in 0..20 {
        let center = rng.point();
        let radius = [0.0, 1.0, 4.0, 6.5][rng.below(4) as usize];
        let bp = world.resource::<BroadPhase<Position>>().unwrap();
        let mut got = Vec::new();
        bp.grid().query_radius(center, radius, &mut got);
        got.sort();
        let want: Vec<Entity> =
            brute(world, center, radius).into_iter().filter(|e| valid.binary_search(e).is_ok()).collect();
        assert_eq!(got, want, "radius {radius} around {center}");
    }
    let bp = world.resource::<BroadPhase<Position>>().unwrap();
    let mut pairs = 0usize;
    bp.grid().for_each_pair_within(4.0, |_, _| pairs += 1);
    let positions: Vec<Vec3> = valid.iter().map(|&e| world.get::<Position>(e).unwrap().0).collect();
    let mut want_pairs = 0usize;
    for i in 0..positions.len() {
        for j in i + 1..positions.len() {
            if positions[i].distance_squared(positions[j]) <= 16.0 {
                want_pairs += 1;
            }
        }
    }
    assert_eq!(pairs, want_pairs);
}

#[test]
fn random_frames_match_brute_force() {
    for seed in 0..6u64 {
        let (mut world, mut schedule, mut rng, mut live) = setup(seed, 300);
        if seed % 2 == 1 {
            // Rebuild only when more rows changed than are tracked: the
            // incremental edit then also takes the frames with many movers.
            let bp = world.remove_resource::<BroadPhase<Position>>().unwrap();
            world.insert_resource(bp.with_rebuild_share(1.0));
        }
        schedule.run(&mut world).unwrap();
        check_against_brute_force(&mut world, &mut rng);
        let mut removed_position: Vec<Entity> = Vec::new();
        let mut disabled: Vec<Entity> = Vec::new();
        for frame in 0..60 {
            // A share of movers that changes per frame: few, some, nearly
            // all, every one (a rebuild from the changed rows alone).
            let movers = [0, 3, 15, 60, 280, usize::MAX][(frame + seed as usize) % 6];
            if movers == usize::MAX {
                for &e in &live {
                    world.get_mut::<Position>(e).unwrap().0 = rng.point();
                }
            }
            for _ in 0..if movers == usize::MAX { 0 } else { movers } {
                if live.is_empty() {
                    break;
                }
                let e = live[rng.below(live.len() as u64) as usize];
                let mut p = world.get_mut::<Position>(e).unwrap();
                p.0 = if rng.below(2) == 0 { p.0 + (rng.point() * 0.05) } else { rng.point() };
            }
            for _ in 0..rng.below(6) {
                live.push(world.spawn((Position(rng.point()),)));
            }
            for _ in 0..rng.below(5) {
                if !live.is_empty() {
                    let e = live.swap_remove(rng.below(live.len() as u64) as usize);
                    world.despawn(e).unwrap();
                }
            }
            if rng.below(3) == 0 && !live.is_empty() {
                // Lose the position (tracked again later when it comes back).
                let e = live.swap_remove(rng.below(live.len() as u64) as usize);
                world.remove_one::<Position>(e).unwrap();
                removed_position.push(e);
            }
            if rng.below(3) == 0 && !removed_position.is_empty() {
                let e = removed_position.swap_remove(0);
                world.insert_one(e, Position(rng.point())).unwrap();
                live.push(e);
            }
            if rng.below(4) == 0 && !live.is_empty() {
                // Another archetype, same position.
                let e = live[rng.below(live.len() as u64) as usize];
                if !world.has::<Tag>(e).unwrap() {
                    world.insert_one(e, Tag).unwrap();
                }
            }
            if rng.below(4) == 0 && !live.is_empty() {
                // Disabled: out of the query, position kept; enabled again
                // later, moved or not while disabled.
                let e = live.swap_remove(rng.below(live.len() as u64) as usize);
                world.insert_one(e, Disabled).unwrap();
                disabled.push(e);
            }
            if rng.below(3) == 0 && !disabled.is_empty() {
                let e = disabled.swap_remove(rng.below(disabled.len() as u64) as usize);
                if rng.below(2) == 0 {
                    world.get_mut::<Position>(e).unwrap().0 = rng.point();
                }
                world.remove_one::<Disabled>(e).unwrap();
                live.push(e);
            }
            if rng.below(5) == 0 && !live.is_empty() {
                // An invalid position leaves the grid; a later valid one re-enters it.
                let e = live[rng.below(live.len() as u64) as usize];
                world.get_mut::<Position>(e).unwrap().0 =
                    if rng.below(2) == 0 { Vec3::new(f32::NAN, 0.0, 0.0) } else { Vec3::new(1.0e30, 0.0, 0.0) };
            }
            schedule.run(&mut world).unwrap();
            check_against_brute_force(&mut world, &mut rng);
        }
        let bp = world.resource::<BroadPhase<Position>>().unwrap();
        for &(e, _) in bp.invalid_entities() {
            assert!(!world.get::<Position>(e).unwrap().0.is_finite() || world.get::<Position>(e).unwrap().0.x > 1.0e6);
        }
    }
}

#[test]
fn a_frame_where_nothing_moved_skips_every_chunk() {
    let (mut world, mut schedule, mut rng, live) = setup(7, 5000);
    schedule.run(&mut world).unwrap();
    let first = world.resource::<BroadPhase<Position>>().unwrap().stats();
    assert!(first.full_rebuild && first.rows_rekeyed == 5000);

    schedule.run(&mut world).unwrap();
    let stats = world.resource::<BroadPhase<Position>>().unwrap().stats();
    assert!(stats.chunks_total > 1, "{stats:?}");
    assert_eq!(stats.chunks_skipped, stats.chunks_total, "{stats:?}");
    assert_eq!(stats.rows_rekeyed, 0);
    assert_eq!((stats.points_removed, stats.points_inserted), (0, 0));
    assert!(!stats.full_rebuild && !stats.membership_sweep);
    assert_eq!(stats.entities, 5000);

    // Few moved: only their rows are re-keyed, no rebuild.
    for &e in live.iter().step_by(500) {
        world.get_mut::<Position>(e).unwrap().0 = rng.point();
    }
    schedule.run(&mut world).unwrap();
    let stats = world.resource::<BroadPhase<Position>>().unwrap().stats();
    assert_eq!(stats.rows_rekeyed, 10, "{stats:?}");
    assert!(!stats.full_rebuild && stats.chunks_visited() <= 10, "{stats:?}");
    assert_eq!(stats.points_inserted, stats.points_removed);
    assert_eq!(stats.points_inserted + stats.moved_in_cell, 10);
    check_against_brute_force(&mut world, &mut rng);
}

#[test]
fn readers_share_the_grid_in_parallel() {
    struct Counts(Vec<usize>);
    fn reader_a(bp: Res<BroadPhase<Position>>, _other: Query<&Tag>) {
        assert!(!bp.grid().is_empty());
    }
    fn reader_b(bp: Res<BroadPhase<Position>>, mut counts: ResMut<Counts>) {
        counts.0.push(bp.grid().len());
    }
    let (mut world, _, _, _) = setup(3, 50);
    world.insert_resource(Counts(Vec::new()));
    let mut schedule = Schedule::new();
    schedule.add_systems(update_broad_phase::<Position>);
    schedule.add_systems(reader_a.after(update_broad_phase::<Position>));
    schedule.add_systems(reader_b.after(update_broad_phase::<Position>));
    schedule.run(&mut world).unwrap();
    // The two readers share a stage: they only read the grid.
    let stages = schedule.stage_names();
    assert!(stages.iter().any(|s| s.len() == 2), "{stages:?}");
    assert_eq!(world.resource::<Counts>().unwrap().0, vec![50]);
}

#[test]
fn despawns_and_lost_positions_come_from_the_removal_log_not_a_sweep() {
    let (mut world, mut schedule, _rng, live) = setup(11, 3000);
    schedule.run(&mut world).unwrap();
    for &e in live.iter().step_by(100) {
        world.despawn(e).unwrap();
    }
    for &e in live.iter().skip(50).step_by(100) {
        world.remove_one::<Position>(e).unwrap();
    }
    schedule.run(&mut world).unwrap();
    let stats = world.resource::<BroadPhase<Position>>().unwrap().stats();
    assert_eq!(stats.removals_seen, 60, "{stats:?}");
    assert_eq!(stats.points_removed, 60);
    assert!(!stats.membership_sweep, "no sweep for despawns and removals: {stats:?}");
    assert_eq!(stats.chunks_skipped, stats.chunks_total, "nothing moved: {stats:?}");
    let grid = world.resource::<BroadPhase<Position>>().unwrap();
    assert_eq!(grid.grid().len(), 3000 - 60);
    assert!(live.iter().step_by(50).all(|e| !grid.grid().ids().contains(e)));

    // Disabling hides an entity from the system's query without removing
    // its position: the system reads it from `Added<Disabled>`, no sweep.
    world.insert_one(live[1], Disabled).unwrap();
    schedule.run(&mut world).unwrap();
    let stats = world.resource::<BroadPhase<Position>>().unwrap().stats();
    assert!(!stats.membership_sweep && stats.points_removed == 1, "{stats:?}");
    assert!(!world.resource::<BroadPhase<Position>>().unwrap().grid().ids().contains(&live[1]));
}

fn in_grid(world: &World, e: Entity) -> bool {
    world.resource::<BroadPhase<Position>>().unwrap().grid().ids().contains(&e)
}

#[test]
fn an_entity_enabled_again_comes_back_where_it_is() {
    let (mut world, mut schedule, _rng, live) = setup(12, 3000);
    schedule.run(&mut world).unwrap();
    world.insert_one(live[1], Disabled).unwrap();
    world.insert_one(live[2], Disabled).unwrap();
    world.get_mut::<Position>(live[3]).unwrap().0 = Vec3::new(f32::NAN, 0.0, 0.0);
    schedule.run(&mut world).unwrap();
    assert!(!in_grid(&world, live[1]) && !in_grid(&world, live[2]));

    // One enabled again as it was, one moved while disabled, in the frame
    // where another is disabled: the counts balance, the lists do not.
    world.remove_one::<Disabled>(live[1]).unwrap();
    world.get_mut::<Position>(live[2]).unwrap().0 = Vec3::new(7.0, 7.0, 7.0);
    world.remove_one::<Disabled>(live[2]).unwrap();
    world.insert_one(live[4], Disabled).unwrap();
    world.insert_one(live[3], Disabled).unwrap();
    schedule.run(&mut world).unwrap();
    let bp = world.resource::<BroadPhase<Position>>().unwrap();
    let stats = bp.stats();
    assert_eq!(stats.entities_entered, 1, "the moved one came in as a changed row: {stats:?}");
    assert!(!stats.membership_sweep, "{stats:?}");
    assert!(bp.invalid_entities().is_empty(), "a disabled entity leaves the invalid list too");
    assert!(in_grid(&world, live[1]) && in_grid(&world, live[2]) && !in_grid(&world, live[4]));
    let slot = bp.grid().ids().iter().position(|&e| e == live[2]).unwrap();
    assert_eq!(bp.grid().positions().get(slot), Some(Vec3::new(7.0, 7.0, 7.0)));

    // Enabled again with an invalid position: back in the invalid list.
    world.remove_one::<Disabled>(live[3]).unwrap();
    schedule.run(&mut world).unwrap();
    let bp = world.resource::<BroadPhase<Position>>().unwrap();
    assert_eq!(bp.invalid_entities().iter().map(|&(e, _)| e).collect::<Vec<_>>(), vec![live[3]]);
    assert_eq!(bp.stats().entities_entered, 1);
    assert_eq!(bp.grid().len(), 3000 - 2);
}

/// The broad phase run by a caller that passes neither the entities that
/// left the query nor those that entered it.
fn update_without_lists(
    mut changed: Query<(Entity, &Position), Changed<Position>>,
    mut present: Query<(Entity, &Position)>,
    mut bp: ResMut<BroadPhase<Position>>,
) {
    bp.update(&mut changed, &mut present, std::iter::empty(), std::iter::empty());
}

#[test]
fn a_caller_without_the_lists_is_kept_right_by_the_membership_sweep() {
    let (mut world, _, _rng, live) = setup(13, 2000);
    let mut schedule = Schedule::new();
    schedule.add_systems(update_without_lists);
    schedule.run(&mut world).unwrap();
    world.insert_one(live[5], Disabled).unwrap();
    world.despawn(live[6]).unwrap();
    schedule.run(&mut world).unwrap();
    let stats = world.resource::<BroadPhase<Position>>().unwrap().stats();
    assert!(stats.membership_sweep && stats.points_removed == 2, "{stats:?}");
    assert!(!in_grid(&world, live[5]) && !in_grid(&world, live[6]));

    world.remove_one::<Disabled>(live[5]).unwrap();
    schedule.run(&mut world).unwrap();
    let stats = world.resource::<BroadPhase<Position>>().unwrap().stats();
    assert!(stats.membership_sweep && stats.points_inserted == 1, "{stats:?}");
    assert!(in_grid(&world, live[5]));
    assert_eq!(world.resource::<BroadPhase<Position>>().unwrap().grid().len(), 1999);
}

#[test]
fn many_invalid_positions_changing_every_frame_stay_listed_exactly() {
    // A tenth of the entities at positions without a key, each rewritten
    // every frame (an incremental run), some made valid and some invalid.
    let (mut world, mut schedule, mut rng, live) = setup(14, 4000);
    // 11 % of the entities change each frame: above the default share in a
    // world this sparse, so the share is set for the incremental path.
    let bp = world.remove_resource::<BroadPhase<Position>>().unwrap();
    world.insert_resource(bp.with_rebuild_share(0.5));
    schedule.run(&mut world).unwrap();
    let bad = |rng: &mut Rng| {
        if rng.below(2) == 0 { Vec3::new(f32::NAN, 1.0, 0.0) } else { Vec3::new(0.0, f32::INFINITY, 0.0) }
    };
    for &e in live.iter().step_by(10) {
        world.get_mut::<Position>(e).unwrap().0 = bad(&mut rng);
    }
    schedule.run(&mut world).unwrap();
    for frame in 0..8 {
        for (i, &e) in live.iter().step_by(10).enumerate() {
            let p = if (i + frame) % 7 == 0 { rng.point() } else { bad(&mut rng) };
            world.get_mut::<Position>(e).unwrap().0 = p;
        }
        for &e in live.iter().skip(3).step_by(97) {
            world.get_mut::<Position>(e).unwrap().0 = bad(&mut rng);
        }
        schedule.run(&mut world).unwrap();
        let bp = world.resource::<BroadPhase<Position>>().unwrap();
        assert!(!bp.stats().full_rebuild, "{:?}", bp.stats());
        let mut listed: Vec<Entity> = bp.invalid_entities().iter().map(|&(e, _)| e).collect();
        listed.sort();
        let mut want: Vec<Entity> =
            live.iter().copied().filter(|&e| !world.get::<Position>(e).unwrap().0.is_finite()).collect();
        want.sort();
        assert_eq!(listed, want, "frame {frame}");
        assert_eq!(bp.grid().len() + listed.len(), live.len());
    }
}

/// The grid holds exactly the entities with a valid position, each at its
/// current position.
fn assert_grid_exact(world: &mut World, when: &str) {
    let mut all = world.query::<(Entity, &Position)>();
    let mut want: Vec<(Entity, [u32; 3])> =
        all.iter(world).filter(|(_, p)| p.0.is_finite()).map(|(e, p)| (e, p.0.to_array().map(f32::to_bits))).collect();
    want.sort();
    let bp = world.resource::<BroadPhase<Position>>().unwrap();
    let mut got: Vec<(Entity, [u32; 3])> =
        bp.grid().ids().iter().zip(bp.grid().positions()).map(|(&e, p)| (e, p.to_array().map(f32::to_bits))).collect();
    got.sort();
    assert_eq!(got, want, "{when}");
}

#[test]
fn a_crowd_in_one_cell_is_updated_without_scanning_it() {
    // 3000 entities in one cell of 4, 2000 in its neighbour: rows move
    // inside their cell, between the two, out to small cells and back.
    let mut rng = Rng(21);
    let mut world = World::new();
    // Never a rebuild: every frame edits the grid and keeps the hints.
    world.insert_resource(BroadPhase::<Position>::new(Vec3::ZERO, 4.0).unwrap().with_rebuild_share(1.0));
    let in_cell = |rng: &mut Rng, x0: f32| Vec3::new(x0 + 0.5 + rng.unit() * 3.0, 0.5 + rng.unit() * 3.0, 1.0);
    let mut live: Vec<Entity> = (0..5000)
        .map(|i| {
            let x0 = if i < 3000 { 0.0 } else { 4.0 };
            world.spawn((Position(in_cell(&mut rng, x0)),))
        })
        .collect();
    let mut schedule = Schedule::new();
    schedule.add_systems(update_broad_phase::<Position>);
    schedule.run(&mut world).unwrap();
    assert_grid_exact(&mut world, "built");
    for frame in 0..12 {
        // 100 rows moved inside the cell they are in (a crowd, mostly).
        for k in 0..100 {
            let e = live[(frame * 397 + k * 31) % live.len()];
            let x = world.get::<Position>(e).unwrap().0.x;
            world.get_mut::<Position>(e).unwrap().0 = in_cell(&mut rng, (x / 4.0).floor() * 4.0);
        }
        schedule.run(&mut world).unwrap();
        let stats = world.resource::<BroadPhase<Position>>().unwrap().stats();
        assert_eq!(stats.moved_in_cell, 100, "frame {frame}: {stats:?}");
        // Rows in the crowds come from their hints; the few in cells of one
        // or two are scanned. A scan of a crowd would compare thousands.
        assert!(stats.ids_scanned <= 100, "frame {frame}: {stats:?}");
        assert_grid_exact(&mut world, &format!("frame {frame}, moves in the crowds"));

        // Then some cross between the crowds, leave for small cells, come
        // back, are despawned and spawned into a crowd.
        for k in 0..40 {
            let e = live[(frame * 131 + k * 17) % live.len()];
            let x0 = [0.0, 4.0, 40.0 + k as f32 * 4.0][(k + frame) % 3];
            world.get_mut::<Position>(e).unwrap().0 = in_cell(&mut rng, x0);
        }
        for _ in 0..5 {
            let e = live.swap_remove(rng.below(live.len() as u64) as usize);
            world.despawn(e).unwrap();
            live.push(world.spawn((Position(in_cell(&mut rng, 0.0)),)));
        }
        schedule.run(&mut world).unwrap();
        assert_grid_exact(&mut world, &format!("frame {frame}, edits"));
    }
    // A point joins a new cell before both crowds: their slots shift by one
    // though neither was edited, and their hints must follow.
    live.push(world.spawn((Position(in_cell(&mut rng, -20.0)),)));
    schedule.run(&mut world).unwrap();
    assert_eq!(world.resource::<BroadPhase<Position>>().unwrap().stats().points_inserted, 1);
    let crowds: Vec<Entity> = live.iter().copied().filter(|&e| world.get::<Position>(e).unwrap().0.x < 8.0).collect();
    let crowds: Vec<Entity> = crowds.into_iter().filter(|&e| world.get::<Position>(e).unwrap().0.x >= 0.0).collect();
    for &e in crowds.iter().step_by(crowds.len() / 100).take(100) {
        let x = world.get::<Position>(e).unwrap().0.x;
        world.get_mut::<Position>(e).unwrap().0 = in_cell(&mut rng, (x / 4.0).floor() * 4.0);
    }
    schedule.run(&mut world).unwrap();
    let stats = world.resource::<BroadPhase<Position>>().unwrap().stats();
    assert_eq!((stats.moved_in_cell, stats.ids_scanned), (100, 0), "after the shift: {stats:?}");
    assert_grid_exact(&mut world, "the crowds shifted");

    // The second crowd disperses to 10 (its hints are no longer kept up),
    // the grid is edited around it, then its last 10 move inside it.
    let second: Vec<Entity> = live.iter().copied().filter(|&e| world.get::<Position>(e).unwrap().0.x >= 4.0).collect();
    let second: Vec<Entity> = second.into_iter().filter(|&e| world.get::<Position>(e).unwrap().0.x < 8.0).collect();
    let (stay, go) = second.split_at(10);
    for (k, &e) in go.iter().enumerate() {
        world.get_mut::<Position>(e).unwrap().0 = in_cell(&mut rng, 100.0 + (k % 50) as f32 * 4.0);
    }
    schedule.run(&mut world).unwrap();
    assert_grid_exact(&mut world, "dispersed");
    for &e in live.iter().filter(|e| !second.contains(e)).take(300) {
        world.get_mut::<Position>(e).unwrap().0 = in_cell(&mut rng, -40.0);
    }
    schedule.run(&mut world).unwrap();
    for &e in stay {
        world.get_mut::<Position>(e).unwrap().0 = in_cell(&mut rng, 4.0);
    }
    schedule.run(&mut world).unwrap();
    let stats = world.resource::<BroadPhase<Position>>().unwrap().stats();
    assert_eq!(stats.moved_in_cell, 10, "{stats:?}");
    assert_grid_exact(&mut world, "the rest of the crowd moved");
}

/// Runs of a broad phase over `n` points in a cube of side `side` (cells
/// of 1.0) where a tenth of the entities move within their cells: whether
/// the second run rebuilt, and the share it compared with.
fn tenth_moved_rebuilds(n: usize, side: f32, share: Option<f32>) -> (bool, f32) {
    let mut rng = Rng(41);
    let mut world = World::new();
    let mut bp = BroadPhase::<Position>::new(Vec3::ZERO, 1.0).unwrap();
    if let Some(s) = share {
        bp = bp.with_rebuild_share(s);
    }
    world.insert_resource(bp);
    let homes: Vec<Vec3> = (0..n).map(|_| (rng.in_box(side) * 4.0).floor() / 4.0 + 0.125).collect();
    let live = world.spawn_batch(homes.iter().map(|&p| (Position(p),)).collect::<Vec<_>>());
    let mut schedule = Schedule::new();
    schedule.add_systems(update_broad_phase::<Position>);
    schedule.run(&mut world).unwrap();
    let threshold = world.resource::<BroadPhase<Position>>().unwrap().rebuild_share();
    for (&e, &p) in live.iter().zip(&homes).step_by(10) {
        world.get_mut::<Position>(e).unwrap().0 = p + Vec3::splat(0.0625);
    }
    schedule.run(&mut world).unwrap();
    let bp = world.resource::<BroadPhase<Position>>().unwrap();
    assert_eq!(bp.stats().rows_rekeyed, n.div_ceil(10) as u64);
    assert_eq!(bp.grid().len(), n);
    (bp.stats().full_rebuild, threshold)
}

#[test]
fn the_default_rebuild_share_follows_the_points_per_cell() {
    // One point a cell or so (4000 in 64^3 cells): a tenth moved is past
    // the crossover, so the run rebuilds.
    let (rebuilt, share) = tenth_moved_rebuilds(4000, 64.0, None);
    assert!(rebuilt && (0.06..0.065).contains(&share), "{share}");
    // About 60 a cell (4000 in 4^3 cells): the edit is cheaper.
    let (rebuilt, share) = tenth_moved_rebuilds(4000, 4.0, None);
    assert!(!rebuilt && (0.14..=0.15).contains(&share), "{share}");
    // A share set by the caller holds whatever the cells hold; NaN restores
    // the default.
    assert_eq!(tenth_moved_rebuilds(4000, 64.0, Some(0.5)), (false, 0.5));
    assert_eq!(tenth_moved_rebuilds(4000, 4.0, Some(0.05)), (true, 0.05));
    let (rebuilt, share) = tenth_moved_rebuilds(4000, 64.0, Some(f32::NAN));
    assert!(rebuilt && (0.06..0.065).contains(&share), "{share}");
}

#[test]
fn shares_of_movers_past_the_rebuild_share_are_counted_and_rebuilt_exactly() {
    // Every order of frames where all rows move, more than the rebuild
    // share move (the rows past it are only counted), and few move: the
    // count of changed rows, the path taken and the grid are exact in each.
    let (mut world, mut schedule, mut rng, live) = setup(43, 2000);
    schedule.run(&mut world).unwrap();
    let share = world.resource::<BroadPhase<Position>>().unwrap().rebuild_share();
    let all = live.len();
    for (frame, moved) in [all, all, 1000, 1000, all, 5, 1000, all, 0, 700, all, 3, all].into_iter().enumerate() {
        // A different set of `moved` rows each frame (every row when all).
        let first = rng.below(all as u64) as usize;
        for i in 0..moved {
            let e = live[(first + i * 7) % all];
            world.get_mut::<Position>(e).unwrap().0 = rng.point();
        }
        schedule.run(&mut world).unwrap();
        let stats = world.resource::<BroadPhase<Position>>().unwrap().stats();
        assert_eq!(stats.rows_rekeyed, moved as u64, "frame {frame}: {stats:?}");
        assert_eq!(stats.full_rebuild, moved as f32 > share * all as f32, "frame {frame}: {stats:?}");
        assert_grid_exact(&mut world, &format!("frame {frame}, {moved} moved"));
    }
}
