//! The manifest of a sweep output directory, and shards: which slice of the points a machine runs.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{FORMAT, MANIFEST, SweepError, io_err};

/// What a sweep output directory holds.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    /// Format tag.
    pub format: String,
    /// Scenario name.
    pub name: String,
    /// Sweep file as given.
    pub scenario: String,
    /// Identity of the sweep.
    pub sweep_hash: String,
    /// Axis keys in file order.
    pub axes: Vec<String>,
    /// Zip groups.
    pub zip: Vec<Vec<String>>,
    /// Points in the whole sweep.
    pub points_total: u64,
    /// This shard (0-based).
    pub shard: u64,
    /// Number of shards.
    pub shards: u64,
    /// Points in this shard.
    pub points_in_shard: u64,
    /// Points written so far.
    pub points_done: u64,
    /// Whether every point of the shard is written.
    pub complete: bool,
    /// Calibration profile name.
    pub profile: String,
    /// supernode version.
    pub supernode_version: String,
    /// Number of shards merged into this directory (0: written by `sweep`).
    #[serde(default)]
    pub merged_from: u64,
}

impl Manifest {
    /// Reads `DIR/manifest.json`.
    pub fn read(dir: &Path) -> Result<Manifest, SweepError> {
        let p = dir.join(MANIFEST);
        let text = crate::util::read_bounded(&p, crate::util::MAX_INPUT_BYTES)
            .map_err(|e| SweepError::Input(format!("{} is not a sweep output directory (cannot read {MANIFEST}: {e})", dir.display())))?;
        let m: Manifest = serde_json::from_str(&text).map_err(|e| {
            SweepError::Input(format!("{}: not a sweep manifest: {}", p.display(), crate::util::user_words(&e.to_string())))
        })?;
        if m.format != FORMAT {
            return Err(SweepError::Input(format!("{}: format `{}`, expected `{FORMAT}`", p.display(), m.format)));
        }
        Ok(m)
    }

    pub(super) fn write(&self, dir: &Path) -> Result<(), SweepError> {
        let p = dir.join(MANIFEST);
        let body = serde_json::to_string_pretty(self).expect("manifest serializes") + "\n";
        crate::util::write_atomic(&p, body.as_bytes()).map_err(|e| io_err("write", &p, e))
    }
}

/// A deterministic slice of a sweep: points with `index % count == index_of_shard`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This shard, 0-based.
    pub index: u64,
    /// Number of shards.
    pub count: u64,
}

impl Shard {
    /// The whole sweep.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Points of a sweep of `total` that fall in this shard.
    pub fn points(self, total: u64) -> u64 {
        if self.index >= total { 0 } else { (total - self.index).div_ceil(self.count) }
    }

    /// The `j`-th point index of this shard.
    pub fn point(self, j: u64) -> u64 {
        self.index + j * self.count
    }
}

/// Which shard to run: `--shard I/N`, else `SLURM_ARRAY_TASK_ID`/`SLURM_ARRAY_TASK_COUNT` (minus
/// `SLURM_ARRAY_TASK_MIN`), else `JOB_COMPLETION_INDEX` with `--shard-count N`, else all.
pub fn resolve_shard(flag: Option<&str>, shard_count: Option<u64>, env: impl Fn(&str) -> Option<String>) -> Result<Shard, String> {
    let make = |i: u64, n: u64, from: &str| -> Result<Shard, String> {
        if n == 0 || i >= n {
            return Err(format!("{from}: shard {i} of {n} is out of range (shards are 0..{})", n.max(1) - 1));
        }
        Ok(Shard { index: i, count: n })
    };
    let num = |s: &str, what: &str| s.trim().parse::<u64>().map_err(|_| format!("{what} = `{s}` is not a non-negative integer"));
    if let Some(f) = flag {
        let (i, n) = f.split_once('/').ok_or_else(|| format!("--shard `{f}` is not I/N (e.g. --shard 0/4)"))?;
        return make(num(i, "--shard I")?, num(n, "--shard N")?, "--shard");
    }
    if let (Some(id), Some(count)) = (env("SLURM_ARRAY_TASK_ID"), env("SLURM_ARRAY_TASK_COUNT")) {
        let min = match env("SLURM_ARRAY_TASK_MIN") {
            Some(m) => num(&m, "SLURM_ARRAY_TASK_MIN")?,
            None => 0,
        };
        let id = num(&id, "SLURM_ARRAY_TASK_ID")?;
        let i = id.checked_sub(min).ok_or_else(|| format!("SLURM_ARRAY_TASK_ID {id} is below SLURM_ARRAY_TASK_MIN {min}"))?;
        return make(i, num(&count, "SLURM_ARRAY_TASK_COUNT")?, "Slurm array");
    }
    match (env("JOB_COMPLETION_INDEX"), shard_count) {
        (Some(i), Some(n)) => make(num(&i, "JOB_COMPLETION_INDEX")?, n, "JOB_COMPLETION_INDEX"),
        (Some(_), None) => Err("JOB_COMPLETION_INDEX is set: pass --shard-count N (the Job's completions) to shard the sweep".into()),
        (None, Some(_)) => Err("--shard-count needs JOB_COMPLETION_INDEX (a Kubernetes Indexed Job); otherwise use --shard I/N".into()),
        (None, None) => Ok(Shard::ALL),
    }
}
