//! Scenario files: raw serde structs with spans ([`raw`]), `--set` overrides ([`overrides`]),
//! and validation into a typed [`Scenario`] once ([`resolve`]). Every error names
//! file:line:column and says how to fix it ([`source`]).

// Errors carry the source text for rendering; they are the cold path, so their size is fine.
#![allow(clippy::result_large_err)]

use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::engine::{EngineOptions, Plan, PlanError, PlanInput};
use crate::hw::{FabricSpec, NodeSpec, Topology};
use crate::llm::{ModelSpec, QuantSpec};
use crate::profile::Profile;

pub mod builder;
pub mod faults;
pub mod overrides;
pub mod raw;
pub mod resolve;
pub mod serve;
pub mod source;

pub use builder::ScenarioBuilder;
pub use faults::{FaultConfig, Slowdown, Thermal};
pub use overrides::{apply_overrides, parse_value, set_dotted};
pub use resolve::parse;
pub use serve::{Arrival, KvFull, Length, Serve, Slo, Stop, Think, TraceRequest};
pub use source::{ErrorKind, ScenarioError, Source};

/// What the workload is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadKind {
    /// One stream: prefill a prompt, then decode tokens.
    Generate,
    /// Many users: arrivals, continuous batching, KV admission (see [`Serve`]).
    Serve,
    /// High-Performance Linpack on the CPUs.
    Hpl,
    /// `llama-batched-bench` as it defines itself (ggml-org/llama.cpp `tools/batched-bench`,
    /// FACTS.md "How published benchmarks measure"): `batch` sequences, each with its own
    /// `prompt_tokens`-token prompt (`is_pp_shared = 0`), prefilled together in micro-batches
    /// of the engine's `prefill_chunk` (`-ub`), then `generate_tokens` decode steps of one token
    /// per sequence, all in one batch (no slot cap, no scheduler). The tool draws random token
    /// ids (since late September 2025), so the sequences route through MoE layers as
    /// independent requests; with [`Workload::same_tokens`] every token is id 0 (the older
    /// tool): the sequences are identical, a decode step reads the experts of one token, while
    /// attention reads each sequence's own KV and the FLOPs run over every row. Its rates are
    /// the benchmark's: S_PP = batch x prompt / prefill time, S_TG = batch x generate / decode time.
    BatchedBench,
}

/// The workload of a scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    /// Kind.
    pub kind: WorkloadKind,
    /// Prompt length in tokens (a serving run's mean).
    pub prompt_tokens: u64,
    /// Tokens to generate (a serving run's mean).
    pub generate_tokens: u64,
    /// Tokens already in the KV cache when a `generate` run's prompt arrives (llama-bench's
    /// `-d` / `@ dN` tests, a conversation's earlier turns): the prompt's prefill attends to them
    /// and decode reads them, their own prefill is not timed. 0 for other kinds.
    pub context_tokens: u64,
    /// HPL problem size N (0: sized to memory by the top500-benchmark convention).
    pub hpl_n: u64,
    /// Sequences of a `batched-bench` workload (`-npl`); 1 otherwise.
    pub batch: u64,
    /// Whether a `batched-bench` workload's sequences are identical (every token id 0, as
    /// `batched-bench.cpp` fed them until September 2025, FACTS.md), so they route alike through
    /// MoE layers; false (the default, the tool since it draws random token ids): each sequence
    /// routes on its own, like independent requests.
    pub same_tokens: bool,
    /// Arrivals, lengths and scheduler knobs of a `serve` workload.
    pub serve: Option<Serve>,
    /// HPL block size NB (0: 256).
    pub hpl_nb: u64,
    /// HPL process grid rows P (0: the near-square grid of one rank per core).
    pub hpl_p: u64,
    /// HPL process grid columns Q (0: ranks / P).
    pub hpl_q: u64,
}

/// Cost assumptions.
#[derive(Clone, Debug, PartialEq)]
pub struct CostConfig {
    /// Years over which hardware is amortized.
    pub amortization_years: f64,
    /// Electricity price, USD per kWh.
    pub electricity_usd_per_kwh: f64,
}

/// Default amortization period: three years, a common depreciation schedule for computers.
pub const DEFAULT_AMORTIZATION_YEARS: f64 = 3.0;
/// Default electricity price in USD per kWh (stated default; override with `[cost]`).
pub const DEFAULT_ELECTRICITY_USD_PER_KWH: f64 = 0.15;

impl Default for Workload {
    /// One stream of 128 prompt tokens and 128 generated tokens.
    fn default() -> Self {
        Workload {
            kind: WorkloadKind::Generate,
            prompt_tokens: 128,
            generate_tokens: 128,
            context_tokens: 0,
            hpl_n: 0,
            batch: 1,
            same_tokens: false,
            hpl_nb: 0,
            hpl_p: 0,
            hpl_q: 0,
            serve: None,
        }
    }
}

impl Default for CostConfig {
    /// The stated defaults: [`DEFAULT_AMORTIZATION_YEARS`], [`DEFAULT_ELECTRICITY_USD_PER_KWH`].
    fn default() -> Self {
        CostConfig { amortization_years: DEFAULT_AMORTIZATION_YEARS, electricity_usd_per_kwh: DEFAULT_ELECTRICITY_USD_PER_KWH }
    }
}

/// Byte ranges of the keys that later (plan-time) errors point at.
#[derive(Clone, Debug, Default)]
pub struct Spans {
    /// `[cluster]` nodes/node/count.
    pub cluster_nodes: Range<usize>,
    /// `cluster.fabric` (or the table).
    pub fabric: Range<usize>,
    /// `cluster.topology` (or the fabric).
    pub topology: Range<usize>,
    /// `model.name` or `model.hf_config`.
    pub model: Range<usize>,
    /// `model.quant` (or the model).
    pub quant: Range<usize>,
    /// `engine.parallelism` (or the engine name).
    pub parallelism: Range<usize>,
    /// `[workload]`.
    pub workload: Range<usize>,
}

/// A validated scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Name.
    pub name: String,
    /// Seed of the run's random stream.
    pub seed: u64,
    /// The nodes of one replica, in order (node 0 is the llama.cpp RPC client); the cluster
    /// is `replicas` copies of them ([`Scenario::cluster_nodes`]).
    pub nodes: Vec<NodeSpec>,
    /// Identical copies of `nodes`, each running its own engine on its own share of the
    /// requests behind a load balancer (`engine.replicas`, 1 by default): data parallelism
    /// by separate servers.
    pub replicas: usize,
    /// Fabric the runtime runs over (a TCP-only runtime on an RDMA fabric: its TCP sibling).
    pub fabric: FabricSpec,
    /// The RDMA fabric the file named when the runtime runs its TCP sibling over the same
    /// cables instead (llama.cpp RPC on `tb5-rdma` runs `tb5-tcp`); `None` when it runs the
    /// fabric named. The run's envelope says so.
    pub cabled_fabric: Option<String>,
    /// Cabling.
    pub topology: Topology,
    /// Wired-memory fraction override.
    pub wired_limit_fraction: Option<f64>,
    /// Model.
    pub model: ModelSpec,
    /// Quantization.
    pub quant: QuantSpec,
    /// The model's file size as the user stated it (`model.size_gb`), GB.
    pub size_gb: Option<f64>,
    /// Engine and its options.
    pub engine: EngineOptions,
    /// Workload.
    pub workload: Workload,
    /// Latency targets of a serving run.
    pub slo: Slo,
    /// Cost assumptions.
    pub cost: CostConfig,
    /// Faults to simulate over a long horizon (`None`: no `[faults]`, or one that enables nothing).
    pub faults: Option<FaultConfig>,
    /// Sweep table, if present.
    pub sweep: Option<toml::Table>,
    /// Source text, for errors found later.
    pub source: Source,
    /// Spans of keys for errors found later.
    pub spans: Spans,
}

impl Scenario {
    /// Every node of the cluster: [`Scenario::nodes`] once per replica.
    pub fn cluster_nodes(&self) -> impl ExactSizeIterator<Item = &NodeSpec> + Clone {
        let n = self.nodes.len();
        (0..n * self.replicas).map(move |i| &self.nodes[i % n])
    }

    /// Stored weight bytes of the model under its quantization (every tensor class, norms
    /// included), GB.
    pub fn computed_size_gb(&self) -> f64 {
        self.model.bytes_by_class(&self.quant).iter().map(|x| x.1).sum::<f64>() / 1e9
    }

    /// A warning when the user's `model.size_gb` differs from the computed size by more than
    /// 5%: the quantization or the model is probably not the file they have.
    pub fn size_warning(&self) -> Option<String> {
        let stated = self.size_gb?;
        let computed = self.computed_size_gb();
        let off = (computed - stated) / stated;
        (off.abs() > 0.05).then(|| {
            format!(
                "warning: model.size_gb = {stated} but {} under `{}` is {computed:.1} GB ({:+.0}%): the quantization or the model may not be the file you have; list its tensor types with model.gguf_tensor_types (gguf-dump output) or import its config.json",
                self.model.id,
                self.quant.id,
                100.0 * off
            )
        })
    }
    /// The engine plan of this scenario when its KV cache must hold `context` tokens.
    pub fn plan(&self, context: u64, profile: &Profile) -> Result<Plan, PlanError> {
        Plan::new(PlanInput {
            nodes: &self.nodes,
            fabric: &self.fabric,
            topology: self.topology,
            model: &self.model,
            quant: &self.quant,
            options: &self.engine,
            wired_limit_fraction: self.wired_limit_fraction,
            context,
            profile,
        })
    }

    /// An error located at a key span.
    pub fn error_at(&self, span: &Range<usize>, message: impl Into<String>, help: Option<String>) -> ScenarioError {
        self.source.error(span.clone(), message, help)
    }
}

/// Reads a scenario file, applies `--set key=value` overrides, and validates it; errors point at
/// the `--set` argument or at the file, never at re-serialised TOML.
pub fn load(path: &Path, overrides: &[String]) -> Result<Scenario, ScenarioError> {
    let shown = path.display().to_string();
    let text = crate::util::read_bounded(path, crate::util::MAX_INPUT_BYTES).map_err(|e| {
        let src = Source { path: shown.clone(), dir: PathBuf::new(), text: String::new() };
        src.error(0..0, format!("cannot read scenario file: {e}"), Some("check the path".into()))
    })?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let source = Source { path: shown, dir, text };
    overrides::parse_with_overrides(source, overrides)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(text: &str) -> Source {
        Source { path: "t.toml".into(), dir: PathBuf::new(), text: text.into() }
    }

    #[test]
    fn unknown_key_points_at_line() {
        let e = parse(src("[cluster]\nnode = \"m3-ultra-80c-512gb\"\ncolor = 1\n[model]\nname = \"llama-3.2-3b\"\n")).unwrap_err();
        assert_eq!((e.line, e.col), (3, 1), "{e}");
        assert!(e.message.contains("unknown field"), "{e}");
    }

    #[test]
    fn unknown_node_suggests() {
        let e = parse(src("[cluster]\nnode = \"m3-ultra-512gb\"\n[model]\nname = \"llama-3.2-3b\"\n")).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.help.unwrap().contains("did you mean `m3-ultra-80c-512gb`"));
    }

    #[test]
    fn overrides_apply() {
        let s = apply_overrides(
            src("[cluster]\nnode = \"m3-ultra-80c-512gb\"\n[model]\nname = \"llama-3.2-3b\"\n"),
            &["workload.prompt_tokens=32768".into(), "cluster.count=2".into(), "cluster.fabric=tb5-rdma".into()],
        )
        .unwrap();
        let s = parse(s);
        // llama.cpp engine default is mlx-lm for one node; with 2 nodes exo tensor: 24 heads / 8 kv: legal for 2.
        let s = s.unwrap();
        assert_eq!(s.workload.prompt_tokens, 32768);
        assert_eq!(s.nodes.len(), 2);
    }
}
