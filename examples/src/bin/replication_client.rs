//! A replication client for `replication_server`, on an `App`
//! (`ecs_examples::cubes::cube_client_app`): connects over UDP with a
//! connect token (demo key), mirrors the cube scene into its world once
//! synced, acknowledges every snapshot, prints each second what it holds
//! and receives, and clears the mirror if the server drops it.
//!
//! `cargo run --release --bin replication_client -- --help` lists the flags.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use ecs_core::prelude::*;
use ecs_examples::cli;
use ecs_examples::cubes::{
    CubeClientEnd, CubeClientState, CubeConfig, CubeDisconnect, CubeLog, NoInput, cube_client_app, registry,
};
use ecs_replication::plugin::ReplicationClient;
use ecs_replication::prelude::*;
use ecs_replication::transport::udp::{DEMO_KEY, UdpClient, connect_token};

/// replication_client: mirrors the cube scene of replication_server over UDP (renet + netcode)
///
/// The client is connecting until the first snapshot is applied and its clock has a round trip,
/// then synced; it prints each second the newest snapshot tick, the entities it holds, the
/// bandwidth, the packet counters and the round trip. It fails (exit code 1) when there is no
/// connection after 5 s or when the server drops it.
#[derive(Parser, Debug, PartialEq)]
#[command(name = "replication_client")]
struct Options {
    /// The server
    #[arg(long, value_name = "IP:PORT", default_value_t = SocketAddr::from(([127, 0, 0, 1], 5000)))]
    address: SocketAddr,
    /// This client's id, 1..=2^32 [default: from the process id]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1 << 32))]
    id: Option<u64>,
    /// How long to run, 1..=86400
    #[arg(long, value_name = "S", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    seconds: u64,
}

/// How long to wait for the connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Time between frames (the client's ticks follow the server's clock, not
/// the frames).
const FRAME_PAUSE: Duration = Duration::from_millis(4);

fn run(o: &Options) -> Result<(), String> {
    let id = o.id.unwrap_or(u64::from(std::process::id()) + 1);
    let protocol = registry().map_err(|e| e.to_string())?.schema().hash() as u64;
    let token = connect_token(o.address, protocol, &DEMO_KEY, id).map_err(|e| e.to_string())?;
    let local =
        if o.address.is_ipv4() { SocketAddr::from(([0, 0, 0, 0], 0)) } else { "[::]:0".parse().map_err(|_| "ipv6")? };
    let udp = UdpClient::connect(local, token).map_err(|e| e.to_string())?;
    let mut app =
        cube_client_app(&CubeConfig::default(), ClientId(id), udp, CONNECT_TIMEOUT).map_err(|e| e.to_string())?;
    app.build_schedules().map_err(|e| e.to_string())?;
    println!("client {id} connecting to {}", o.address);
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(o.seconds) {
        app.update();
        let world = app.world_mut();
        for line in world.resource_mut::<CubeLog>().map(CubeLog::take).unwrap_or_default() {
            println!("{line}");
        }
        let connecting = world.resource::<State<CubeClientState>>().map(|s| *s.get());
        if let Some(end) = world.resource::<CubeClientEnd>().and_then(|end| end.0) {
            return Err(match end {
                CubeDisconnect::NoConnection(after) => {
                    format!("no connection to {} after {} s (is the server running?)", o.address, after.as_secs())
                }
                other => other.to_string(),
            });
        }
        let client = world.resource::<ReplicationClient<NoInput>>().ok_or("the client plugin is missing")?;
        let gave_up = client.transport::<UdpClient>().is_some_and(UdpClient::is_disconnected);
        if gave_up && connecting == Some(CubeClientState::Connecting) && !client.is_connected() {
            return Err("could not connect (is the server running?)".into());
        }
        if let Some(e) = client.last_error().filter(|_| !gave_up) {
            return Err(format!("transport: {e}"));
        }
        std::thread::sleep(FRAME_PAUSE);
    }
    if let Some(udp) = app
        .world_mut()
        .resource_mut::<ReplicationClient<NoInput>>()
        .and_then(|client| client.transport_mut::<UdpClient>())
    {
        udp.disconnect();
    }
    Ok(())
}

fn main() -> ExitCode {
    cli::main_with("replication_client", run)
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
        let o = p(&["--address", "127.0.0.1:7000", "--id", "3", "--seconds", "5"]).unwrap();
        assert_eq!((o.address.port(), o.id, o.seconds), (7000, Some(3), 5));
        let o = p(&["--id", "4294967296"]).unwrap();
        assert_eq!((o.address, o.id, o.seconds), (SocketAddr::from(([127, 0, 0, 1], 5000)), Some(1 << 32), 30));
        assert!(p(&["-h"]).unwrap_err().contains("--id <N>"));
        assert!(p(&["--id", "0"]).unwrap_err().contains("0 is not in 1..=4294967296"));
        assert!(p(&["--id", "4294967297"]).is_err());
        assert!(p(&["--address", "x"]).unwrap_err().contains("invalid socket address"));
        assert!(p(&["--what"]).unwrap_err().contains("unexpected argument '--what'"));
    }
}
