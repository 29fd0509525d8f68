//! Calibration commands: `calibrate`.

use clap::Subcommand;

/// Calibration subcommands.
#[derive(Debug, Subcommand)]
pub enum CalibrationCommand {}

/// Runs a calibration command and returns the exit code.
pub fn dispatch(c: CalibrationCommand) -> i32 {
    match c {}
}
