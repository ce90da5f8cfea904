//! A replicated entity marked `Disabled` on the server leaves the clients
//! as a despawn would; enabled again, it comes back with the values it has
//! then.

mod common;

use common::*;
use ecs_core::Disabled;
use ecs_replication::prelude::*;

#[test]
fn a_disabled_entity_leaves_the_clients_and_comes_back_when_enabled() {
    let mut run = Run::new(5, &[None, None], ServerConfig::default(), 20);
    for _ in 0..6 {
        run.step(false, 20);
    }
    run.assert_converged("start");
    let pooled: Vec<_> = run.scene.live.iter().copied().take(5).collect();
    let before: Vec<NetId> = pooled.iter().map(|&e| run.server.net_id(e).unwrap()).collect();
    for &e in &pooled {
        run.world.insert_one(e, Disabled).unwrap();
    }
    run.step(false, 20);
    let stats = run.server.tick_stats();
    assert_eq!(stats.despawned, pooled.len(), "{stats:?}");
    assert!(!stats.departures_swept, "named by Added<Disabled>: {stats:?}");
    for _ in 0..4 {
        run.step(false, 20);
    }
    run.assert_converged("disabled");
    for &e in &pooled {
        assert_eq!(run.server.net_id(e), None, "a disabled entity is not replicated");
    }
    // Written while disabled, then enabled: the clients get it as it is.
    run.world.get_mut::<Health>(pooled[0]).unwrap().0 = 4242;
    for &e in &pooled {
        run.world.remove_one::<Disabled>(e).unwrap();
    }
    // And another one disabled in the same tick.
    run.world.insert_one(run.scene.live[10], Disabled).unwrap();
    run.step(false, 20);
    let stats = run.server.tick_stats();
    assert_eq!((stats.spawned, stats.despawned), (pooled.len(), 1), "{stats:?}");
    for _ in 0..4 {
        run.step(false, 20);
    }
    run.assert_converged("enabled again");
    for (&e, old) in pooled.iter().zip(&before) {
        let net = run.server.net_id(e).expect("replicated again");
        assert_ne!(net, *old, "a new id: the clients despawned the old one");
    }
    // The value written while it was disabled reached every client's world.
    for (_, cw, _) in &mut run.clients {
        assert_eq!(cw.query::<&Health>().iter(cw).filter(|h| h.0 == 4242).count(), 1);
    }
}

#[test]
fn clients_converge_while_entities_are_disabled_and_enabled_under_loss() {
    for seed in [11u64, 12, 13] {
        let views = [None, Some(View { center: glam::Vec3::new(-5.0, 0.0, 0.0), radius: 10.0 })];
        let mut run = Run::new(seed, &views, ServerConfig::default(), 30);
        run.set_links(LinkConfig { loss: 0.3, delay: 2, jitter: 3, duplicate: 0.1, corrupt: 0.02 });
        for _ in 0..120 {
            run.scene.toggle_disabled(&mut run.world, &mut run.rng);
            run.step(true, 40);
            let stats = run.server.tick_stats();
            assert!(!stats.departures_swept, "seed {seed}: {stats:?}");
            for &e in &run.scene.asleep {
                assert_eq!(run.server.net_id(e), None, "seed {seed}: a disabled entity is replicated");
            }
        }
        run.set_links(LinkConfig::clean(1));
        for _ in 0..6 {
            run.step(false, 40);
        }
        run.assert_converged(&format!("seed {seed}"));
        let replicated = run.server.entities().count();
        assert_eq!(replicated, run.scene.live.len(), "seed {seed}");
    }
}
