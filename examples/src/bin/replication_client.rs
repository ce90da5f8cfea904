//! A replication client for `replication_server`: connects over UDP with a
//! connect token (demo key), mirrors the cube scene into its own world,
//! acknowledges every snapshot, and prints each second what it holds and
//! receives.
//!
//! `cargo run --release --bin replication_client -- --help` lists the flags.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use ecs_core::World;
use ecs_examples::cubes::registry;
use ecs_replication::prelude::*;
use ecs_replication::transport::udp::{DEMO_KEY, UdpClient, connect_token};
use ecs_replication::transport::{ClientTransport, pump_client};

const HELP: &str = "replication_client: mirrors the cube scene of replication_server over UDP (renet + netcode)

USAGE: replication_client [--address IP:PORT] [--id N] [--seconds S]

  --address IP:PORT  the server (default 127.0.0.1:5000)
  --id N             this client's id, 1..=2^32 (default: from the process id)
  --seconds S        how long to run, 1..=86400 (default 30)
  -h, --help         this text";

#[derive(Debug, PartialEq)]
struct Options {
    address: SocketAddr,
    id: u64,
    seconds: u64,
}

fn parse(args: impl Iterator<Item = String>) -> Result<Option<Options>, String> {
    let mut o =
        Options { address: SocketAddr::from(([127, 0, 0, 1], 5000)), id: std::process::id() as u64 + 1, seconds: 30 };
    let mut args = args.peekable();
    while let Some(flag) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--address" => {
                let v = value("--address")?;
                o.address = v.parse().map_err(|_| format!("--address: not an IP:PORT address: {v}"))?;
            }
            "--id" => {
                let v = value("--id")?;
                o.id = v.parse().map_err(|_| format!("--id: not a number: {v}"))?;
                if !(1..=1u64 << 32).contains(&o.id) {
                    return Err("--id must be between 1 and 4294967296".into());
                }
            }
            "--seconds" => {
                let v = value("--seconds")?;
                o.seconds = v.parse().map_err(|_| format!("--seconds: not a count: {v}"))?;
                if !(1..=86_400).contains(&o.seconds) {
                    return Err("--seconds must be between 1 and 86400".into());
                }
            }
            other => return Err(format!("unknown flag {other} (try --help)")),
        }
    }
    Ok(Some(o))
}

fn run(o: &Options) -> Result<(), String> {
    let reg = registry().map_err(|e| e.to_string())?;
    let protocol = reg.schema().hash() as u64;
    let token = connect_token(o.address, protocol, &DEMO_KEY, o.id).map_err(|e| e.to_string())?;
    let local =
        if o.address.is_ipv4() { SocketAddr::from(([0, 0, 0, 0], 0)) } else { "[::]:0".parse().map_err(|_| "ipv6")? };
    let mut udp = UdpClient::connect(local, token).map_err(|e| e.to_string())?;
    let mut world = World::new();
    let mut client = Client::new(&mut world, &reg);
    println!("client {} connecting to {}", o.id, o.address);
    let start = Instant::now();
    let mut last = start;
    let mut next_report = start + Duration::from_secs(1);
    let mut last_bytes = 0;
    let mut was_connected = false;
    while start.elapsed() < Duration::from_secs(o.seconds) {
        std::thread::sleep(Duration::from_millis(4));
        let dt = last.elapsed();
        last = Instant::now();
        pump_client(&mut client, &mut world, &mut udp, dt).map_err(|e| e.to_string())?;
        if udp.is_connected() && !was_connected {
            println!("connected");
            was_connected = true;
        }
        if !was_connected && start.elapsed() > Duration::from_secs(5) {
            return Err(format!("no connection to {} after 5 s (is the server running?)", o.address));
        }
        if udp.is_disconnected() {
            return Err(if was_connected {
                "disconnected by the server"
            } else {
                "could not connect (is the server running?)"
            }
            .into());
        }
        if Instant::now() >= next_report {
            next_report += Duration::from_secs(1);
            let c = client.counters();
            println!(
                "tick {:>5}  entities {:>4}  {:.1} kbps  applied {} stale {} refused {}  rtt {:.1} ms",
                client.last_applied(),
                client.len(),
                (c.bytes_received - last_bytes) as f64 * 8.0 / 1000.0,
                c.applied,
                c.stale,
                c.refused,
                udp.rtt() * 1000.0
            );
            last_bytes = c.bytes_received;
        }
    }
    udp.disconnect();
    Ok(())
}

fn main() -> ExitCode {
    ecs_examples::cli::main_with("replication_client", HELP, parse, run)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Option<Options>, String> {
        parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn flags() {
        let o = p(&["--address", "127.0.0.1:7000", "--id", "3", "--seconds", "5"]).unwrap().unwrap();
        assert_eq!((o.address.port(), o.id, o.seconds), (7000, 3, 5));
        assert_eq!(p(&["-h"]), Ok(None));
        assert!(p(&["--id", "0"]).unwrap_err().contains("between 1"));
        assert!(p(&["--address", "x"]).unwrap_err().contains("IP:PORT"));
        assert!(p(&["--what"]).unwrap_err().contains("unknown flag"));
    }
}
