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

use clap::Parser;
use ecs_core::prelude::*;
use ecs_examples::cli;
use ecs_examples::cubes::{CubeConfig, CubeLog, NoInput, cube_server_app, registry};
use ecs_replication::plugin::ReplicationServer;
use ecs_replication::prelude::*;
use ecs_replication::transport::udp::{DEMO_KEY, UdpServer};

/// replication_server: the 901-cube scene replicated over UDP (renet + netcode) at 60 Hz
///
/// The server waits for clients; the first one to connect starts the scene (spawned fresh), which
/// then steps in fixed steps of 1/60 s on the real clock, each followed by one snapshot per client;
/// when the last client leaves, the scene is cleared. Each second it prints the tick, the moving
/// cubes and each client's snapshot bandwidth; at the end, each connected client's counters.
///
/// Clients connect with `replication_client --address IP:PORT` (demo key; see ecs-replication's README).
#[derive(Parser, Debug, PartialEq)]
#[command(name = "replication_server")]
struct Options {
    /// Where to listen (port 0: any free port, printed at the start)
    #[arg(long, value_name = "IP:PORT", default_value_t = SocketAddr::from(([127, 0, 0, 1], 5000)))]
    address: SocketAddr,
    /// Most clients at once, 1..=64
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = cli::count(1..=64))]
    clients: usize,
    /// How long to run, 1..=86400
    #[arg(long, value_name = "S", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    seconds: u64,
    /// Each client sees cubes within RADIUS of the grid centre, a positive number [default: all]
    #[arg(long, value_name = "RADIUS", value_parser = radius)]
    view: Option<f32>,
}

/// `--view`'s value parser: a positive, finite radius.
fn radius(text: &str) -> Result<f32, String> {
    match text.parse::<f32>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(r),
        _ => Err(format!("`{text}` is not a positive radius")),
    }
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
    cli::main_with("replication_server", run)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Options, String> {
        cli::parse_from(args).map_err(|e| e.to_string())
    }

    #[test]
    fn flags() {
        use clap::CommandFactory as _;
        Options::command().debug_assert();
        let o = p(&["--address", "127.0.0.1:7000", "--clients", "2", "--seconds", "5", "--view", "10"]).unwrap();
        assert_eq!(o.address.port(), 7000);
        assert_eq!((o.clients, o.seconds, o.view), (2, 5, Some(10.0)));
        let o = p(&[]).unwrap();
        assert_eq!((o.address, o.clients, o.seconds, o.view), (SocketAddr::from(([127, 0, 0, 1], 5000)), 4, 30, None));
        assert!(p(&["--help"]).unwrap_err().contains("--view <RADIUS>"));
        assert!(p(&["--clients", "0"]).unwrap_err().contains("0 is not in 1..=64"));
        assert!(p(&["--seconds", "86401"]).unwrap_err().contains("86401 is not in 1..=86400"));
        assert!(p(&["--address", "nowhere"]).unwrap_err().contains("invalid socket address"));
        for bad in ["0", "-1", "NaN", "inf", "far"] {
            assert!(p(&[&format!("--view={bad}")]).unwrap_err().contains("is not a positive radius"), "--view {bad}");
        }
        assert!(p(&["--seconds"]).unwrap_err().contains("a value is required"));
        assert!(p(&["--bogus"]).unwrap_err().contains("unexpected argument '--bogus'"));
    }
}
