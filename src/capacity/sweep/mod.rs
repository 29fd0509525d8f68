//! Sweeps: a scenario file with a `[sweep]` table of axes (dotted keys mapping to lists of
//! values), expanded into points, each predicted by the one estimator and streamed to
//! `DIR/results.jsonl`; sharding across machines and merging shard outputs; the CSV view.
//!
//! Grammar (see README "Sweeps"):
//!
//! ```toml
//! [sweep]
//! "cluster.count" = [1, 2, 4]               # an axis: a dotted scenario key and its values
//! cluster.fabric = ["tb5-rdma", "tb5-tcp"]  # unquoted dotted keys work too
//! seed = { from = 1, to = 10 }              # an integer range (inclusive; optional `step`)
//! zip = [["cluster.count", "cluster.fabric"]]  # axes in a zip group vary together
//! ```
//!
//! Points are the cartesian product of the groups (a plain axis is a group of one) in the order
//! the axes appear in the file, the first varying slowest. Point `i` of `N` belongs to shard
//! `i % n`. Lines are written in index order whatever the thread count, so the output bytes do
//! not depend on `--jobs`, and `merge` of all shards equals the unsharded run byte for byte.
//!
//! Files: [`grammar`] (axes and points), [`run`](mod@run) (running, resuming, sharding), [`manifest`],
//! [`results`] (result lines written and read back), [`table`] (the CSV view), [`merge`](mod@merge).

// Errors carry the source text for rendering; they are the cold path.
#![allow(clippy::result_large_err)]

use std::path::Path;

use crate::scenario::ScenarioError;

pub mod grammar;
pub mod manifest;
pub mod merge;
pub mod results;
pub mod run;
pub mod table;

pub use grammar::{Axis, Sweep, fnv1a64, value_label};
pub use manifest::{Manifest, Shard, resolve_shard};
pub use merge::{MergeSummary, merge};
pub use results::{ErrorInfo, PointInfo, Row, for_each_row, read_rows};
pub use run::{RunOptions, RunSummary, run};
pub use table::{CSV_COLUMNS, FAULT_CSV_COLUMNS, kind_id, write_csv};

/// Format tag of sweep output directories.
pub const FORMAT: &str = "supernode-sweep-1";
/// Result lines, one per point.
pub const RESULTS_JSONL: &str = "results.jsonl";
/// The same results as a table.
pub const RESULTS_CSV: &str = "results.csv";
/// What the directory holds: sweep hash, shard, point counts.
pub const MANIFEST: &str = "manifest.json";
/// Largest sweep accepted (points, and values of one range axis). Up to it a sweep streams:
/// range axes are never expanded and points are built on demand in blocks of `BLOCK`, so
/// memory does not grow with the number of points (a 1e9-point sweep is long, not large; shard
/// it). Beyond it the sweep is refused up front with the count and a fix.
pub const MAX_POINTS: u64 = 1_000_000_000;
/// Points evaluated in parallel before their lines are written (in index order).
pub(crate) const BLOCK: usize = 512;

/// Why a sweep cannot run.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The sweep file is wrong (located at file:line:column).
    #[error(transparent)]
    Scenario(Box<ScenarioError>),
    /// Bad arguments or mismatched inputs.
    #[error("{0}")]
    Input(String),
    /// I/O failure.
    #[error("{0}")]
    Io(String),
}

impl From<ScenarioError> for SweepError {
    fn from(e: ScenarioError) -> Self {
        SweepError::Scenario(Box::new(e))
    }
}

pub(crate) fn io_err(what: impl std::fmt::Display, path: &Path, e: std::io::Error) -> SweepError {
    SweepError::Io(format!("cannot {what} {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::profile::Profile;
    use crate::scenario::Source;

    fn src(text: &str) -> Source {
        Source { path: "s.toml".into(), dir: PathBuf::new(), text: text.into() }
    }

    const BASE: &str = "name = \"t\"\n[cluster]\nnode = \"m3-ultra-80c-512gb\"\ncount = 1\nfabric = \"tb5-rdma\"\n[model]\nname = \"llama-3.2-3b\"\n[workload]\nprompt_tokens = 8\ngenerate_tokens = 4\n";

    fn sweep(extra: &str) -> Result<Sweep, SweepError> {
        Sweep::from_source(src(&format!("{BASE}{extra}")), &Profile::default_profile())
    }

    fn err(extra: &str) -> ScenarioError {
        match sweep(extra) {
            Err(SweepError::Scenario(e)) => *e,
            other => panic!("expected a located error, got {other:?}"),
        }
    }

    #[test]
    fn product_in_file_order_first_slowest() {
        let s = sweep("[sweep]\n\"cluster.count\" = [1, 2]\nworkload.prompt_tokens = [8, 16, 32]\n").unwrap();
        assert_eq!(s.total, 6);
        assert_eq!(s.axes(), vec!["cluster.count", "workload.prompt_tokens"]);
        let o: Vec<String> = s.overrides(4).iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(o, vec!["cluster.count=2", "workload.prompt_tokens=16"]);
    }

    #[test]
    fn zip_and_range() {
        let s = sweep(
            "[sweep]\nseed = { from = 1, to = 3 }\n\"cluster.count\" = [1, 2]\n\"engine.name\" = [\"exo\", \"exo\"]\nzip = [[\"cluster.count\", \"engine.name\"]]\n",
        )
        .unwrap();
        assert_eq!(s.total, 6);
        assert_eq!(s.groups.len(), 2);
        assert_eq!(s.zip_groups(), vec![vec!["cluster.count".to_string(), "engine.name".to_string()]]);
    }

    #[test]
    fn errors_point_at_the_key_or_value() {
        let lines = BASE.lines().count();
        let e = err("[sweep]\n\"cluster.count\" = [1, 2]\n\"cluster.fabric\" = [\"tb5-rdma\", \"tb5-rmda\"]\n");
        assert_eq!((e.line, e.col), (lines + 3, 33), "{e}");
        assert!(e.help.as_deref().unwrap_or("").contains("tb5-rdma"), "{e:?}");
        let e = err("[sweep]\n\"cluster.colour\" = [1, 2]\n");
        assert_eq!((e.line, e.col), (lines + 2, 1), "{e}");
        let e = err("[sweep]\n\"cluster.count\" = 4\n");
        assert_eq!((e.line, e.col), (lines + 2, 19), "{e}");
        let e = err("[sweep]\n\"cluster.count\" = [1, 2]\nseed = [1, 2, 3]\nzip = [[\"cluster.count\", \"seed\"]]\n");
        assert_eq!((e.line, e.col), (lines + 3, 1), "{e}");
        let e = err("[sweep]\n\"cluster.count\" = [1, 2]\nzip = [[\"cluster.cont\"]]\n");
        assert_eq!((e.line, e.col), (lines + 3, 9), "{e}");
        assert!(e.help.unwrap().contains("did you mean `cluster.count`"));
    }

    #[test]
    fn shards_partition() {
        let total = 10;
        let mut seen = [0; 10];
        for i in 0..4 {
            let s = Shard { index: i, count: 4 };
            for j in 0..s.points(total) {
                seen[s.point(j) as usize] += 1;
            }
        }
        assert!(seen.iter().all(|&c| c == 1));
        let env = |k: &str| match k {
            "SLURM_ARRAY_TASK_ID" => Some("5".to_string()),
            "SLURM_ARRAY_TASK_COUNT" => Some("4".to_string()),
            "SLURM_ARRAY_TASK_MIN" => Some("2".to_string()),
            _ => None,
        };
        assert_eq!(resolve_shard(None, None, env), Ok(Shard { index: 3, count: 4 }));
        let k8s = |k: &str| (k == "JOB_COMPLETION_INDEX").then(|| "1".to_string());
        assert_eq!(resolve_shard(None, Some(3), k8s), Ok(Shard { index: 1, count: 3 }));
        assert!(resolve_shard(None, None, k8s).is_err());
        assert!(resolve_shard(Some("4/4"), None, |_| None).is_err());
        assert_eq!(resolve_shard(None, None, |_| None), Ok(Shard::ALL));
    }
}
