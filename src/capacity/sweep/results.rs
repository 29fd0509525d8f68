//! Result lines: one JSON object per point (its overrides, whether it runs, the [`Estimate`] or
//! the typed error), written in index order and read back for tables and charts.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::estimate::{Estimate, ScheduleCache, estimate_reusing};
use crate::profile::Profile;
use crate::scenario::{ErrorKind, Scenario};

use super::{RESULTS_JSONL, Sweep, SweepError, io_err};

thread_local! {
    /// Each worker's last generate schedule: consecutive points of a seed axis share their
    /// lowered and timed steps ([`estimate_reusing`]), and results do not depend on which worker
    /// ran a point (a hit and a miss give the same bits).
    static SCHEDULES: std::cell::RefCell<ScheduleCache> = std::cell::RefCell::new(ScheduleCache::new());
}

/// Why a point cannot run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ErrorInfo {
    /// What kind of failure (does-not-fit, illegal-split, too-few-ports, ...).
    pub kind: ErrorKind,
    /// The error message.
    pub message: String,
    /// How to fix it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
}

/// What a point is (for rows that have no estimate).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct PointInfo {
    /// Model id.
    pub model: String,
    /// Quantization id.
    pub quant: String,
    /// Engine id.
    pub engine: String,
    /// Parallelism id.
    pub parallelism: String,
    /// Node presets.
    pub nodes: Vec<String>,
    /// Fabric id.
    pub fabric: String,
    /// Topology id.
    pub topology: String,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Generated tokens.
    pub generate_tokens: u64,
}

impl PointInfo {
    fn of(s: &Scenario) -> Self {
        PointInfo {
            model: s.model.id.clone(),
            quant: s.quant.id.clone(),
            engine: s.engine.kind.id().into(),
            parallelism: s.engine.parallelism.id().into(),
            nodes: s.cluster_nodes().map(|n| n.id.clone()).collect(),
            fabric: s.fabric.id.clone(),
            topology: s.topology.id().into(),
            prompt_tokens: s.workload.prompt_tokens,
            generate_tokens: s.workload.generate_tokens,
        }
    }

    /// What an estimate is of.
    pub fn of_estimate(e: &Estimate) -> Self {
        PointInfo {
            model: e.model.clone(),
            quant: e.quant.clone(),
            engine: e.engine.clone(),
            parallelism: e.parallelism.clone(),
            nodes: e.nodes.clone(),
            fabric: e.fabric.clone(),
            topology: e.topology.clone(),
            prompt_tokens: e.prompt_tokens,
            generate_tokens: e.generate_tokens,
        }
    }
}

#[derive(Serialize)]
struct LineOut<'a> {
    index: u64,
    overrides: serde_json::Map<String, serde_json::Value>,
    fits: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    estimate: Option<&'a Estimate>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scenario: Option<PointInfo>,
}

/// One result line read back.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct Row {
    /// Point index.
    pub index: u64,
    /// The point's overrides (axis key -> value).
    #[serde(default)]
    pub overrides: serde_json::Map<String, serde_json::Value>,
    /// Whether it runs.
    pub fits: bool,
    /// The prediction, when it runs.
    #[serde(default)]
    pub estimate: Option<Estimate>,
    /// Why not, when it does not.
    #[serde(default)]
    pub error: Option<ErrorInfo>,
    /// What it is: written for points that parsed but do not run; filled from the estimate
    /// when read back for points that run.
    #[serde(default)]
    pub scenario: Option<PointInfo>,
}

impl Row {
    /// What the point is, when known.
    pub fn info(&self) -> Option<&PointInfo> {
        self.scenario.as_ref()
    }

    /// The error kind, if the point does not run.
    pub fn error_kind(&self) -> Option<ErrorKind> {
        self.error.as_ref().map(|e| e.kind)
    }
}

/// The index and outcome of a line, for resuming and merging without reading the estimate.
#[derive(Deserialize)]
pub(super) struct IndexOnly {
    pub(super) index: u64,
    pub(super) fits: bool,
}

impl Sweep {
    /// Predicts point `index` and renders its result line (without the newline).
    pub fn point_line(&self, index: u64, profile: &Profile) -> (String, bool) {
        let mut overrides = serde_json::Map::new();
        for (k, v) in self.overrides(index) {
            overrides.insert(k.to_string(), serde_json::to_value(v).unwrap_or(serde_json::Value::Null));
        }
        let mut line = LineOut { index, overrides, fits: false, estimate: None, error: None, scenario: None };
        let est;
        match self.scenario(index) {
            Err(e) => {
                line.error = Some(ErrorInfo { kind: e.kind, message: e.message.clone(), help: e.help.clone() });
                if e.kind == ErrorKind::ContextWindow {
                    line.scenario = self.point_info_past_window(index).map(|(sc, prompt, generate)| PointInfo {
                        prompt_tokens: prompt,
                        generate_tokens: generate,
                        ..PointInfo::of(&sc)
                    });
                }
            }
            Ok(sc) => match SCHEDULES.with(|c| estimate_reusing(&sc, profile, &mut c.borrow_mut())) {
                Ok(e) => {
                    est = e;
                    line.fits = true;
                    line.estimate = Some(&est);
                }
                Err(err) => {
                    line.error = Some(ErrorInfo { kind: err.kind(), message: err.to_string(), help: Some(err.fix()) });
                    line.scenario = Some(PointInfo::of(&sc));
                }
            },
        }
        let fits = line.fits;
        (serde_json::to_string(&line).expect("line serializes"), fits)
    }
}

/// Reads every row of `DIR/results.jsonl`, in file order.
pub fn read_rows(dir: &Path) -> Result<Vec<Row>, SweepError> {
    let mut rows = Vec::new();
    for_each_row(dir, |r| {
        rows.push(r);
        Ok(())
    })?;
    Ok(rows)
}

/// Streams the rows of `DIR/results.jsonl`.
pub fn for_each_row(dir: &Path, mut f: impl FnMut(Row) -> Result<(), SweepError>) -> Result<(), SweepError> {
    let path = dir.join(RESULTS_JSONL);
    let file = File::open(&path).map_err(|e| SweepError::Input(format!("cannot open {}: {e}", path.display())))?;
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| io_err("read", &path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let mut row: Row = serde_json::from_str(&line).map_err(|e| {
            SweepError::Input(format!("{}:{}: not a result line: {}", path.display(), i + 1, crate::util::user_words(&e.to_string())))
        })?;
        if row.scenario.is_none() {
            row.scenario = row.estimate.as_ref().map(PointInfo::of_estimate);
        }
        f(row)?;
    }
    Ok(())
}
