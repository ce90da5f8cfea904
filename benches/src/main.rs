//! `ecs-bench SCENARIO [--json] [--quick]`: see [`ecs_bench::cli::USAGE`].

#![forbid(unsafe_code)]

fn main() {
    let code = ecs_bench::cli::main_with_args(std::env::args().skip(1));
    std::process::exit(code);
}
