//! `results.csv`: the result lines as a table, one row per point (streamed), and the atomic
//! writer the sweep's output files go through.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::scenario::ErrorKind;
use crate::util::round6;

use super::{RESULTS_CSV, Row, SweepError, for_each_row, io_err, value_label};

/// A file written in full under a temporary name, then renamed into place ([`crate::util::AtomicFile`]).
pub(super) struct AtomicWriter {
    path: PathBuf,
    f: crate::util::AtomicFile,
}

impl AtomicWriter {
    pub(super) fn create(path: &Path) -> Result<Self, SweepError> {
        let f = crate::util::AtomicFile::create(path).map_err(|e| io_err("create", path, e))?;
        Ok(AtomicWriter { path: path.to_path_buf(), f })
    }

    pub(super) fn write(&mut self, bytes: &[u8]) -> Result<(), SweepError> {
        self.f.write_all(bytes).map_err(|e| io_err("write", &self.path, e))
    }

    pub(super) fn commit(self) -> Result<(), SweepError> {
        self.f.commit().map_err(|e| io_err("write", &self.path, e))
    }
}

/// Columns of `results.csv` after the index and the axes.
pub const CSV_COLUMNS: &[&str] = &[
    "fits",
    "error_kind",
    "model",
    "quant",
    "engine",
    "parallelism",
    "nodes",
    "node_count",
    "fabric",
    "topology",
    "prompt_tokens",
    "generate_tokens",
    "decode_tokens_per_s",
    "prefill_tokens_per_s",
    "ttft_s",
    "tpot_p50_ms",
    "tpot_p99_ms",
    "cluster_power_w",
    "energy_j_per_token",
    "tokens_per_joule",
    "max_memory_per_node_gb",
    "cost_usd",
    "usd_per_mtok",
    "usd_per_token_per_s",
    "cables",
    "calibration",
    "error",
];

/// Columns appended after [`CSV_COLUMNS`] when any point ran with `[faults]` (from its
/// `faults` report; empty for a point without one): the share of the horizon the cluster
/// served, the tokens/s it delivered over the horizon, tokens per day, requests failed.
pub const FAULT_CSV_COLUMNS: &[&str] = &["availability", "goodput_tokens_per_s", "expected_tokens_per_day", "requests_failed"];

/// Writes `DIR/results.csv` from `DIR/results.jsonl` (streaming; a first pass finds whether
/// any point has a fault report, which adds [`FAULT_CSV_COLUMNS`]).
pub fn write_csv(dir: &Path, axes: &[String]) -> Result<PathBuf, SweepError> {
    let path = dir.join(RESULTS_CSV);
    let faults = any_fault_report(dir)?;
    let mut out = AtomicWriter::create(&path)?;
    let mut buf = Vec::with_capacity(1024);
    {
        let mut w = csv::Writer::from_writer(&mut buf);
        let mut header = vec!["index".to_string()];
        header.extend(axes.iter().cloned());
        header.extend(CSV_COLUMNS.iter().map(|s| s.to_string()));
        if faults {
            header.extend(FAULT_CSV_COLUMNS.iter().map(|s| s.to_string()));
        }
        w.write_record(&header).map_err(|e| SweepError::Io(e.to_string()))?;
        w.flush().map_err(|e| SweepError::Io(e.to_string()))?;
    }
    out.write(&buf)?;
    for_each_row(dir, |row| {
        let rec = record(&row, axes, faults);
        buf.clear();
        {
            let mut w = csv::Writer::from_writer(&mut buf);
            w.write_record(&rec).map_err(|e| SweepError::Io(e.to_string()))?;
            w.flush().map_err(|e| SweepError::Io(e.to_string()))?;
        }
        out.write(&buf)
    })?;
    out.commit()?;
    Ok(path)
}

/// Whether any line of `DIR/results.jsonl` carries a fault report: a first pass that reads
/// only that field (the whole estimate is parsed once, by the pass that writes the rows).
fn any_fault_report(dir: &Path) -> Result<bool, SweepError> {
    use std::io::BufRead as _;
    #[derive(serde::Deserialize)]
    struct FaultsOnly {
        #[serde(default)]
        estimate: Option<EstimateFaults>,
    }
    #[derive(serde::Deserialize)]
    struct EstimateFaults {
        #[serde(default)]
        faults: Option<serde::de::IgnoredAny>,
    }
    let path = dir.join(super::RESULTS_JSONL);
    let file = std::fs::File::open(&path).map_err(|e| SweepError::Input(format!("cannot open {}: {e}", path.display())))?;
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| io_err("read", &path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let row: FaultsOnly = serde_json::from_str(&line).map_err(|e| {
            SweepError::Input(format!("{}:{}: not a result line: {}", path.display(), i + 1, crate::util::user_words(&e.to_string())))
        })?;
        if row.estimate.is_some_and(|e| e.faults.is_some()) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The CSV record of a row: index, axis values, then [`CSV_COLUMNS`] (and with `faults`,
/// [`FAULT_CSV_COLUMNS`]).
fn record(row: &Row, axes: &[String], faults: bool) -> Vec<String> {
    let mut rec: Vec<String> = Vec::with_capacity(axes.len() + CSV_COLUMNS.len() + 1);
    rec.push(row.index.to_string());
    for a in axes {
        rec.push(row.overrides.get(a).map(value_label).unwrap_or_default());
    }
    rec.push(row.fits.to_string());
    rec.push(row.error_kind().map(kind_id).unwrap_or_default());
    match row.info() {
        Some(i) => {
            rec.extend([i.model.clone(), i.quant.clone(), i.engine.clone(), i.parallelism.clone()]);
            rec.push(i.nodes.join("+"));
            rec.push(i.nodes.len().to_string());
            rec.extend([i.fabric.clone(), i.topology.clone(), i.prompt_tokens.to_string(), i.generate_tokens.to_string()]);
        }
        None => rec.extend(std::iter::repeat_n(String::new(), 10)),
    }
    match &row.estimate {
        Some(e) => {
            for x in [
                e.decode_tokens_per_s,
                e.prefill_tokens_per_s,
                e.ttft_s,
                e.tpot_ms.p50,
                e.tpot_ms.p99,
                e.cluster_power_w,
                e.energy_j_per_token,
                round6(e.tokens_per_joule()),
                e.max_memory_per_node_gb(),
                e.cost_usd,
                e.usd_per_mtok,
                e.usd_per_token_per_s,
            ] {
                rec.push(x.to_string());
            }
            rec.push(e.cables.to_string());
            rec.push(e.calibration.status.clone());
        }
        None => rec.extend(std::iter::repeat_n(String::new(), 14)),
    }
    rec.push(row.error.as_ref().map(|e| e.message.clone()).unwrap_or_default());
    if faults {
        let f = row.estimate.as_ref().and_then(|e| e.faults.as_ref());
        let opt = |x: Option<f64>| x.map(|x| x.to_string()).unwrap_or_default();
        rec.push(opt(f.map(|f| f.availability)));
        rec.push(opt(f.and_then(|f| f.goodput_tokens_per_s)));
        rec.push(opt(f.and_then(|f| f.expected_tokens_per_day)));
        rec.push(f.map(|f| f.requests_failed.to_string()).unwrap_or_default());
    }
    rec
}

/// The kind's name as written in result lines (`does-not-fit`, ...).
pub fn kind_id(kind: ErrorKind) -> String {
    serde_json::to_value(kind).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}
