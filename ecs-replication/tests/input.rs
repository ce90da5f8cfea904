//! Input upstream end to end over a conditioned link: the client's clock
//! runs ahead of the server's, its inputs (with three repeats each) reach
//! the server's buffer before their tick, and the server applies input T at
//! tick T.

use std::time::Duration;

use ecs_core::World;
use ecs_replication::bits::{BitError, BitReader, BitWriter};
use ecs_replication::clock::{ClockConfig, ClockSync};
use ecs_replication::input::{ClientInput, InputBuffer, InputHistory, InputSource};
use ecs_replication::prelude::*;
use ecs_replication::tick::next_tick;
use ecs_replication::transport::{ClientTransport, LocalNetwork, ServerTransport};

#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Steer(u8);

impl ClientInput for Steer {
    fn write(&self, w: &mut BitWriter) {
        w.write_bits(self.0 as u64, 3);
    }
    fn read(r: &mut BitReader<'_>) -> Result<Self, BitError> {
        Ok(Steer(r.read_bits(3)? as u8))
    }
}

fn scripted(tick: u32) -> Steer {
    Steer(((tick / 7) % 8) as u8)
}

struct Outcome {
    ticks: u32,
    on_time: u64,
    late: u64,
    matching: u32,
    largest_datagram: usize,
    rtt: Duration,
}

fn run(link: LinkConfig, frames: u32) -> Outcome {
    let dt = Duration::from_secs_f64(1.0 / 60.0);
    let registry = Registry::new;
    let mut world = World::new();
    let mut server = Server::new(&mut world, registry(), ServerConfig::default());
    let id = ClientId(1);
    server.add_client(id, None).unwrap();
    let mut net = LocalNetwork::new();
    net.connect(id, link, link, 42);
    let mut buffer = InputBuffer::<Steer>::new(64);
    let mut client_world = World::new();
    let mut client = Client::new(&mut client_world, &registry());
    let mut clock = ClockSync::new(ClockConfig::default());
    let mut history = InputHistory::<Steer>::new(128);
    let (mut ticks, mut matching, mut largest) = (0, 0, 0);
    for _ in 0..frames {
        // Server: datagrams in, input for the next tick, update, snapshot out.
        let mut end = net.server();
        while let Some(bytes) = end.receive(id) {
            let _ = server.receive(id, &bytes);
            let _ = buffer.receive(&bytes, server.tick());
        }
        let tick = next_tick(server.tick());
        let (input, source) = buffer.take(tick);
        if source != InputSource::Default {
            ticks += 1;
            if input == scripted(tick) {
                matching += 1;
            }
        }
        server.update(&mut world).unwrap();
        let packets: Vec<Vec<u8>> = server.packets().map(|(_, p)| p.to_vec()).collect();
        for p in packets {
            end.send(id, &p);
        }
        // Client: snapshots in, clock, inputs out.
        let mut end = net.client(id);
        while let Some(bytes) = end.receive() {
            if let Ok(Receipt::Applied { tick, .. }) = client.receive(&mut client_world, &bytes) {
                clock.on_snapshot(tick, client.time_sync());
            }
        }
        let steps = clock.advance(dt);
        if steps > 0 {
            let mut t = clock.tick().wrapping_sub(steps - 1);
            for _ in 0..steps {
                history.push(t, scripted(t));
                t = next_tick(t);
            }
        }
        // Every frame, ticks or not: the timestamps start the clock.
        let ack = client.has_ack().then(|| client.ack());
        let datagram = history.datagram(ack, clock.timestamp(), 3);
        largest = largest.max(datagram.len());
        end.send(&datagram);
        net.advance();
    }
    let stats = buffer.stats();
    Outcome {
        ticks,
        on_time: stats.on_time,
        late: stats.late,
        matching,
        largest_datagram: largest,
        rtt: clock.rtt().unwrap_or_default(),
    }
}

#[test]
fn inputs_reach_the_server_before_their_tick_under_loss_and_jitter() {
    // 100 ms round trip (3 ticks each way), 1 tick of jitter, 5 % loss.
    let link = LinkConfig { loss: 0.05, delay: 3, jitter: 1, duplicate: 0.02, corrupt: 0.0 };
    let out = run(link, 3600);
    assert!(out.ticks > 3400, "{} ticks with inputs", out.ticks);
    // With three repeats a tick's input is lost only if four datagrams in
    // a row are: about 6e-6 at 5 % loss.
    let share = out.matching as f64 / out.ticks as f64;
    assert!(share >= 0.99, "the server used the client's input on {share:.4} of ticks");
    assert!(out.late as f64 <= 0.01 * out.on_time as f64, "{} late of {}", out.late, out.on_time);
    assert!(out.largest_datagram <= 64, "{} bytes", out.largest_datagram);
    let rtt = out.rtt.as_secs_f64() * 1000.0;
    assert!((80.0..=140.0).contains(&rtt), "rtt {rtt} ms");
}

#[test]
fn a_clean_link_has_no_late_inputs() {
    let out = run(LinkConfig::clean(2), 1200);
    assert_eq!(out.late, 0);
    assert_eq!(out.matching, out.ticks);
}
