//! The multiplayer arena over real UDP: `arena server`, `arena client`
//! (scripted, or `--play` from the keyboard), and `arena demo`, which
//! starts a server process and two client processes with a link
//! conditioner and prints their summaries.
//!
//! `cargo run --release -p ecs-examples --bin arena -- --help` lists the flags.

use std::io::{BufRead, BufReader, Write as _};
use std::net::SocketAddr;
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use ecs_examples::arena::{ClientOptions, Controls, ServerOptions, Steer, run_client, run_client_with, run_server};

const HELP: &str = "arena: a small multiplayer arena over UDP (renet + netcode): predicted players, interpolated
remote players and projectiles, shots by reliable message, hits found by the server's grid

USAGE:
  arena demo   [--frames N] [--latency MS] [--jitter MS] [--loss P]
  arena server [--address IP:PORT] [--clients N] [--frames N]
  arena client [--server IP:PORT] [--id N] [--frames N] [--latency MS] [--jitter MS] [--loss P] [--play]

  demo          a server process and two client processes on 127.0.0.1, headless and scripted;
                prints every process's summary (RTT, mispredictions and corrections per second,
                late inputs, bandwidth up and down per client)
  --address     where the server listens (default 127.0.0.1:5050; port 0: any)
  --server      the server a client joins (default 127.0.0.1:5050)
  --clients N   most clients, 1..=64 (default 2)
  --id N        a client's id, 1..=2^32 (default 1)
  --frames N    frames at 60 Hz once connected, 1..=1000000 (default 600: ten seconds)
  --latency MS  one-way latency a client's link conditioner adds each way (default 50: 100 ms RTT)
  --jitter MS   extra random latency, 0 to MS, each way (default 20)
  --loss P      share of datagrams lost each way, 0..=0.9 (default 0.05)
  --play        steer with w/a/s/d (x stops) and fire with f, each followed by Enter;
                the arena is drawn twice a second (@ you, P others, * projectiles)
  -h, --help    this text";

#[derive(Clone, Debug, PartialEq)]
enum Mode {
    Demo,
    Server(ServerOptions),
    Client(ClientOptions, bool),
}

#[derive(Clone, Debug, PartialEq)]
struct Options {
    mode: Mode,
    frames: u64,
    latency_ms: u32,
    jitter_ms: u32,
    loss: f64,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Option<Options>, String> {
    let Some(mode) = args.next() else { return Err("a mode is needed: demo, server or client".into()) };
    let default_address: SocketAddr = SocketAddr::from(([127, 0, 0, 1], 5050));
    let mut server =
        ServerOptions { address: default_address, clients: 2, frames: 600, connect_timeout: Duration::from_secs(30) };
    let mut client =
        ClientOptions { server: default_address, id: 1, frames: 600, latency_ms: 50, jitter_ms: 20, loss: 0.05 };
    let mut play = false;
    let mut frames = 600;
    let mut args = args.peekable();
    while let Some(flag) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        let number = |name: &str, v: String| v.parse::<u64>().map_err(|_| format!("{name}: not a count: {v}"));
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--address" => {
                let v = value("--address")?;
                server.address = v.parse().map_err(|_| format!("--address: not an IP:PORT address: {v}"))?;
            }
            "--server" => {
                let v = value("--server")?;
                client.server = v.parse().map_err(|_| format!("--server: not an IP:PORT address: {v}"))?;
            }
            "--clients" => {
                server.clients = number("--clients", value("--clients")?)? as usize;
                if !(1..=64).contains(&server.clients) {
                    return Err("--clients must be between 1 and 64".into());
                }
            }
            "--id" => {
                client.id = number("--id", value("--id")?)?;
                if !(1..=1u64 << 32).contains(&client.id) {
                    return Err("--id must be between 1 and 4294967296".into());
                }
            }
            "--frames" => {
                frames = number("--frames", value("--frames")?)?;
                if !(1..=1_000_000).contains(&frames) {
                    return Err("--frames must be between 1 and 1000000".into());
                }
            }
            "--latency" => client.latency_ms = number("--latency", value("--latency")?)?.min(10_000) as u32,
            "--jitter" => client.jitter_ms = number("--jitter", value("--jitter")?)?.min(10_000) as u32,
            "--loss" => {
                let v = value("--loss")?;
                client.loss = v.parse().map_err(|_| format!("--loss: not a share: {v}"))?;
                if !(0.0..=0.9).contains(&client.loss) {
                    return Err("--loss must be between 0 and 0.9".into());
                }
            }
            "--play" => play = true,
            other => return Err(format!("unknown flag {other} (try --help)")),
        }
    }
    server.frames = frames;
    client.frames = frames;
    let (latency_ms, jitter_ms, loss) = (client.latency_ms, client.jitter_ms, client.loss);
    let mode = match mode.as_str() {
        "demo" => Mode::Demo,
        "server" => Mode::Server(server),
        "client" => Mode::Client(client, play),
        "-h" | "--help" => return Ok(None),
        other => return Err(format!("unknown mode {other}: demo, server or client")),
    };
    Ok(Some(Options { mode, frames, latency_ms, jitter_ms, loss }))
}

/// Reads w/a/s/d/x/f lines from stdin into the controls.
fn keyboard() -> Controls {
    let (steer_tx, steer) = std::sync::mpsc::channel();
    let (fire_tx, fire) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut aim = 0u8;
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { return };
            for c in line.chars() {
                let (s, a) = match c {
                    'w' => (Some(Steer { x: 0, y: 1 }), 64),
                    's' => (Some(Steer { x: 0, y: -1 }), 192),
                    'a' => (Some(Steer { x: -1, y: 0 }), 128),
                    'd' => (Some(Steer { x: 1, y: 0 }), 0),
                    'x' => (Some(Steer::default()), aim),
                    'f' => {
                        let _ = fire_tx.send(aim);
                        (None, aim)
                    }
                    _ => (None, aim),
                };
                aim = a;
                if let Some(s) = s {
                    let _ = steer_tx.send(s);
                }
            }
        }
    });
    Controls {
        steer,
        fire,
        show: Box::new(|text| {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "\x1b[2J\x1b[H{text}w/a/s/d x f + Enter");
            let _ = out.flush();
        }),
    }
}

fn demo(o: &Options) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
    let frames = o.frames.to_string();
    let mut server = Command::new(&exe)
        .args(["server", "--address", "127.0.0.1:0", "--clients", "2", "--frames", &frames])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting the server: {e}"))?;
    let mut lines = BufReader::new(server.stdout.take().ok_or("no server output")?).lines();
    let address = loop {
        let line = lines.next().ok_or("the server stopped before listening")?.map_err(|e| e.to_string())?;
        if let Some(a) = line.strip_prefix("listening on ") {
            break a.trim().to_string();
        }
    };
    println!(
        "arena demo: server on {address}, 2 clients, {} frames, link {} ms +- {} ms each way, {:.0} % loss each way",
        o.frames,
        o.latency_ms,
        o.jitter_ms,
        o.loss * 100.0
    );
    let clients: Vec<_> = (1..=2)
        .map(|id| {
            Command::new(&exe)
                .args(["client", "--server", &address, "--id", &id.to_string(), "--frames", &frames])
                .args(["--latency", &o.latency_ms.to_string(), "--jitter", &o.jitter_ms.to_string()])
                .args(["--loss", &o.loss.to_string()])
                .stdout(Stdio::piped())
                .spawn()
                .map_err(|e| format!("starting client {id}: {e}"))
        })
        .collect::<Result<_, _>>()?;
    let mut failed = false;
    for (i, c) in clients.into_iter().enumerate() {
        let out = c.wait_with_output().map_err(|e| e.to_string())?;
        print!("{}", String::from_utf8_lossy(&out.stdout));
        failed |= !out.status.success();
        if !out.status.success() {
            println!("client {} failed ({})", i + 1, out.status);
        }
    }
    for line in lines {
        println!("{}", line.map_err(|e| e.to_string())?);
    }
    let status = server.wait().map_err(|e| e.to_string())?;
    if failed || !status.success() {
        return Err("a process failed".into());
    }
    Ok(())
}

fn run(o: &Options) -> Result<(), String> {
    match &o.mode {
        Mode::Demo => demo(o),
        Mode::Server(options) => {
            let summary = run_server(options, |address| {
                println!("listening on {address}");
                let _ = std::io::stdout().flush();
            })?;
            print!("{summary}");
            Ok(())
        }
        Mode::Client(options, play) => {
            let summary = if *play { run_client_with(options, Some(keyboard()))? } else { run_client(options)? };
            println!("{summary}");
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    ecs_examples::cli::main_with("arena", HELP, parse, run)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> impl Iterator<Item = String> {
        list.iter().map(|s| s.to_string()).collect::<Vec<_>>().into_iter()
    }

    #[test]
    fn flags() {
        let o = parse(args(&["demo", "--frames", "300", "--loss", "0.1"])).unwrap().unwrap();
        assert_eq!((o.mode, o.frames, o.loss), (Mode::Demo, 300, 0.1));
        assert!(parse(args(&["client", "--loss", "2"])).is_err());
        assert!(parse(args(&["server", "--clients", "0"])).is_err());
        assert!(parse(args(&["nope"])).is_err());
        assert!(parse(args(&[])).is_err());
        assert_eq!(parse(args(&["client", "--help"])), Ok(None));
    }
}
