//! Hostile-input fuzzing of the replication wire formats: at least 100 000
//! proptest cases (set `FUZZ_CASES` for more) of arbitrary bytes, bytes
//! with a valid header and checksum (so the body checks are reached), and
//! valid packets with flipped bits, fed to the snapshot decoder, to a live
//! client (which must refuse or apply, never panic or grow without bound),
//! as acknowledgements to a live server (which must refuse them or change
//! only that client's bookkeeping), as input datagrams (arbitrary, sealed,
//! and valid ones with flipped bits, resealed) to the server and a live
//! input buffer, as reliable-channel datagrams to a live endpoint, and as
//! typed messages to the arena's decoder. Exits non-zero on the first
//! failure.
//!
//! `cargo bench -p ecs-bench --bench replication_fuzz`

use std::cell::RefCell;
use std::time::Instant;

use ecs_core::World;
use ecs_examples::arena::{ArenaEvent, Steer};
use ecs_examples::cubes::{CubeConfig, CubeScene, registry};
use ecs_replication::codec::{Limits, WIRE_VERSION, decode, seal};
use ecs_replication::input::{InputBuffer, decode_upstream, encode_upstream, seal_upstream};
use ecs_replication::prelude::*;
use ecs_replication::reliable::{
    RECEIVE_WINDOW, ReliableConfig, ReliableEndpoint, decode_message, frame_raw_message, seal_datagram,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

fn main() {
    let cases: u32 = std::env::var("FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000).max(100_000);
    let reg = registry().expect("registry");
    let schema = reg.schema().clone();

    // Valid packets to corrupt: a few ticks of the cube scene.
    let mut scene = CubeScene::new(&CubeConfig::default()).expect("scene");
    let mut server = Server::new(scene.world_mut(), registry().expect("registry"), ServerConfig::default());
    server.add_client(ClientId(1), None).expect("client");
    let mut valid = Vec::new();
    for _ in 0..40 {
        scene.step().expect("step");
        server.update(scene.world_mut()).expect("update");
        valid.push(server.packet(ClientId(1)).expect("packet").to_vec());
        let ack = Ack { newest: server.tick(), previous: u32::MAX };
        server.receive(ClientId(1), &ack.to_bytes()).expect("ack");
    }

    // Valid input datagrams to corrupt.
    let valid_inputs: Vec<Vec<u8>> = (0..40u32)
        .map(|i| {
            let inputs: Vec<Steer> =
                (0..4).map(|k| Steer { x: ((i + k) % 3) as i8 - 1, y: (k % 3) as i8 - 1 }).collect();
            encode_upstream(Some(Ack { newest: 1 + i, previous: u32::MAX }), i as u16, 100 + i, &inputs)
        })
        .collect();

    let mut client_world = World::new();
    let client = Client::new(&mut client_world, &reg);
    let inputs = InputBuffer::<Steer>::new(64);
    let endpoint = ReliableEndpoint::new(ReliableConfig::default());
    let start = Instant::now();
    let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
    let strategy = (
        0u8..9,
        proptest::collection::vec(any::<u8>(), 0..1500),
        0usize..40,
        proptest::collection::vec((any::<usize>(), 0u8..8), 1..8),
    );
    // The runner takes a `Fn`: the live server and client sit in a cell.
    let live = RefCell::new((server, client_world, client, 0u64, 0u64, inputs, endpoint));
    let result = runner.run(&strategy, |(mode, mut bytes, which, flips)| {
        let mut live = live.borrow_mut();
        let (server, client_world, client, applied, refused, inputs, endpoint) = &mut *live;
        match mode {
            // Arbitrary bytes.
            0 => {}
            // A valid header and checksum over arbitrary bytes.
            1 => {
                if bytes.len() >= 7 {
                    bytes[0] = 0x5A;
                    bytes[1] = 0xEC;
                    bytes[2] = WIRE_VERSION;
                    seal(&mut bytes, &schema);
                }
            }
            // A valid packet with flipped bits, resealed.
            2 => {
                bytes = valid[which].clone();
                for (at, bit) in &flips {
                    let i = at % bytes.len();
                    bytes[i] ^= 1 << bit;
                }
                seal(&mut bytes, &schema);
            }
            // Acknowledgements: arbitrary bytes to the server.
            3 => {
                let _ = server.receive(ClientId(1), &bytes);
                let _ = server.receive(ClientId(2), &bytes);
                return Ok(());
            }
            // Input datagrams: arbitrary, sealed, and valid ones with
            // flipped bits (resealed), to the decoder, the server (which
            // reads their acknowledgement) and a live input buffer.
            4..=6 => {
                match mode {
                    5 => seal_upstream(&mut bytes),
                    6 => {
                        bytes = valid_inputs[which].clone();
                        for (at, bit) in &flips {
                            let i = at % bytes.len();
                            bytes[i] ^= 1 << bit;
                        }
                        seal_upstream(&mut bytes);
                    }
                    _ => {}
                }
                let _ = decode_upstream::<Steer>(&bytes);
                let _ = server.receive(ClientId(1), &bytes);
                let _ = inputs.receive(&bytes, server.tick());
                let _ = inputs.take(server.tick().wrapping_add(1));
                if inputs.len() > 64 {
                    return Err(TestCaseError::fail("the input buffer grew past its capacity"));
                }
                return Ok(());
            }
            // Reliable-channel datagrams (sealed, so the body checks are
            // reached) to a live endpoint.
            7 => {
                seal_datagram(&mut bytes);
                let _ = endpoint.receive(&bytes);
                while endpoint.take().is_some() {}
                if endpoint.in_flight() > RECEIVE_WINDOW as usize {
                    return Err(TestCaseError::fail("the reliable endpoint grew without bound"));
                }
                return Ok(());
            }
            // Typed messages: arbitrary bits behind a valid frame.
            _ => {
                let _ = decode_message::<ArenaEvent>(&frame_raw_message(&bytes));
                let _ = decode_message::<ArenaEvent>(&bytes);
                return Ok(());
            }
        }
        let _ = decode(&bytes, &schema, Limits::default());
        match client.receive(client_world, &bytes) {
            Ok(_) => *applied += 1,
            Err(_) => *refused += 1,
        }
        if client.len() > 1_000_000 {
            return Err(TestCaseError::fail("the client grew without bound"));
        }
        Ok(())
    });
    let (_, _, client, applied, refused, _, _) = live.into_inner();
    match result {
        Ok(()) => {
            println!(
                "replication_fuzz: {cases} cases passed in {:.1} s ({applied} packets applied, {refused} refused, client holds {})",
                start.elapsed().as_secs_f64(),
                client.len()
            );
        }
        Err(e) => {
            eprintln!("replication_fuzz: FAILED: {e}");
            std::process::exit(1);
        }
    }
}
