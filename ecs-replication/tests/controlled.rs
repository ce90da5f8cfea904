//! The entities a client controls: each listed once, released in O(1),
//! released by themselves when despawned, and sent in every packet.

mod common;

use common::*;
use ecs_core::Disabled;
use ecs_replication::codec::{Limits, decode};
use ecs_replication::prelude::*;

#[test]
fn controlled_entities_are_listed_once_and_released_when_despawned() {
    let mut run = Run::new(9, &[None], ServerConfig::default(), 12);
    let id = run.clients[0].0;
    let units: Vec<_> = run.scene.live.iter().copied().take(6).collect();
    for &e in &units {
        run.server.set_controlled(id, e, true).unwrap();
    }
    run.server.set_controlled(id, units[2], true).unwrap();
    assert_eq!(run.server.controlled(id), &units[..], "a second grant lists it once");
    run.server.set_controlled(id, units[1], false).unwrap();
    let mut held: Vec<_> = run.server.controlled(id).to_vec();
    held.sort();
    let mut want: Vec<_> = units.iter().copied().filter(|&e| e != units[1]).collect();
    want.sort();
    assert_eq!(held, want);
    for _ in 0..3 {
        run.step(false, 20);
    }
    // Despawned: released by the next update; disabled: still controlled.
    run.world.despawn(units[3]).unwrap();
    run.scene.live.retain(|&e| e != units[3]);
    run.world.insert_one(units[4], Disabled).unwrap();
    run.step(false, 20);
    assert!(!run.server.controlled(id).contains(&units[3]));
    assert!(run.server.controlled(id).contains(&units[4]));
    assert_eq!(run.server.controlled(id).len(), 4);
    // Every controlled, replicated entity is in every packet.
    for _ in 0..3 {
        run.step(false, 20);
    }
    let schema = run.server.registry().schema().clone();
    run.server.update(&mut run.world).unwrap();
    let (_, packet) = run.server.packets().next().unwrap();
    let decoded = decode(packet, &schema, Limits::default()).unwrap();
    for &e in run.server.controlled(id) {
        if let Some(net) = run.server.net_id(e) {
            assert!(decoded.entries.iter().any(|en| en.net_id == net), "{e} is missing from the packet");
        }
    }
}

#[test]
fn a_session_takes_control_back() {
    use ecs_replication::session::{ControlledBy, PlayerInput, ServerSession};
    let mut world = ecs_core::World::new();
    let mut session: ServerSession<common::game::Move> =
        ServerSession::new(Server::new(&mut world, registry(), ServerConfig::default()));
    let id = ClientId(1);
    session.add_client(id, None).unwrap();
    let unit = world.spawn((Replicated, Position(glam::Vec3::ZERO)));
    session.set_controlled(&mut world, id, unit).unwrap();
    assert!(world.get::<ControlledBy>(unit).is_ok());
    session.release_controlled(&mut world, id, unit).unwrap();
    assert!(world.get::<ControlledBy>(unit).is_err());
    assert!(world.get::<PlayerInput<common::game::Move>>(unit).is_err());
    assert!(session.server().controlled(id).is_empty());
}
