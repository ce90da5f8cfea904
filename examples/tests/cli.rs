//! Every example binary's command line, run as a process: `--help` prints
//! the generated help on stdout and exits 0, a bad flag or value prints
//! clap's error (what was wrong, the usage line) on stderr and exits 2, and
//! a run that fails prints `name: error` on stderr and exits 1.

use std::process::{Command, Output};

fn run(binary: &str, args: &[&str]) -> Output {
    Command::new(binary).args(args).output().unwrap_or_else(|e| panic!("{binary}: {e}"))
}

/// (binary, its name, a flag its help lists, a refused command line, what the refusal says).
const BINARIES: [(&str, &str, &str, &[&str], &str); 7] = [
    (
        env!("CARGO_BIN_EXE_showcase"),
        "showcase",
        "--entities <N>",
        &["--entities", "99"],
        "99 is not in 100..=10000000",
    ),
    (env!("CARGO_BIN_EXE_boids"), "boids", "--gif <PATH>", &["--active", "1.5"], "1.5 is not in 0.0..=1.0"),
    (env!("CARGO_BIN_EXE_melee"), "melee", "--units <N>", &["--units", "0"], "0 is not in 1.."),
    (env!("CARGO_BIN_EXE_pong"), "pong", "--points <N>", &["--points", "100"], "100 is not in 1..=99"),
    (env!("CARGO_BIN_EXE_arena"), "arena", "demo", &["client", "--loss", "1"], "1 is not in 0.0..=0.9"),
    (
        env!("CARGO_BIN_EXE_replication_server"),
        "replication_server",
        "--view <RADIUS>",
        &["--clients", "0"],
        "0 is not in 1..=64",
    ),
    (
        env!("CARGO_BIN_EXE_replication_client"),
        "replication_client",
        "--id <N>",
        &["--id", "0"],
        "0 is not in 1..=4294967296",
    ),
];

#[test]
fn help_is_printed_with_exit_code_0() {
    for (binary, name, flag, _, _) in BINARIES {
        for help in ["--help", "-h"] {
            let out = run(binary, &[help]);
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert_eq!(out.status.code(), Some(0), "{name} {help}");
            assert!(stdout.starts_with(&format!("{name}: ")), "{name} {help}:\n{stdout}");
            assert!(stdout.contains(&format!("Usage: {name} ")), "{name} {help}:\n{stdout}");
            assert!(stdout.contains(flag), "{name} {help}:\n{stdout}");
            assert!(out.stderr.is_empty(), "{name} {help}: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
}

#[test]
fn bad_flags_and_values_exit_with_code_2() {
    for (binary, name, _, bad, complaint) in BINARIES {
        for args in [bad, &["--no-such-flag"][..]] {
            let out = run(binary, args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{name} {args:?}: {stderr}");
            assert!(stderr.starts_with("error: "), "{name} {args:?}: {stderr}");
            assert!(stderr.contains("--help"), "{name} {args:?}: {stderr}");
            assert!(out.stdout.is_empty(), "{name} {args:?}: {}", String::from_utf8_lossy(&out.stdout));
        }
        let stderr = String::from_utf8_lossy(&run(binary, bad).stderr).into_owned();
        assert!(stderr.contains(complaint), "{name} {bad:?}: {stderr}");
    }
    // The arena needs a mode: without one it shows its help, as an error.
    let out = run(env!("CARGO_BIN_EXE_arena"), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Usage: arena <COMMAND>"));
}

#[test]
fn a_failed_run_exits_with_code_1() {
    let path = "/no/such/directory/boids.gif";
    let out = run(env!("CARGO_BIN_EXE_boids"), &["--boids", "1", "--frames", "1", "--gif", path]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.starts_with(&format!("boids: {path}: ")), "{stderr}");
}
