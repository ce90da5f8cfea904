//! Reliable ordered messages both ways through a hostile link, beside the
//! snapshots and inputs of a running game.

mod common;

use common::game::*;
use ecs_replication::bits::{BitError, BitReader, BitWriter};
use ecs_replication::prelude::*;
use ecs_replication::reliable::NetMessage;
use ecs_replication::session::ClientSessionConfig;
use ecs_replication::transport::ServerTransport;

#[derive(Clone, Debug, PartialEq)]
enum Event {
    Chat { from: u8, text: Vec<u8> },
    MatchStarts { round: u16 },
}

impl NetMessage for Event {
    fn write(&self, w: &mut BitWriter) {
        match self {
            Event::Chat { from, text } => {
                w.write_bool(false);
                w.write_bits(*from as u64, 8);
                w.write_varint(text.len() as u64);
                for b in text {
                    w.write_bits(*b as u64, 8);
                }
            }
            Event::MatchStarts { round } => {
                w.write_bool(true);
                w.write_bits(*round as u64, 16);
            }
        }
    }
    fn read(r: &mut BitReader<'_>) -> Result<Self, BitError> {
        if r.read_bool()? {
            return Ok(Event::MatchStarts { round: r.read_bits(16)? as u16 });
        }
        let from = r.read_bits(8)? as u8;
        let len = r.read_len(200)? as usize;
        let mut text = Vec::with_capacity(len);
        for _ in 0..len {
            text.push(r.read_bits(8)? as u8);
        }
        Ok(Event::Chat { from, text })
    }
}

#[test]
fn messages_arrive_once_and_in_order_both_ways_under_loss() {
    let link = LinkConfig { loss: 0.2, delay: 3, jitter: 4, duplicate: 0.1, corrupt: 0.02 };
    let mut game = Game::new(2, link, ClientSessionConfig::default());
    let (mut to_server, mut to_clients) = (Vec::new(), vec![Vec::new(), Vec::new()]);
    for frame in 0..900u32 {
        if frame < 600 && frame % 3 == 0 {
            let round = frame as u16;
            game.server.broadcast_message(&Event::MatchStarts { round }).unwrap();
            for (i, (_, _, session)) in game.clients.iter_mut().enumerate() {
                let text = format!("hello {frame}").into_bytes();
                session.send_message(&Event::Chat { from: i as u8, text }).unwrap();
            }
        }
        game.step();
        to_server.extend(game.server.take_messages::<Event>());
        for (i, (_, _, session)) in game.clients.iter_mut().enumerate() {
            to_clients[i].extend(session.take_messages::<Event>());
        }
    }
    let rounds: Vec<Event> = (0..600u32).step_by(3).map(|f| Event::MatchStarts { round: f as u16 }).collect();
    for got in &to_clients {
        assert_eq!(got, &rounds);
    }
    for i in 0..2u8 {
        let from_i: Vec<Event> =
            to_server.iter().filter(|(id, _)| *id == ClientId(1 + i as u64)).map(|(_, e)| e.clone()).collect();
        let want: Vec<Event> =
            (0..600u32).step_by(3).map(|f| Event::Chat { from: i, text: format!("hello {f}").into_bytes() }).collect();
        assert_eq!(from_i, want);
    }
    // The game went on meanwhile.
    assert!(game.clients.iter().all(|(_, _, s)| s.prediction_stats().comparisons > 100));
}

#[test]
fn a_message_of_the_wrong_shape_is_refused_and_counted() {
    let mut game = Game::new(1, LinkConfig::clean(1), ClientSessionConfig::default());
    // Raw bytes on the reliable channel: not a framed message.
    game.net.server().send_message(ClientId(1), &[0xff; 40]);
    game.server.broadcast_message(&Event::MatchStarts { round: 9 }).unwrap();
    for _ in 0..10 {
        game.step();
    }
    let session = &mut game.clients[0].2;
    assert_eq!(session.take_messages::<Event>(), vec![Event::MatchStarts { round: 9 }]);
    assert_eq!(session.message_stats().refused, 1);
}
