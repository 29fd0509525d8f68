//! Options several subcommands share, declared once and flattened into each.

use std::path::PathBuf;

use clap::Args;

use super::CliError;
use crate::profile::Profile;

/// `--profile FILE`.
#[derive(Debug, Clone, Args)]
pub struct ProfileArg {
    /// Calibration profile, TOML (default: the embedded profile, fitted to the published M3 Ultra measurements).
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
}

impl ProfileArg {
    /// Loads the profile named, or the embedded one; a bad file is an input error.
    pub fn load(&self) -> Result<Profile, CliError> {
        match &self.profile {
            Some(p) => Profile::load(p).map_err(|e| CliError::input(e.to_string())),
            None => Ok(Profile::default_profile()),
        }
    }
}

/// `--json`.
#[derive(Debug, Clone, Copy, Args)]
pub struct JsonArg {
    /// Print one JSON object on stdout instead of the text report.
    #[arg(long)]
    pub json: bool,
}

/// `--jobs N`.
#[derive(Debug, Clone, Copy, Args)]
pub struct JobsArg {
    /// Worker threads (default: one per core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
}

impl JobsArg {
    /// The thread count asked for, if any.
    pub fn get(self) -> Option<usize> {
        self.jobs.map(usize::from)
    }
}

/// `--out DIR` and `--no-charts` of the commands that write a sweep result set.
#[derive(Debug, Clone, Args)]
pub struct SweepOutArgs {
    /// Output directory (default: output/sweep-<name>, plus shard-<i>-of-<n> for a shard).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Do not draw charts.
    #[arg(long)]
    pub no_charts: bool,
}
