//! ollama: llama.cpp behind ollama's server. An alias of llama.cpp: it parses to
//! [`EngineKind::LlamaCpp`] and every output writes llama.cpp's id `llama-cpp`, as before this
//! module existed (the published measurement rows name `ollama` and the validation snapshots pin
//! their scenarios as llama-cpp; a kind of its own would rename them). It answers every
//! question as llama.cpp does; only its names and chart label are its own. The planner does
//! not enumerate it (llama.cpp stands for it).

use crate::hw::{Backend, NodeSpec};

use super::super::lowered::Lowered;
use super::super::options::{EngineKind, EngineOptions, Parallelism, Runtime};
use super::super::plan::Plan;
use super::super::split::SplitError;
use super::llama_cpp::LlamaCpp;
use super::{CableLoss, EngineRuntime, RuntimeFault, ServingLoop, VersionDefaults};

/// ollama: llama.cpp's behaviour under its own name.
pub struct Ollama;

impl EngineRuntime for Ollama {
    fn kind(&self) -> EngineKind {
        LlamaCpp.kind()
    }

    fn names(&self) -> &'static [&'static str] {
        &["ollama"]
    }

    fn id(&self) -> &'static str {
        LlamaCpp.id()
    }

    fn label(&self) -> &'static str {
        "ollama"
    }

    /// [`super::llama_cpp::llama_measurement_options`].
    fn measurement_options(&self, notes: &str) -> Vec<(&'static str, toml::Value)> {
        super::llama_cpp::llama_measurement_options(notes)
    }

    /// `OLLAMA_NUM_PARALLEL=N`; the twin runs its llama.cpp runner's default slots otherwise.
    fn concurrency_flags(&self) -> (&'static [&'static str], Option<u64>) {
        (&["OLLAMA_NUM_PARALLEL"], Some(super::llama_cpp::LLAMA_SERVER_SLOTS))
    }

    fn kernels(&self) -> Runtime {
        LlamaCpp.kernels()
    }

    fn host_key(&self) -> Option<&'static str> {
        LlamaCpp.host_key()
    }

    fn version_defaults(&self) -> VersionDefaults {
        LlamaCpp.version_defaults()
    }

    fn default_parallelism(&self, nodes: usize) -> Parallelism {
        LlamaCpp.default_parallelism(nodes)
    }

    fn check_split(&self, engine: &str, parallelism: Parallelism) -> Result<(), SplitError> {
        LlamaCpp.check_split(engine, parallelism)
    }

    fn mixes_chips(&self, nodes: &[&NodeSpec]) -> bool {
        LlamaCpp.mixes_chips(nodes)
    }

    fn lower(&self, plan: &Plan, tokens: u64) -> Lowered {
        LlamaCpp.lower(plan, tokens)
    }

    fn serving_loop(&self, max_batch: Option<u64>, options: &EngineOptions) -> ServingLoop {
        LlamaCpp.serving_loop(max_batch, options)
    }

    fn crash_reloads_every_node(&self, parallelism: Parallelism, node: usize) -> bool {
        LlamaCpp.crash_reloads_every_node(parallelism, node)
    }

    fn reloads_over_network(&self, node: usize) -> bool {
        LlamaCpp.reloads_over_network(node)
    }

    fn crash_reaction(&self, parallelism: Parallelism, node: usize) -> &'static str {
        LlamaCpp.crash_reaction(parallelism, node)
    }

    fn cable_loss(&self, parallelism: Parallelism) -> CableLoss {
        LlamaCpp.cable_loss(parallelism)
    }

    fn accepts_runtime_fault(&self, fault: RuntimeFault, parallelism: Parallelism, backend: Backend) -> bool {
        LlamaCpp.accepts_runtime_fault(fault, parallelism, backend)
    }

    fn planner_splits(&self, _nodes: usize) -> &'static [Parallelism] {
        &[]
    }

    fn planner_prefill_chunks(&self) -> [i64; 2] {
        LlamaCpp.planner_prefill_chunks()
    }
}
