//! llama.cpp on one node (`llama-server`; llama-cpp-python 0.3.36's vendored source).

use crate::hw::NodeSpec;

use super::super::lower::lower_segments;
use super::super::lowered::Lowered;
use super::super::options::{EngineKind, EngineOptions, Parallelism, Runtime};
use super::super::plan::Plan;
use super::super::split::SplitError;
use super::{
    CABLE_FAILS_REQUESTS, CableLoss, EngineRuntime, LLAMA_CPP_DEFAULTS, RESTARTS, ServingLoop, VersionDefaults,
    client_crash_reloads_every_node, single_node_planner_splits, single_node_split,
};

/// llama.cpp server's logical batch `n_batch` (tokens per `llama_decode` call), default 2,048.
pub const LLAMA_N_BATCH: u64 = 2048;

/// llama-server's default slots (FACTS.md: 4 sharing one unified KV pool).
pub const LLAMA_SERVER_SLOTS: u64 = 4;

/// llama-server's flags for its slots (`-np 8`, `--parallel 8`).
pub const LLAMA_SERVER_SLOT_FLAGS: &[&str] = &["-np", "--parallel", "--n-parallel"];

/// llama.cpp's `llama-server` with `-np` slots ([`LLAMA_SERVER_SLOTS`] by default), batches of
/// `n_batch` = 2,048 tokens cut into micro-batches of the engine's `prefill_chunk` (`n_ubatch`,
/// 512).
pub fn llama_server(max_batch: Option<u64>, prefill_chunk: u64) -> ServingLoop {
    let ub = prefill_chunk.max(1);
    ServingLoop::LlamaServer { slots: max_batch.unwrap_or(LLAMA_SERVER_SLOTS), n_batch: (LLAMA_N_BATCH / ub * ub).max(ub) }
}

/// The value of a `-ub N` (or `--ubatch-size N`) flag in a benchmark's command line, if any
/// (a positive integer; anything else is not the flag).
pub fn ubatch_flag(notes: &str) -> Option<u64> {
    super::positive_flag(notes, &["-ub", "--ubatch-size"]).map(|(ub, _)| ub)
}

/// The GPU backend a benchmark's text names for an AMD GPU: `rocm` or `vulkan` (also named by
/// its drivers, `radv` and `amdvlk`; ROCm also as `HIP`) where exactly one of the two appears (any
/// case), else none.
pub fn backend_named(notes: &str) -> Option<&'static str> {
    let lower = notes.to_lowercase();
    let vulkan = ["vulkan", "radv", "amdvlk"].iter().any(|w| lower.contains(w));
    // llama.cpp's ROCm backend is its HIP build (`GGML_HIP`, the `ggml-hip` library): `HIP` as
    // a word of its own (not `chip`, not `hipBLAS` alone).
    let hip = lower.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| w == "hip");
    match (lower.contains("rocm") || hip, vulkan) {
        (true, false) => Some("rocm"),
        (false, true) => Some("vulkan"),
        _ => None,
    }
}

/// Whether a benchmark's command line turns flash attention on or off: `-fa 1|0|on|off`,
/// `--flash-attn ...`, or the words "flash attention on|off" (any case); `auto` and anything
/// else say nothing.
pub fn flash_attention_flag(notes: &str) -> Option<bool> {
    let lower = notes.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| c.is_whitespace() || c == ',' || c == ';' || c == '=').filter(|w| !w.is_empty()).collect();
    let value = |w: &str| on_off(w.trim_end_matches(['.', ')', ':']));
    words
        .windows(2)
        .find_map(|w| matches!(w[0], "-fa" | "--flash-attn").then(|| value(w[1])).flatten())
        .or_else(|| words.windows(3).find_map(|w| (w[0] == "flash" && w[1] == "attention").then(|| value(w[2])).flatten()))
}

/// A switch's value as llama.cpp's flags and people write it: `1`/`on`/`true`/`enabled` or
/// `0`/`off`/`false`/`disabled` (lower case); anything else (`auto`) is neither.
pub fn on_off(word: &str) -> Option<bool> {
    match word {
        "1" | "on" | "true" | "enabled" => Some(true),
        "0" | "off" | "false" | "disabled" => Some(false),
        _ => None,
    }
}

/// The `[engine]` options a llama.cpp row's text states (every llama.cpp engine reads the
/// same command line): `-ub N` (`n_ubatch`, the micro-batch a prompt is cut into: the prefill
/// chunk; ggml-org's `benches/dgx-spark.md` runs `llama-bench -ub 2048`, so a 2,048-token
/// prompt is one forward and the MoE experts stream once, not four times) and the GPU backend
/// (ROCm or Vulkan, which tile MoE GEMMs differently on an AMD GPU) and flash attention on or
/// off (`-fa`, [`flash_attention_flag`]).
pub fn llama_measurement_options(notes: &str) -> Vec<(&'static str, toml::Value)> {
    let mut v = Vec::new();
    if let Some(ub) = ubatch_flag(notes) {
        v.push(("engine.prefill_chunk", toml::Value::Integer(ub as i64)));
    }
    if let Some(backend) = backend_named(notes) {
        v.push(("engine.backend", toml::Value::String(backend.into())));
    }
    if let Some(fa) = flash_attention_flag(notes) {
        v.push(("engine.flash_attention", toml::Value::Boolean(fa)));
    }
    v
}

/// llama.cpp: GGUF on one node.
pub struct LlamaCpp;

impl EngineRuntime for LlamaCpp {
    fn kind(&self) -> EngineKind {
        EngineKind::LlamaCpp
    }

    fn names(&self) -> &'static [&'static str] {
        &["llama-cpp"]
    }

    fn id(&self) -> &'static str {
        "llama-cpp"
    }

    fn label(&self) -> &'static str {
        "llama.cpp"
    }

    /// [`llama_measurement_options`].
    fn measurement_options(&self, notes: &str) -> Vec<(&'static str, toml::Value)> {
        llama_measurement_options(notes)
    }

    /// llama-server `-np N` ([`LLAMA_SERVER_SLOT_FLAGS`]), 4 slots by default.
    fn concurrency_flags(&self) -> (&'static [&'static str], Option<u64>) {
        (LLAMA_SERVER_SLOT_FLAGS, Some(LLAMA_SERVER_SLOTS))
    }

    fn kernels(&self) -> Runtime {
        Runtime::LlamaCpp
    }

    fn version_defaults(&self) -> VersionDefaults {
        LLAMA_CPP_DEFAULTS
    }

    fn default_parallelism(&self, _nodes: usize) -> Parallelism {
        Parallelism::None
    }

    fn check_split(&self, engine: &str, parallelism: Parallelism) -> Result<(), SplitError> {
        single_node_split(engine, parallelism)
    }

    fn mixes_chips(&self, _nodes: &[&NodeSpec]) -> bool {
        false
    }

    fn lower(&self, plan: &Plan, tokens: u64) -> Lowered {
        lower_segments(plan, tokens)
    }

    fn serving_loop(&self, max_batch: Option<u64>, options: &EngineOptions) -> ServingLoop {
        llama_server(max_batch, options.prefill_chunk)
    }

    fn crash_reloads_every_node(&self, _parallelism: Parallelism, node: usize) -> bool {
        client_crash_reloads_every_node(node)
    }

    fn crash_reaction(&self, _parallelism: Parallelism, _node: usize) -> &'static str {
        RESTARTS
    }

    fn cable_loss(&self, _parallelism: Parallelism) -> CableLoss {
        CABLE_FAILS_REQUESTS
    }

    fn planner_splits(&self, nodes: usize) -> &'static [Parallelism] {
        single_node_planner_splits(nodes)
    }

    fn planner_prefill_chunks(&self) -> [i64; 2] {
        [512, 2048]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flash_attention_flag_of_a_command_line_or_its_words() {
        assert_eq!(flash_attention_flag("llama-batched-bench -fa 1 -ub 2048"), Some(true));
        assert_eq!(flash_attention_flag("llama-bench -fa 0 -p 512"), Some(false));
        assert_eq!(flash_attention_flag("--flash-attn off"), Some(false));
        assert_eq!(flash_attention_flag("--flash-attn=on"), Some(true));
        assert_eq!(flash_attention_flag("engine: via LM Studio, flash attention on; config"), Some(true));
        assert_eq!(flash_attention_flag("'Llama.cpp with flash attention' row"), None);
        assert_eq!(flash_attention_flag("-fa auto"), None);
        assert_eq!(flash_attention_flag("llama-bench pp512"), None);
        let opts = llama_measurement_options("llama-bench -fa 0");
        assert!(opts.iter().any(|(k, v)| *k == "engine.flash_attention" && v.as_bool() == Some(false)), "{opts:?}");
    }

    #[test]
    fn ubatch_flag_reads_the_micro_batch_of_a_command_line() {
        assert_eq!(ubatch_flag("llama-bench tg32, -fa 1 -ub 2048, CUDA"), Some(2048));
        assert_eq!(ubatch_flag("llama-bench --ubatch-size 256 -p 512"), Some(256));
        assert_eq!(ubatch_flag("llama-bench pp2048"), None);
        assert_eq!(ubatch_flag("-ub x"), None);
        assert_eq!(ubatch_flag("-ub 0"), None);
        let opts = LlamaCpp.measurement_options("-fa 1 -ub 2048");
        assert_eq!(
            opts,
            vec![("engine.prefill_chunk", toml::Value::Integer(2048)), ("engine.flash_attention", toml::Value::Boolean(true))]
        );
    }

    #[test]
    fn the_gpu_backend_is_read_where_the_text_names_one_of_them() {
        assert_eq!(backend_named("llama-bench tg128, ROCm 6.4.4, build 86f1f4411 (7085)"), Some("rocm"));
        assert_eq!(backend_named("Geerling 2025-08-07 Framework cluster blog (llama-bench tg128, Vulkan)"), Some("vulkan"));
        assert_eq!(backend_named("Vulkan RADV vs ROCm 7"), None, "both named: neither is taken");
        assert_eq!(backend_named("amdvlk; kyuz0 toolboxes"), Some("vulkan"));
        assert_eq!(backend_named("vulkan_radv"), Some("vulkan"));
        assert_eq!(backend_named("llama.cpp HIP"), Some("rocm"));
        assert_eq!(backend_named("ROCm/HIP build"), Some("rocm"));
        assert_eq!(backend_named("on the GB10 chip, hipBLASLt absent"), None);
        assert_eq!(backend_named("llama-bench tg32, -fa 1 -ub 2048, CUDA"), None);
        let opts = super::super::by_name("llama-cpp-rpc").expect("registered").measurement_options("-ub 256, rocm7_rc");
        assert_eq!(opts, vec![("engine.prefill_chunk", toml::Value::Integer(256)), ("engine.backend", toml::Value::String("rocm".into()))]);
    }
}
