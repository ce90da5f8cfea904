//! Component removal is replicated on the acknowledged-baseline rule: a
//! removal stays pending until the client acknowledges a packet that
//! carried it, so loss delays it but never leaves a stale component.

mod common;

use common::*;
use ecs_replication::prelude::*;

#[test]
fn a_removal_survives_heavy_loss_and_a_reinsert_follows() {
    let mut run = Run::new(3, &[None, None], ServerConfig::default(), 20);
    run.set_links(LinkConfig::clean(1));
    for _ in 0..10 {
        run.step(false, 20);
    }
    run.assert_converged("start");
    let victims: Vec<_> = run.scene.live.iter().copied().take(8).collect();
    // Half the packets and half the acknowledgements are lost while the
    // components go.
    run.set_links(LinkConfig { loss: 0.5, delay: 2, jitter: 3, duplicate: 0.1, corrupt: 0.0 });
    for (i, e) in victims.iter().enumerate() {
        if i % 2 == 0 {
            run.world.remove_one::<Health>(*e).unwrap();
        } else {
            run.world.remove_one::<Rotation>(*e).unwrap();
        }
    }
    run.step(false, 20);
    assert_eq!(run.server.tick_stats().removed, victims.len());
    for _ in 0..60 {
        run.step(false, 20);
    }
    run.set_links(LinkConfig::clean(1));
    for _ in 0..4 {
        run.step(false, 20);
    }
    run.assert_converged("after the removals");
    // Nothing was left pending for them.
    for id in [ClientId(100), ClientId(101)] {
        assert_eq!(run.server.client_stats(id).unwrap().pending, 0);
    }
    // Back again, then removed and re-inserted within one tick (a change,
    // not a removal).
    for e in &victims {
        let _ = run.world.insert_one(*e, Health(77));
    }
    run.step(false, 20);
    for e in &victims {
        run.world.remove_one::<Health>(*e).unwrap();
        run.world.insert_one(*e, Health(78)).unwrap();
    }
    run.step(false, 20);
    assert_eq!(run.server.tick_stats().removed, 0);
    for _ in 0..4 {
        run.step(false, 20);
    }
    run.assert_converged("after the re-inserts");
}
