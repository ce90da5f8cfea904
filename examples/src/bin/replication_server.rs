//! The cube scene served over UDP (renet + renet_netcode) at 60 Hz, on an
//! `App` (`ecs_examples::cubes::cube_server_app`): it waits for clients,
//! spawns the scene when the first one connects, steps it and sends the
//! snapshots in each fixed step, clears it when the last one leaves, and
//! prints each second the snapshot bandwidth per client. Start it, then one
//! or more `replication_client`s with the same address.
//!
//! `cargo run --release --bin replication_server -- --help` lists the flags.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use ecs_core::prelude::*;
use ecs_examples::cubes::{CubeConfig, CubeLog, NoInput, cube_server_app, registry};
use ecs_replication::plugin::ReplicationServer;
use ecs_replication::prelude::*;
use ecs_replication::transport::udp::{DEMO_KEY, UdpServer};

const HELP: &str = "replication_server: the 901-cube scene replicated over UDP (renet + netcode) at 60 Hz

USAGE: replication_server [--address IP:PORT] [--clients N] [--seconds S] [--view RADIUS]

  --address IP:PORT  where to listen (default 127.0.0.1:5000)
  --clients N        most clients at once, 1..=64 (default 4)
  --seconds S        how long to run, 1..=86400 (default 30)
  --view RADIUS      each client sees cubes within RADIUS of the grid centre (default: all)
  -h, --help         this text

The server waits for clients; the first one to connect starts the scene (spawned fresh), which
then steps in fixed steps of 1/60 s on the real clock, each followed by one snapshot per client;
when the last client leaves, the scene is cleared. Each second it prints the tick, the moving
cubes and each client's snapshot bandwidth; at the end, each connected client's counters.

Clients connect with `replication_client --address IP:PORT` (demo key; see ecs-replication's README).";

#[derive(Debug, PartialEq)]
struct Options {
    address: SocketAddr,
    clients: usize,
    seconds: u64,
    view: Option<f32>,
}

fn parse(args: impl Iterator<Item = String>) -> Result<Option<Options>, String> {
    let mut o = Options { address: SocketAddr::from(([127, 0, 0, 1], 5000)), clients: 4, seconds: 30, view: None };
    let mut args = args.peekable();
    while let Some(flag) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--address" => {
                let v = value("--address")?;
                o.address = v.parse().map_err(|_| format!("--address: not an IP:PORT address: {v}"))?;
            }
            "--clients" => {
                let v = value("--clients")?;
                o.clients = v.parse().map_err(|_| format!("--clients: not a count: {v}"))?;
                if !(1..=64).contains(&o.clients) {
                    return Err("--clients must be between 1 and 64".into());
                }
            }
            "--seconds" => {
                let v = value("--seconds")?;
                o.seconds = v.parse().map_err(|_| format!("--seconds: not a count: {v}"))?;
                if !(1..=86_400).contains(&o.seconds) {
                    return Err("--seconds must be between 1 and 86400".into());
                }
            }
            "--view" => {
                let v = value("--view")?;
                let r: f32 = v.parse().map_err(|_| format!("--view: not a number: {v}"))?;
                if !(r.is_finite() && r > 0.0) {
                    return Err("--view must be a positive radius".into());
                }
                o.view = Some(r);
            }
            other => return Err(format!("unknown flag {other} (try --help)")),
        }
    }
    Ok(Some(o))
}

/// Past the fixed step's boundary by this much when a frame wakes, so the
/// frame runs that step.
const WAKE_MARGIN: Duration = Duration::from_micros(500);

fn run(o: &Options) -> Result<(), String> {
    let config = CubeConfig::default();
    let protocol = registry().map_err(|e| e.to_string())?.schema().hash() as u64;
    let transport = UdpServer::bind(o.address, o.clients, protocol, DEMO_KEY).map_err(|e| e.to_string())?;
    let address = transport.address();
    let view = o.view.map(|radius| View { center: glam::Vec3::ZERO, radius });
    let mut app = cube_server_app(&config, view, transport).map_err(|e| e.to_string())?;
    app.build_schedules().map_err(|e| e.to_string())?;
    println!("listening on {address} for up to {} clients, {} s", o.clients, o.seconds);
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(o.seconds) {
        app.update();
        let world = app.world_mut();
        for line in world.resource_mut::<CubeLog>().map(CubeLog::take).unwrap_or_default() {
            println!("{line}");
        }
        let server = world.resource::<ReplicationServer<NoInput>>().ok_or("the server plugin is missing")?;
        if let Some(e) = server.last_error() {
            return Err(format!("transport: {e}"));
        }
        // Sleep until the next fixed step is due: one step per frame.
        let fixed = world.resource::<Time<Fixed>>().ok_or("no fixed clock")?;
        std::thread::sleep(fixed.timestep().saturating_sub(fixed.overstep()) + WAKE_MARGIN);
    }
    let server = app.world().resource::<ReplicationServer<NoInput>>().ok_or("the server plugin is missing")?;
    let snapshots = server.session.server();
    for id in snapshots.clients() {
        if let Some(s) = snapshots.client_stats(id) {
            println!(
                "client {}: {} packets, {} bytes, {} entries sent, {} deferred by the budget, {} full resyncs",
                id.0, s.packets, s.bytes_sent, s.entries_sent, s.entries_deferred, s.full_resyncs
            );
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    ecs_examples::cli::main_with("replication_server", HELP, parse, run)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Option<Options>, String> {
        parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn flags() {
        let o =
            p(&["--address", "127.0.0.1:7000", "--clients", "2", "--seconds", "5", "--view", "10"]).unwrap().unwrap();
        assert_eq!(o.address.port(), 7000);
        assert_eq!((o.clients, o.seconds, o.view), (2, 5, Some(10.0)));
        assert_eq!(p(&["--help"]), Ok(None));
        assert!(p(&["--clients", "0"]).unwrap_err().contains("between 1 and 64"));
        assert!(p(&["--address", "nowhere"]).unwrap_err().contains("IP:PORT"));
        assert!(p(&["--seconds"]).unwrap_err().contains("needs a value"));
        assert!(p(&["--bogus"]).unwrap_err().contains("unknown flag"));
    }
}
