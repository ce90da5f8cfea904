//! The cube scene served over UDP (renet + renet_netcode) at 60 Hz: prints
//! each second the snapshot bandwidth per client. Start it, then one or
//! more `replication_client`s with the same address.
//!
//! `cargo run --release --bin replication_server -- --help` lists the flags.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use ecs_examples::cubes::{CubeConfig, CubeScene, registry};
use ecs_replication::prelude::*;
use ecs_replication::transport::serve;
use ecs_replication::transport::udp::{DEMO_KEY, UdpServer};

const HELP: &str = "replication_server: the 901-cube scene replicated over UDP (renet + netcode) at 60 Hz

USAGE: replication_server [--address IP:PORT] [--clients N] [--seconds S] [--view RADIUS]

  --address IP:PORT  where to listen (default 127.0.0.1:5000)
  --clients N        most clients at once, 1..=64 (default 4)
  --seconds S        how long to run, 1..=86400 (default 30)
  --view RADIUS      each client sees cubes within RADIUS of the grid centre (default: all)
  -h, --help         this text

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

fn run(o: &Options) -> Result<(), String> {
    let config = CubeConfig::default();
    let mut scene = CubeScene::new(&config).map_err(|e| e.to_string())?;
    let reg = registry().map_err(|e| e.to_string())?;
    let protocol = reg.schema().hash() as u64;
    let mut server = Server::new(scene.world_mut(), reg, ServerConfig::default());
    let mut transport = UdpServer::bind(o.address, o.clients, protocol, DEMO_KEY).map_err(|e| e.to_string())?;
    let view = o.view.map(|radius| View { center: glam::Vec3::ZERO, radius });
    println!("listening on {} for up to {} clients, {} s", transport.address(), o.clients, o.seconds);
    let tick = Duration::from_secs_f64(1.0 / 60.0);
    let start = Instant::now();
    let mut next = start;
    let mut last = start;
    let mut second_bytes: std::collections::BTreeMap<ClientId, usize> = Default::default();
    let mut next_report = start + Duration::from_secs(1);
    while start.elapsed() < Duration::from_secs(o.seconds) {
        next += tick;
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let dt = last.elapsed();
        last = Instant::now();
        scene.step().map_err(|e| e.to_string())?;
        let step = serve(&mut server, scene.world_mut(), &mut transport, dt, view).map_err(|e| e.to_string())?;
        for id in &step.connected {
            println!("client {} connected", id.0);
        }
        for id in &step.disconnected {
            println!("client {} left", id.0);
            second_bytes.remove(id);
        }
        for (id, bytes) in step.bytes {
            *second_bytes.entry(id).or_default() += bytes;
        }
        if Instant::now() >= next_report {
            next_report += Duration::from_secs(1);
            let moving = scene.moving_cubes();
            let line: Vec<String> = second_bytes
                .iter()
                .map(|(id, b)| format!("client {}: {:.1} kbps", id.0, *b as f64 * 8.0 / 1000.0))
                .collect();
            println!(
                "tick {:>5}  moving cubes {moving:>3}  {}",
                server.tick(),
                if line.is_empty() { "no clients".into() } else { line.join(", ") }
            );
            for b in second_bytes.values_mut() {
                *b = 0;
            }
        }
    }
    for id in server.clients().collect::<Vec<_>>() {
        if let Some(s) = server.client_stats(id) {
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
