//! Snapshots over real UDP on loopback through renet + renet_netcode.
#![cfg(feature = "udp")]

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::*;
use ecs_core::World;
use ecs_replication::prelude::*;
use ecs_replication::transport::udp::{DEMO_KEY, UdpClient, UdpServer};
use ecs_replication::transport::{pump_client, serve};

#[test]
fn two_clients_converge_over_loopback_udp() {
    let mut rng = Rng(42);
    let mut world = World::new();
    let mut scene = Scene::new(&mut world, &mut rng, 30, 20.0);
    let mut server = Server::new(&mut world, registry(), ServerConfig::default());
    let protocol = registry().schema().hash() as u64;
    let local: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut transport = UdpServer::bind(local, 4, protocol, DEMO_KEY).unwrap();
    let mut clients: Vec<(World, Client, UdpClient)> = (1..=2)
        .map(|id| {
            let token = transport.connect_token(id).unwrap();
            let mut cw = World::new();
            let client = Client::new(&mut cw, &registry());
            (cw, client, UdpClient::connect(local, token).unwrap())
        })
        .collect();

    // Run until both clients connected and the scene has changed for a
    // while; at most a few thousand short steps (the loop ends on progress,
    // no timing is asserted).
    let mut last = Instant::now();
    let mut ticks_with_both = 0;
    let mut settled = 0;
    for _ in 0..5000 {
        std::thread::sleep(Duration::from_millis(2));
        let dt = last.elapsed();
        last = Instant::now();
        let mutate = ticks_with_both < 60;
        if server.clients().count() == 2 && mutate {
            scene.mutate(&mut world, &mut rng, 40);
        }
        serve(&mut server, &mut world, &mut transport, dt, None).unwrap();
        for (cw, client, udp) in &mut clients {
            pump_client(client, cw, udp, dt).unwrap();
        }
        if server.clients().count() == 2 {
            ticks_with_both += 1;
        }
        if !mutate {
            let done = server.clients().zip(&clients).all(|(id, (cw, c, _))| {
                check_client(&server, id, c, cw, CheckOptions::default()).is_ok_and(|r| r.is_match())
            });
            if done {
                settled += 1;
                if settled > 5 {
                    break;
                }
            }
        }
    }
    assert_eq!(transport.connected_clients(), 2);
    for (id, (cw, client, _)) in server.clients().zip(&clients) {
        assert_in_sync(&server, id, client, cw, "over UDP");
        assert_eq!(cw.len() as usize, client.len());
        assert!(client.counters().applied > 10);
    }
    assert!(settled > 5);
}

#[test]
fn reliable_messages_ride_renets_ordered_channel() {
    use ecs_replication::transport::{ClientTransport, ServerTransport};
    let protocol = 7;
    let local: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut server = UdpServer::bind(local, 1, protocol, DEMO_KEY).unwrap();
    let token = server.connect_token(5).unwrap();
    let mut client = UdpClient::connect(local, token).unwrap();
    let id = ClientId(5);
    let (mut to_client, mut to_server) = (Vec::new(), Vec::new());
    let mut sent = false;
    let mut events = Vec::new();
    for _ in 0..3000 {
        std::thread::sleep(Duration::from_millis(1));
        let dt = Duration::from_millis(1);
        server.update(dt, &mut events).unwrap();
        client.update(dt).unwrap();
        if client.is_connected() && server.connected_clients() == 1 && !sent {
            for i in 0..50u8 {
                server.send_message(id, &[i; 3]);
                client.send_message(&[i; 5]);
            }
            sent = true;
        }
        while let Some(m) = server.receive_message(id) {
            to_server.push(m);
        }
        while let Some(m) = client.receive_message() {
            to_client.push(m);
        }
        server.flush().unwrap();
        client.flush().unwrap();
        if to_client.len() == 50 && to_server.len() == 50 {
            break;
        }
    }
    assert_eq!(to_client, (0..50u8).map(|i| vec![i; 3]).collect::<Vec<_>>());
    assert_eq!(to_server, (0..50u8).map(|i| vec![i; 5]).collect::<Vec<_>>());
}
