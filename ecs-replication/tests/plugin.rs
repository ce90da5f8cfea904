//! The plugins: a server app and a client app over an in-process network,
//! the game's movement system in the server's FixedUpdate and the client's
//! ClientTick, the player predicted on its client.

mod common;

use std::time::Duration;

use common::Position;
use common::game::{Move, registry};
use ecs_core::prelude::*;
use ecs_replication::plugin::{
    ClientTick, LocalInput, ReplicationClient, ReplicationClientPlugin, ReplicationServer, ReplicationServerEvent,
    ReplicationServerPlugin,
};
use ecs_replication::prelude::*;
use ecs_replication::session::{ClientSessionConfig, PlayerInput};
use ecs_replication::transport::SharedNetwork;
use glam::Vec3;

/// The game's movement, the same system on both ends.
fn movement(mut players: Query<(&PlayerInput<Move>, &mut Position)>) {
    players.for_each_mut(|(input, mut p)| {
        let step = Vec3::new(input.0.dx as f32, input.0.dy as f32, 0.0) * 0.05;
        let q = ecs_replication::quantize::PositionQuantizer::new(0.01, 20).unwrap();
        p.0 = q.dequantize(q.quantize(p.0 + step).unwrap());
    });
}

/// Server: a new client gets a player (the world and the server resource
/// both, so through a command).
fn spawn_players(mut events: EventReader<ReplicationServerEvent>, mut commands: Commands) {
    for event in events.read() {
        if let ReplicationServerEvent::Connected(id) = *event {
            commands.add(move |world: &mut World| {
                let player = world.spawn((Replicated, Position(Vec3::ZERO)));
                let mut server = world.remove_resource::<ReplicationServer<Move>>().expect("the plugin's resource");
                let result = server.set_controlled(world, id, player);
                world.insert_resource(server);
                result.expect("a connected client");
                Ok(())
            });
        }
    }
}

#[test]
fn a_server_app_and_a_client_app_play_over_the_plugins() {
    let net = SharedNetwork::new();
    let id = ClientId(3);
    net.lock().connect(id, LinkConfig::clean(3), LinkConfig::clean(3), 5);
    let frame = Duration::from_nanos(16_666_667);

    let mut server = App::new();
    server
        .insert_resource(TimeUpdateStrategy::ManualDuration(frame))
        .add_plugins(ReplicationServerPlugin::<Move>::new(registry(), ServerConfig::default(), net.server()))
        .add_systems(FixedUpdate, movement)
        .add_systems(Update, spawn_players);

    let mut client = App::new();
    client
        .insert_resource(TimeUpdateStrategy::ManualDuration(frame))
        .add_plugins(ReplicationClientPlugin::<Move>::new(
            registry(),
            id,
            ClientSessionConfig::default(),
            net.client(id),
        ))
        .add_systems(ClientTick, movement)
        .add_systems(Update, |mut input: ResMut<LocalInput<Move>>, time: Res<Time>| {
            // Right for a second, then up.
            input.0 = if time.elapsed_secs() < 1.0 { Move { dx: 1, dy: 0 } } else { Move { dx: 0, dy: 1 } };
        });

    for _ in 0..240 {
        server.update();
        client.update();
        net.lock().advance();
    }
    let session = &client.world().resource::<ReplicationClient<Move>>().unwrap().session;
    let stats = session.prediction_stats();
    assert!(stats.comparisons > 150, "{stats:?}");
    assert_eq!(stats.mispredictions, 0, "a clean link never mispredicts: {stats:?}");
    // The player moved on the server by the client's inputs: right, then up.
    let world = server.world_mut();
    let p = world.query::<(&Position, &PlayerInput<Move>)>().iter(world).map(|(p, _)| p.0).next().unwrap();
    assert!(p.x > 2.0 && p.y > 1.0, "{p:?}");
    // The client shows its own player ahead of the server: the predicted
    // entity, written by ClientTick.
    let cw = client.world_mut();
    let mine = cw.query_filtered::<&Position, With<ecs_replication::registry::Predicted>>().iter(cw).next().unwrap().0;
    assert!(mine.y >= p.y, "predicted {mine:?} behind the server's {p:?}");
}
