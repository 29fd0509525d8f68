//! The `supernode` binary: a thin wrapper that returns the CLI's exit code.

fn main() {
    std::process::exit(supernode::cli::main_with_args(std::env::args_os()));
}
