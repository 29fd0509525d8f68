//! Capacity-planning commands: `sweep`, `merge`, `plot`, `plan`.

use clap::Subcommand;

/// Capacity-planning subcommands.
#[derive(Debug, Subcommand)]
pub enum CapacityCommand {}

/// Runs a capacity-planning command and returns the exit code.
pub fn dispatch(c: CapacityCommand) -> i32 {
    match c {}
}
