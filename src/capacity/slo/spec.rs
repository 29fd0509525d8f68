//! SLO plan spec files (`supernode plan --slo FILE`): a serving scenario with `[slo]` targets,
//! the load axis to search, and the cluster options to compare, each a list of `--set`
//! overrides of that scenario.
//!
//! ```toml
//! question = "Highest Poisson rate at p99 TPOT <= 100 ms: exo tensor vs pipeline"
//! scenario = "qwen3-235b-4x-m3-ultra-serve-poisson.toml"   # relative to this file
//! axis = "rate"            # rate (Poisson rate_per_s) | users (closed-loop concurrency)
//! start = 0.5              # first load probed
//! [[option]]
//! label = "exo tensor"
//! set = ["engine.parallelism=tensor"]
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::search::Bracket;

/// The load a search varies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    /// Poisson arrivals per second (`workload.rate_per_s`).
    Rate,
    /// Closed-loop users (`workload.concurrency`).
    Users,
}

impl Axis {
    /// The spec name.
    pub fn id(self) -> &'static str {
        match self {
            Axis::Rate => "rate",
            Axis::Users => "users",
        }
    }

    /// The scenario key the axis sets.
    pub fn key(self) -> &'static str {
        match self {
            Axis::Rate => "workload.rate_per_s",
            Axis::Users => "workload.concurrency",
        }
    }

    /// The load with its unit, as people say it.
    pub fn fmt(self, x: f64) -> String {
        match self {
            Axis::Rate => format!("{} req/s", crate::util::round3(x)),
            Axis::Users => format!("{x:.0} users"),
        }
    }
}

/// One cluster option: a label and its overrides of the scenario.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SloOption {
    /// Name in the table and the chart's legend.
    pub label: String,
    /// `key=value` overrides, as `run --set` takes them.
    #[serde(default)]
    pub set: Vec<String>,
}

/// A spec file as written (`deny_unknown_fields`).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct RawSloSpec {
    question: Option<String>,
    scenario: String,
    axis: Option<String>,
    start: Option<f64>,
    max: Option<f64>,
    tolerance: Option<f64>,
    probe_requests: Option<u64>,
    warmup_requests: Option<u64>,
    budget_usd: Option<f64>,
    #[serde(rename = "option")]
    options: Vec<SloOption>,
}

/// A validated SLO plan spec.
#[derive(Clone, Debug, PartialEq)]
pub struct SloSpec {
    /// The question in words.
    pub question: Option<String>,
    /// The serving scenario (resolved against the spec's directory).
    pub scenario: PathBuf,
    /// The load searched.
    pub axis: Axis,
    /// Where the search starts and stops.
    pub bracket: Bracket,
    /// Rate axis: requests measured per probe (the probe's window is this many mean arrival gaps).
    pub probe_requests: u64,
    /// Rate axis: requests of warm-up before the window.
    pub warmup_requests: u64,
    /// The budget every option's hardware must fit (an equal-budget question); an option over
    /// it is not searched and says so.
    pub budget_usd: Option<f64>,
    /// The options compared.
    pub options: Vec<SloOption>,
}

/// Most probes per option.
pub const MAX_PROBES: usize = 24;

impl SloSpec {
    /// Reads a spec file; errors name the file, line and column.
    pub fn load(path: &Path) -> Result<SloSpec, String> {
        let text =
            crate::util::read_bounded(path, crate::util::MAX_INPUT_BYTES).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Self::parse(&text, &dir).map_err(|e| format!("{}:{e}", path.display()))
    }

    /// Parses spec text (relative scenario paths resolve against `dir`); the error starts with
    /// `line:column: `.
    pub fn parse(text: &str, dir: &Path) -> Result<SloSpec, String> {
        let raw: RawSloSpec = super::super::planner::spec::PlanSpec::located(text)?;
        let axis = match raw.axis.as_deref().unwrap_or("rate") {
            "rate" => Axis::Rate,
            "users" => Axis::Users,
            other => return Err(format!("1:1: unknown axis `{other}` (use rate or users)")),
        };
        let integer = axis == Axis::Users;
        let (start, max) = match axis {
            Axis::Rate => (raw.start.unwrap_or(1.0), raw.max.unwrap_or(1024.0)),
            Axis::Users => (raw.start.unwrap_or(8.0), raw.max.unwrap_or(4096.0)),
        };
        let tolerance = raw.tolerance.unwrap_or(0.05);
        let positive = |x: f64| x.is_finite() && x > 0.0;
        if !positive(start) || !positive(max) || start > max || (integer && max > 100_000.0) || max > 1e6 {
            return Err(format!("1:1: need 0 < start <= max (<= 1e6 req/s, <= 100000 users); got start = {start}, max = {max}"));
        }
        if !(tolerance > 0.0 && tolerance < 1.0) {
            return Err(format!("1:1: tolerance must be in (0, 1), not {tolerance}"));
        }
        if raw.options.is_empty() {
            return Err("1:1: give at least one [[option]] (label = \"...\", set = [\"key=value\", ...])".into());
        }
        let probe_requests = raw.probe_requests.unwrap_or(120);
        let warmup_requests = raw.warmup_requests.unwrap_or(4);
        if !(1..=1_000_000).contains(&probe_requests) || warmup_requests > 1_000_000 {
            return Err("1:1: probe_requests must be 1..=1000000 and warmup_requests at most 1000000".into());
        }
        if let Some(b) = raw.budget_usd.filter(|b| !(b.is_finite() && *b > 0.0)) {
            return Err(format!("1:1: budget_usd must be a positive number of dollars, not {b}"));
        }
        let min = if integer { 1.0 } else { start / 1024.0 };
        Ok(SloSpec {
            question: raw.question,
            scenario: dir.join(raw.scenario),
            axis,
            bracket: Bracket { start, max, min, tolerance, integer, max_probes: MAX_PROBES },
            probe_requests,
            warmup_requests,
            budget_usd: raw.budget_usd,
            options: raw.options,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_located_errors() {
        let s = SloSpec::parse("scenario = \"a.toml\"\n[[option]]\nlabel = \"x\"\n", Path::new("d")).unwrap();
        assert_eq!((s.axis, s.bracket.start, s.scenario.clone()), (Axis::Rate, 1.0, PathBuf::from("d/a.toml")));
        let e = SloSpec::parse("scenario = \"a.toml\"\nrate = 3\n", Path::new("")).unwrap_err();
        assert!(e.starts_with("2:1: unknown field `rate`"), "{e}");
        let e = SloSpec::parse("scenario = \"a.toml\"\noption = []\n", Path::new("")).unwrap_err();
        assert!(e.contains("at least one [[option]]"), "{e}");
        let e = SloSpec::parse("scenario = \"a.toml\"\nbudget_usd = -5\n[[option]]\nlabel = \"x\"\n", Path::new("")).unwrap_err();
        assert!(e.contains("budget_usd must be a positive number of dollars, not -5"), "{e}");
    }
}
