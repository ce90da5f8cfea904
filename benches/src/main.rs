//! `ecs-bench SCENARIO [--json] [--quick] [--skip-1m]` and `ecs-bench
//! report`: see `ecs-bench --help` and [`ecs_bench::cli`].

#![forbid(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    ecs_bench::cli::main_with_args(std::env::args_os().skip(1))
}
