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

use clap::{Args, Parser, Subcommand};
use ecs_examples::arena::{ClientOptions, Controls, ServerOptions, Steer, run_client, run_client_with, run_server};
use ecs_examples::cli;

/// arena: a small multiplayer arena over UDP (renet + netcode): predicted players, interpolated
/// remote players and projectiles, shots by reliable message, hits found by the server's grid
#[derive(Parser, Debug, PartialEq)]
#[command(name = "arena")]
struct Options {
    #[command(subcommand)]
    mode: Mode,
}

// The modes; each takes only its own flags.
#[derive(Subcommand, Debug, PartialEq)]
enum Mode {
    /// A server process and two client processes on 127.0.0.1, headless and scripted; prints
    /// every process's summary (RTT, mispredictions and corrections per second, late inputs,
    /// bandwidth up and down per client)
    Demo {
        #[command(flatten)]
        run: Frames,
        #[command(flatten)]
        link: Link,
    },
    /// The server: waits for a client (30 s at most), runs the arena at 60 Hz, then prints its
    /// summary (shots, hits, each client's late inputs and bandwidth)
    Server(ServerFlags),
    /// A client: joins the server through a link conditioner and plays scripted, or from the
    /// keyboard with --play
    Client(ClientFlags),
}

/// How long a run lasts.
#[derive(Args, Clone, Copy, Debug, PartialEq)]
struct Frames {
    /// Frames at 60 Hz once connected, 1..=1000000 (600: ten seconds)
    #[arg(long, value_name = "N", default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    frames: u64,
}

/// The link conditioner of a client, the same each way.
#[derive(Args, Clone, Copy, Debug, PartialEq)]
struct Link {
    /// One-way latency the link conditioner adds each way, 0..=10000 (50: 100 ms RTT)
    #[arg(long, value_name = "MS", default_value_t = 50, value_parser = clap::value_parser!(u32).range(0..=10_000))]
    latency: u32,
    /// Extra random latency, 0 to MS, each way, 0..=10000
    #[arg(long, value_name = "MS", default_value_t = 20, value_parser = clap::value_parser!(u32).range(0..=10_000))]
    jitter: u32,
    /// Share of datagrams lost each way, 0.0..=0.9
    #[arg(long, value_name = "P", default_value_t = 0.05, value_parser = cli::within(0.0..=0.9))]
    loss: f64,
}

/// The flags of `arena server`.
#[derive(Args, Clone, Copy, Debug, PartialEq)]
struct ServerFlags {
    /// Where the server listens (port 0: any)
    #[arg(long, value_name = "IP:PORT", default_value_t = DEFAULT_ADDRESS)]
    address: SocketAddr,
    /// Most clients, 1..=64
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = cli::count(1..=64))]
    clients: usize,
    #[command(flatten)]
    run: Frames,
}

/// The flags of `arena client`.
#[derive(Args, Clone, Copy, Debug, PartialEq)]
struct ClientFlags {
    /// The server a client joins
    #[arg(long, value_name = "IP:PORT", default_value_t = DEFAULT_ADDRESS)]
    server: SocketAddr,
    /// A client's id, 1..=2^32
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1 << 32))]
    id: u64,
    #[command(flatten)]
    run: Frames,
    #[command(flatten)]
    link: Link,
    /// Steer with w/a/s/d (x stops) and fire with f, each followed by Enter; the arena is drawn
    /// twice a second (@ you, P others, * projectiles)
    #[arg(long)]
    play: bool,
}

/// Where the server listens and the clients connect unless told otherwise.
const DEFAULT_ADDRESS: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 5050);

impl ServerFlags {
    fn options(&self) -> ServerOptions {
        ServerOptions {
            address: self.address,
            clients: self.clients,
            frames: self.run.frames,
            connect_timeout: Duration::from_secs(30),
        }
    }
}

impl ClientFlags {
    fn options(&self) -> ClientOptions {
        ClientOptions {
            server: self.server,
            id: self.id,
            frames: self.run.frames,
            latency_ms: self.link.latency,
            jitter_ms: self.link.jitter,
            loss: self.link.loss,
        }
    }
}

/// The command line of the demo's server process.
fn server_args(run: Frames) -> Vec<String> {
    ["server", "--address", "127.0.0.1:0", "--clients", "2", "--frames", &run.frames.to_string()]
        .map(String::from)
        .to_vec()
}

/// The command line of the demo's client process `id`.
fn client_args(address: &str, id: u64, run: Frames, link: Link) -> Vec<String> {
    let mut args = vec!["client".into(), "--server".into(), address.into(), "--id".into(), id.to_string()];
    args.extend(["--frames".into(), run.frames.to_string(), "--latency".into(), link.latency.to_string()]);
    args.extend(["--jitter".into(), link.jitter.to_string(), "--loss".into(), link.loss.to_string()]);
    args
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

fn demo(run: Frames, link: Link) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
    let mut server = Command::new(&exe)
        .args(server_args(run))
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
        run.frames,
        link.latency,
        link.jitter,
        link.loss * 100.0
    );
    let clients: Vec<_> = (1..=2)
        .map(|id| {
            Command::new(&exe)
                .args(client_args(&address, id, run, link))
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
    match o.mode {
        Mode::Demo { run, link } => demo(run, link),
        Mode::Server(flags) => {
            let summary = run_server(&flags.options(), |address| {
                println!("listening on {address}");
                let _ = std::io::stdout().flush();
            })?;
            print!("{summary}");
            Ok(())
        }
        Mode::Client(flags) => {
            let options = flags.options();
            let summary = if flags.play { run_client_with(&options, Some(keyboard()))? } else { run_client(&options)? };
            println!("{summary}");
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    cli::main_with("arena", run)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, clap::Error> {
        cli::parse_from(args)
    }

    #[test]
    fn flags() {
        use clap::CommandFactory as _;
        use clap::error::ErrorKind;
        Options::command().debug_assert();
        let o = parse(&["demo", "--frames", "300", "--loss", "0.1"]).unwrap();
        let link = Link { latency: 50, jitter: 20, loss: 0.1 };
        assert_eq!(o.mode, Mode::Demo { run: Frames { frames: 300 }, link });
        let Mode::Server(server) = parse(&["server"]).unwrap().mode else { panic!("not a server") };
        let defaults = ServerOptions {
            address: DEFAULT_ADDRESS,
            clients: 2,
            frames: 600,
            connect_timeout: Duration::from_secs(30),
        };
        assert_eq!(server.options(), defaults);
        let Mode::Client(client) = parse(&["client", "--id", "7", "--play"]).unwrap().mode else { panic!("no client") };
        let defaults =
            ClientOptions { server: DEFAULT_ADDRESS, id: 7, frames: 600, latency_ms: 50, jitter_ms: 20, loss: 0.05 };
        assert_eq!((client.options(), client.play), (defaults, true));
        assert!(parse(&["client", "--loss", "2"]).is_err());
        assert!(parse(&["client", "--latency", "10001"]).is_err());
        assert!(parse(&["server", "--clients", "0"]).is_err());
        // Each mode takes only its own flags.
        assert!(parse(&["server", "--play"]).is_err());
        assert!(parse(&["demo", "--address", "127.0.0.1:1"]).is_err());
        assert_eq!(parse(&["nope"]).unwrap_err().kind(), ErrorKind::InvalidSubcommand);
        assert_eq!(parse(&[]).unwrap_err().kind(), ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand);
        assert_eq!(parse(&["client", "--help"]).unwrap_err().kind(), ErrorKind::DisplayHelp);
        assert_eq!(parse(&["--help"]).unwrap_err().kind(), ErrorKind::DisplayHelp);
    }

    #[test]
    fn the_demo_starts_its_processes_with_flags_they_take() {
        let (run, link) = (Frames { frames: 90 }, Link { latency: 10, jitter: 3, loss: 0.25 });
        let Mode::Server(server) = cli::parse_from::<Options, _>(server_args(run)).unwrap().mode else {
            panic!("not a server")
        };
        assert_eq!((server.address.port(), server.clients, server.run), (0, 2, run));
        let args = client_args("127.0.0.1:5999", 2, run, link);
        let Mode::Client(client) = cli::parse_from::<Options, _>(args).unwrap().mode else { panic!("not a client") };
        assert_eq!(
            (client.server.port(), client.id, client.run, client.link, client.play),
            (5999, 2, run, link, false)
        );
    }
}
