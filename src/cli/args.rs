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
    /// Output directory (default: `output/sweep-<name>`, plus `shard-<i>-of-<n>` for a shard).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Do not draw charts.
    #[arg(long)]
    pub no_charts: bool,
}

/// A time window of a serving run, seconds `T0..T1` (`--window`, `--trace-window`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// Start, s.
    pub from_s: f64,
    /// End, s.
    pub to_s: f64,
}

impl Window {
    /// The window in ns.
    pub fn ns(self) -> (u64, u64) {
        let ns = crate::estimate::serve::arrivals::s_to_ns;
        (ns(self.from_s), ns(self.to_s))
    }
}

/// Parses `T0..T1` (seconds, 0 <= T0 < T1).
pub fn parse_window(s: &str) -> Result<Window, String> {
    let bad = || format!("`{s}` is not a window: write T0..T1 in seconds, e.g. 30..30.5");
    let (a, b) = s.split_once("..").ok_or_else(bad)?;
    let (from_s, to_s): (f64, f64) = (a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?);
    if !(from_s.is_finite() && to_s.is_finite() && from_s >= 0.0 && to_s > from_s && to_s < 1e9) {
        return Err(format!("`{s}`: a window needs 0 <= T0 < T1 (seconds)"));
    }
    Ok(Window { from_s, to_s })
}
