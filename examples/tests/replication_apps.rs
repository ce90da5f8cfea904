//! The cube server and client apps (what `replication_server` and
//! `replication_client` run) in one process over an in-process network,
//! on a manual clock of one fixed step per frame: the client converges to
//! the server's world, the states follow the connections (waiting ->
//! running -> waiting, connecting -> synced -> disconnected), a new client
//! after that gets a fresh scene. Then the two binaries themselves over
//! loopback UDP with their flags (every binary's `--help` and bad flags are
//! in `tests/cli.rs`).

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ecs_core::prelude::*;
use ecs_examples::cubes::{
    CubeClientEnd, CubeClientState, CubeClock, CubeConfig, CubeDisconnect, CubeLog, CubeServerState, NoInput,
    cube_client_app, cube_server_app, moving_cubes,
};
use ecs_replication::check::WorldValues;
use ecs_replication::plugin::{ReplicationClient, ReplicationServer};
use ecs_replication::prelude::*;
use ecs_replication::transport::{
    ClientTransport, ConnectionEvent, ServerTransport, SharedClientEnd, SharedNetwork, SharedServerEnd, TransportError,
};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A server app on a manual clock: every frame one fixed step.
fn server_app(transport: impl ServerTransport + Send + Sync + 'static) -> App {
    let mut app = cube_server_app(&CubeConfig::default(), None, transport).unwrap();
    let step = app.world().resource::<Time<Fixed>>().unwrap().timestep();
    app.insert_resource(TimeUpdateStrategy::ManualDuration(step));
    app
}

/// A client app on the same manual clock as [`server_app`].
fn client_app(id: u64, transport: impl ClientTransport + Send + Sync + 'static) -> App {
    let config = CubeConfig::default();
    let mut app = cube_client_app(&config, ClientId(id), transport, CONNECT_TIMEOUT).unwrap();
    app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f64(config.dt as f64)));
    app
}

fn server_state(app: &App) -> CubeServerState {
    *app.world().resource::<State<CubeServerState>>().unwrap().get()
}

fn client_state(app: &App) -> CubeClientState {
    *app.world().resource::<State<CubeClientState>>().unwrap().get()
}

fn log(app: &App) -> &[String] {
    app.world().resource::<CubeLog>().unwrap().lines()
}

fn has_line(app: &App, start: &str) -> bool {
    log(app).iter().any(|l| l.starts_with(start))
}

fn stop_player(server: &mut App) {
    server.world_mut().resource_mut::<CubeClock>().unwrap().player_moving = false;
}

/// Server tick minus the newest tick the client applied.
fn lag(server: &App, client: &App) -> u32 {
    let tick = server.world().resource::<ReplicationServer<NoInput>>().unwrap().session.server().tick();
    let applied = client.world().resource::<ReplicationClient<NoInput>>().unwrap().session.client().last_applied();
    tick.wrapping_sub(applied)
}

/// Whether client `id` holds the server's quantized state of every entity
/// (no more, no fewer) and its world shows it: every mirrored cube where
/// the server has it, to the wire's precision (the crate's own check,
/// `ecs_replication::check::check_client`). `Err` says what differs.
fn mirrors(server: &App, id: ClientId, client: &App) -> Result<(), String> {
    let replication = &server.world().resource::<ReplicationServer<NoInput>>().unwrap().session;
    let session = &client.world().resource::<ReplicationClient<NoInput>>().unwrap().session;
    let options = CheckOptions { at: CheckAt::Newest, world: WorldValues::Exact };
    let report =
        check_client(replication.server(), id, session.client(), client.world(), options).map_err(|e| e.to_string())?;
    if report.is_match() { Ok(()) } else { Err(report.to_string()) }
}

/// One frame of the server, then of every client, then one tick of the
/// network.
fn frame(net: &SharedNetwork, server: &mut App, clients: &mut [&mut App]) {
    server.update();
    for client in clients.iter_mut() {
        client.update();
    }
    net.lock().advance();
}

#[test]
fn client_apps_converge_to_the_server_app_on_a_clean_and_a_lossy_link() {
    let net = SharedNetwork::new();
    let mut server = server_app(net.server());
    let mut clean = client_app(1, net.client(ClientId(1)));
    let mut lossy = client_app(2, net.client(ClientId(2)));
    // Nobody yet: the server waits with no scene.
    for _ in 0..10 {
        frame(&net, &mut server, &mut [&mut clean, &mut lossy]);
    }
    assert_eq!(server_state(&server), CubeServerState::Waiting);
    assert_eq!(server.world().len(), 0);
    assert_eq!(client_state(&clean), CubeClientState::Connecting);

    let bad = LinkConfig { loss: 0.1, delay: 3, jitter: 2, duplicate: 0.02, corrupt: 0.0 };
    net.lock().connect(ClientId(1), LinkConfig::clean(2), LinkConfig::clean(2), 11);
    net.lock().connect(ClientId(2), bad, bad, 12);
    for _ in 0..30 {
        frame(&net, &mut server, &mut [&mut clean, &mut lossy]);
    }
    assert_eq!(server_state(&server), CubeServerState::Running);
    assert_eq!(server.world().len(), 901, "the scene is spawned on entering Running");
    assert!(has_line(&server, "client 1 connected") && has_line(&server, "client 2 connected"), "{:?}", log(&server));
    assert!(has_line(&server, "scene spawned: 901 cubes"), "{:?}", log(&server));
    for client in [&clean, &lossy] {
        assert_eq!(client_state(client), CubeClientState::Synced, "{:?}", log(client));
        assert!(has_line(client, "connected") && has_line(client, "synced: "), "{:?}", log(client));
    }

    // The player walks and pushes: the clean client follows a few ticks
    // behind (two each way, plus a tick in the apps).
    for _ in 0..210 {
        frame(&net, &mut server, &mut [&mut clean, &mut lossy]);
        assert!(lag(&server, &clean) <= 4, "the clean client lags {} ticks", lag(&server, &clean));
    }
    assert!(moving_cubes(server.world_mut()) > 0, "the player pushed cubes");

    // The player stops; once the scene settles both clients hold it exactly.
    stop_player(&mut server);
    let mut settled_at = None;
    for i in 0..900 {
        frame(&net, &mut server, &mut [&mut clean, &mut lossy]);
        if moving_cubes(server.world_mut()) == 0
            && mirrors(&server, ClientId(1), &clean).is_ok()
            && mirrors(&server, ClientId(2), &lossy).is_ok()
        {
            settled_at = Some(i);
            break;
        }
    }
    assert!(
        settled_at.is_some(),
        "no convergence: clean {:?}, lossy {:?}",
        mirrors(&server, ClientId(1), &clean),
        mirrors(&server, ClientId(2), &lossy)
    );
    // The per-second lines: the server's bandwidth per client, the
    // clients' full scene.
    assert!(log(&server).iter().any(|l| l.starts_with("tick") && l.contains("client 2:")), "{:?}", log(&server));
    for client in [&clean, &lossy] {
        assert!(log(client).iter().any(|l| l.starts_with("tick") && l.contains("entities  901")), "{:?}", log(client));
        assert_eq!(client.world().resource::<CubeClientEnd>().unwrap().0, None);
    }
    let lossy_counters = lossy.world().resource::<ReplicationClient<NoInput>>().unwrap().session.client().counters();
    assert!(lossy_counters.stale > 0, "the lossy link duplicated and reordered: {lossy_counters:?}");
}

/// A server transport whose clients can be cut off: a cut client is
/// reported as disconnected at the next update and heard no more.
struct CuttableServer {
    inner: SharedServerEnd,
    cut: Arc<Mutex<Vec<ClientId>>>,
    gone: Vec<ClientId>,
}

impl ServerTransport for CuttableServer {
    fn update(&mut self, dt: Duration, events: &mut Vec<ConnectionEvent>) -> Result<(), TransportError> {
        self.inner.update(dt, events)?;
        for id in self.cut.lock().unwrap().drain(..) {
            events.push(ConnectionEvent::Disconnected(id));
            self.gone.push(id);
        }
        Ok(())
    }
    fn send(&mut self, client: ClientId, packet: &[u8]) {
        self.inner.send(client, packet)
    }
    fn receive(&mut self, client: ClientId) -> Option<Vec<u8>> {
        if self.gone.contains(&client) { None } else { self.inner.receive(client) }
    }
    fn send_message(&mut self, client: ClientId, message: &[u8]) {
        self.inner.send_message(client, message)
    }
    fn receive_message(&mut self, client: ClientId) -> Option<Vec<u8>> {
        if self.gone.contains(&client) { None } else { self.inner.receive_message(client) }
    }
    fn flush(&mut self) -> Result<(), TransportError> {
        self.inner.flush()
    }
}

/// A client transport that can be cut off: then it is not connected and
/// hears nothing.
struct CuttableClient {
    inner: SharedClientEnd,
    cut: Arc<AtomicBool>,
}

impl ClientTransport for CuttableClient {
    fn update(&mut self, dt: Duration) -> Result<(), TransportError> {
        self.inner.update(dt)
    }
    fn is_connected(&self) -> bool {
        !self.cut.load(Ordering::Relaxed) && self.inner.is_connected()
    }
    fn send(&mut self, packet: &[u8]) {
        if self.is_connected() {
            self.inner.send(packet)
        }
    }
    fn receive(&mut self) -> Option<Vec<u8>> {
        if self.is_connected() { self.inner.receive() } else { None }
    }
    fn send_message(&mut self, message: &[u8]) {
        if self.is_connected() {
            self.inner.send_message(message)
        }
    }
    fn receive_message(&mut self) -> Option<Vec<u8>> {
        if self.is_connected() { self.inner.receive_message() } else { None }
    }
    fn flush(&mut self) -> Result<(), TransportError> {
        self.inner.flush()
    }
}

#[test]
fn a_dropped_client_clears_both_ends_and_the_next_one_gets_a_fresh_scene() {
    let net = SharedNetwork::new();
    let server_cut = Arc::new(Mutex::new(Vec::new()));
    let mut server = server_app(CuttableServer { inner: net.server(), cut: server_cut.clone(), gone: Vec::new() });
    let client_cut = Arc::new(AtomicBool::new(false));
    let mut first = client_app(1, CuttableClient { inner: net.client(ClientId(1)), cut: client_cut.clone() });
    net.lock().connect(ClientId(1), LinkConfig::clean(1), LinkConfig::clean(1), 3);
    for _ in 0..300 {
        frame(&net, &mut server, &mut [&mut first]);
    }
    assert_eq!(client_state(&first), CubeClientState::Synced);
    assert_eq!(first.world().len(), 901);
    let walked = server.world().resource::<CubeClock>().unwrap().walked;
    assert!(walked > 4.0, "the scene ran: the player walked {walked} s");

    // The link drops at both ends.
    client_cut.store(true, Ordering::Relaxed);
    server_cut.lock().unwrap().push(ClientId(1));
    for _ in 0..3 {
        frame(&net, &mut server, &mut [&mut first]);
    }
    assert_eq!(client_state(&first), CubeClientState::Disconnected);
    assert_eq!(first.world().resource::<CubeClientEnd>().unwrap().0, Some(CubeDisconnect::ByServer));
    assert_eq!(first.world().len(), 0, "the stale mirror is cleared");
    assert!(has_line(&first, "disconnected by the server: 901 mirrored entities removed"), "{:?}", log(&first));
    assert_eq!(server_state(&server), CubeServerState::Waiting);
    assert_eq!(server.world().len(), 0, "the scene is cleared with its last client");
    assert!(has_line(&server, "client 1 left"), "{:?}", log(&server));
    assert!(has_line(&server, "no clients left: scene cleared (901 cubes despawned)"), "{:?}", log(&server));

    // A new client starts a new scene, from the beginning of the path.
    let mut second = client_app(2, net.client(ClientId(2)));
    net.lock().connect(ClientId(2), LinkConfig::clean(1), LinkConfig::clean(1), 4);
    for _ in 0..5 {
        frame(&net, &mut server, &mut [&mut first, &mut second]);
    }
    assert_eq!(server_state(&server), CubeServerState::Running);
    let walked = server.world().resource::<CubeClock>().unwrap().walked;
    assert!(walked < 0.1, "a fresh scene, not the old one: the player walked {walked} s");
    for _ in 0..60 {
        frame(&net, &mut server, &mut [&mut first, &mut second]);
    }
    stop_player(&mut server);
    let converged = (0..900).any(|_| {
        frame(&net, &mut server, &mut [&mut first, &mut second]);
        moving_cubes(server.world_mut()) == 0 && mirrors(&server, ClientId(2), &second).is_ok()
    });
    assert!(converged, "{:?}", mirrors(&server, ClientId(2), &second));
    assert_eq!(client_state(&second), CubeClientState::Synced);
    assert_eq!(first.world().len(), 0, "the dropped client stays cleared");
}

#[test]
fn a_client_with_no_connection_gives_up_after_the_timeout() {
    let net = SharedNetwork::new(); // client 9 never connects
    let mut client = client_app(9, net.client(ClientId(9)));
    let frames_in_timeout = (CONNECT_TIMEOUT.as_secs_f64() * 60.0).round() as usize;
    client.run_frames(frames_in_timeout as u64 - 1);
    assert_eq!(client_state(&client), CubeClientState::Connecting);
    client.run_frames(3);
    assert_eq!(client_state(&client), CubeClientState::Disconnected);
    assert_eq!(
        client.world().resource::<CubeClientEnd>().unwrap().0,
        Some(CubeDisconnect::NoConnection(CONNECT_TIMEOUT))
    );
    assert!(has_line(&client, "no connection after 5 s"), "{:?}", log(&client));
    assert!(!has_line(&client, "connected"), "{:?}", log(&client));
}

fn output_of(mut child: std::process::Child) -> (bool, String, String) {
    let mut out = String::new();
    let mut err = String::new();
    if let Some(mut s) = child.stdout.take() {
        s.read_to_string(&mut out).unwrap();
    }
    if let Some(mut s) = child.stderr.take() {
        s.read_to_string(&mut err).unwrap();
    }
    (child.wait().unwrap().success(), out, err)
}

#[test]
fn the_binaries_serve_and_mirror_the_scene_over_udp() {
    let mut server = Command::new(env!("CARGO_BIN_EXE_replication_server"))
        .args(["--address", "127.0.0.1:0", "--clients", "2", "--seconds", "4"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut server_out = BufReader::new(server.stdout.take().unwrap());
    let mut first = String::new();
    server_out.read_line(&mut first).unwrap();
    let address = first
        .strip_prefix("listening on ")
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {first:?}"))
        .to_string();
    let client = Command::new(env!("CARGO_BIN_EXE_replication_client"))
        .args(["--address", &address, "--id", "1", "--seconds", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (client_ok, client_out, client_err) = output_of(client);
    let mut rest = String::new();
    server_out.read_to_string(&mut rest).unwrap();
    let (server_ok, _, server_err) = output_of(server);
    assert!(client_ok, "client failed: {client_err}\n{client_out}");
    assert!(server_ok, "server failed: {server_err}\n{first}{rest}");
    assert!(client_out.starts_with(&format!("client 1 connecting to {address}\nconnected\nsynced: ")), "{client_out}");
    assert!(client_out.lines().any(|l| l.starts_with("tick") && l.contains("entities  901")), "{client_out}");
    for line in ["client 1 connected", "scene spawned: 901 cubes", "client 1 left", "no clients left: scene cleared"] {
        assert!(rest.lines().any(|l| l.starts_with(line)), "no {line:?} in\n{rest}");
    }
    assert!(rest.lines().any(|l| l.starts_with("tick") && l.contains("client 1: ")), "{rest}");
}
