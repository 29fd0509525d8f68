//! The calibrated parameters the cost model reads, in one table: the profile key, and what it
//! times. Units and allowed ranges are the profile's own ([`crate::profile::CHIP_FIELDS`] and its
//! siblings, checked on load), looked up rather than repeated.

use crate::profile::{Bound, CHIP_FIELDS, COMM_FIELDS, Field, KERNEL_FIELDS, MOE_FIELDS, Profile, RUNTIME_FIELDS};
use ParamSection::{Chip, Comm, Kernels, Moe, Runtime};

/// The profile section a cost parameter lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamSection {
    /// `[chips.<chip>]`: per chip.
    Chip,
    /// `[chips.<chip>.runtimes.<runtime>]`: per chip and runtime.
    Runtime,
    /// `[comm]`: the cluster's messages and collectives.
    Comm,
    /// `[moe]`: mixture-of-experts routing.
    Moe,
    /// `[kernels]`: kernel families across chips.
    Kernels,
}

/// One calibrated parameter of the cost model.
#[derive(Clone, Copy, Debug)]
pub struct CostParameter {
    /// Section of the profile.
    pub section: ParamSection,
    /// Key in that section.
    pub key: &'static str,
    /// What it times, and in which cost term.
    pub times: &'static str,
}

impl CostParameter {
    /// Unit and allowed values, from the profile's field table for the section; `None` if the
    /// key is not a profile parameter (a test keeps the table free of such keys).
    pub fn unit_and_bound(&self) -> Option<(&'static str, Bound)> {
        fn look<T>(fields: &[Field<T>], key: &str) -> Option<(&'static str, Bound)> {
            fields.iter().find(|f| f.name == key).map(|f| (f.unit, f.bound))
        }
        match self.section {
            ParamSection::Chip => look(CHIP_FIELDS, self.key),
            ParamSection::Runtime => look(RUNTIME_FIELDS, self.key),
            ParamSection::Comm => look(COMM_FIELDS, self.key),
            ParamSection::Moe => look(MOE_FIELDS, self.key),
            ParamSection::Kernels => look(KERNEL_FIELDS, self.key),
        }
    }

    /// The dotted paths of this parameter in `profile`: one per chip, per chip and runtime, or
    /// the one in `[comm]`.
    pub fn paths(&self, profile: &Profile) -> Vec<String> {
        let key = self.key;
        match self.section {
            ParamSection::Chip => profile.chips.keys().map(|c| format!("chips.{c}.{key}")).collect(),
            ParamSection::Runtime => {
                profile.chips.iter().flat_map(|(c, p)| p.runtimes.keys().map(move |r| format!("chips.{c}.runtimes.{r}.{key}"))).collect()
            }
            ParamSection::Comm => vec![format!("comm.{key}")],
            ParamSection::Moe => vec![format!("moe.{key}")],
            ParamSection::Kernels => vec![format!("kernels.{key}")],
        }
    }
}

/// A row of [`COST_PARAMETERS`].
const fn p(section: ParamSection, key: &'static str, times: &'static str) -> CostParameter {
    CostParameter { section, key, times }
}

/// Every calibrated parameter the cost model reads ([`super::NodeCost`], [`super::NetCost`]).
/// Node peaks (`mem_bw_gbs`, `fp16_tflops`) and fabric figures (`latency_us`, `bandwidth_gbs`)
/// come from the catalog; JACCL's frame size (engine options) only enters the fault model.
pub const COST_PARAMETERS: &[CostParameter] = &[
    p(Chip, "bw_eff_dense", "dense GEMV/GEMM weight streams (x runtime bw_scale, kernel multiplier); the MLA rope-score mask's traffic"),
    p(Chip, "bw_eff_expert", "routed-expert gather weight streams (x runtime bw_scale, kernel multiplier)"),
    p(Chip, "bw_eff_attention", "attention's KV-cache reads at depth"),
    p(Chip, "compute_eff_dense", "dense GEMM FLOPs (prefill), and the issued FLOPs of dense work"),
    p(Chip, "compute_eff_expert", "routed-expert GEMM FLOPs (prefill), and their issued FLOPs"),
    p(Chip, "compute_eff_attention", "attention FLOPs over the context, and their issued FLOPs"),
    p(Runtime, "kernel_launch_us", "one kernel launch (per op kernel; once per batch)"),
    p(Runtime, "host_per_step_us", "host work per forward (an engine's own host costs replace it)"),
    p(Runtime, "host_per_seq_us", "host work per sampling sequence per forward (as host_per_step_us)"),
    p(Runtime, "bw_scale", "the runtime's scale on the peak memory bandwidth its kernels reach"),
    p(Runtime, "compute_scale", "the runtime's scale on the peak FLOP/s its kernels reach, and on issued FLOPs"),
    p(Runtime, "stage_us", "a pipeline stage's own host and sync cost per forward"),
    p(Runtime, "bw_mult_half", "bandwidth multiplier of bf16/f16 weight kernels"),
    p(Runtime, "bw_mult_8bit", "bandwidth multiplier of 6-8-bit weight kernels"),
    p(Runtime, "bw_mult_mxfp4", "bandwidth multiplier of MXFP4 weight kernels"),
    p(Runtime, "bw_mult_nvfp4", "bandwidth multiplier of NVFP4 weight kernels (CUDA engines)"),
    p(Runtime, "bw_mult_fp8", "bandwidth multiplier of FP8 W8A8 weight kernels (CUDA engines)"),
    p(Runtime, "graph_kernel_us", "one kernel inside a replayed CUDA graph (CUDA engines without --enforce-eager)"),
    p(
        Runtime,
        "host_per_kernel_us",
        "MLX's host build of the next step's graph, per kernel, beside the GPU's step (a step takes the longer)",
    ),
    p(Runtime, "dequant_ops_kquant", "ALU instructions per k-quant weight per GEMM token tile (prefill)"),
    p(Runtime, "dequant_ops_legacy", "ALU instructions per legacy-block weight per GEMM token tile (prefill)"),
    p(Runtime, "dequant_ops_mxfp4", "ALU instructions per MXFP4 weight per GEMM token tile (prefill)"),
    p(Runtime, "dequant_ops_affine", "ALU instructions per MLX affine weight per GEMM token tile (prefill)"),
    p(Comm, "gpu_sync_default_us", "one GPU<->CPU crossing with MLX's default fence (macOS)"),
    p(Comm, "gpu_sync_fast_us", "one GPU<->CPU crossing with the fast fence, or off macOS"),
    p(Comm, "jaccl_round_us", "software part of one RDMA send/completion round, beside the wire latency"),
    p(Comm, "jaccl_peer_us", "CPU post and poll of one peer's transfer in a collective"),
    p(Comm, "cpu_reduce_gbs", "CPU reduction of received all_sum bytes"),
    p(Comm, "tcp_message_us", "software cost of one TCP message, beside the wire latency"),
    p(Comm, "rpc_call_us", "one blocking llama.cpp RPC call, client and server halves"),
    p(Comm, "rpc_graph_node_us", "the RPC server's deserialize and rebuild per graph node"),
    p(Comm, "rpc_graph_node_bytes", "serialized bytes per graph node of a GRAPH_COMPUTE call"),
    p(Comm, "collective_in_context_us", "extra per-rank cost of a collective issued between kernels"),
    p(Comm, "nccl_base_us", "fixed cost of one NCCL collective (LL protocol), beside its steps' wire latency"),
    p(Comm, "nccl_ll_gbs", "bus bandwidth of NCCL's LL protocol (small messages)"),
    p(Comm, "nccl_simple_us", "extra start-up of NCCL's Simple protocol (bulk messages) over LL"),
    p(Comm, "ray_step_us", "Ray's host cost per forward step of multi-node vLLM"),
    p(Moe, "expert_popularity_sigma", "how many distinct experts a batch of independent sequences reads (skew of expert popularity)"),
    p(Kernels, "flash_compute_ratio", "a flash-attention kernel's QK and PV FLOP rate against the dense GEMM's (prefill at depth)"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cost_parameter_is_in_the_default_profile_and_inside_its_range() {
        let profile = Profile::default_profile();
        for c in COST_PARAMETERS {
            let (_, bound) = c.unit_and_bound().unwrap_or_else(|| panic!("`{}` is not a profile parameter", c.key));
            let paths = c.paths(&profile);
            assert!(!paths.is_empty(), "{}", c.key);
            for path in paths {
                let (v, b) = profile.param(&path).unwrap_or_else(|| panic!("{path} missing"));
                assert_eq!(b, bound, "{path}");
                assert!(bound.admits(v), "{path} = {v} must be {}", bound.describe());
            }
        }
    }

    #[test]
    fn the_table_lists_every_profile_parameter_but_the_power_models_once() {
        let power = ["pj_per_byte", "pj_per_flop", "cpu_core_w"];
        let listed = |s: ParamSection, k: &str| COST_PARAMETERS.iter().filter(|c| c.section == s && c.key == k).count();
        for f in CHIP_FIELDS.iter().filter(|f| !power.contains(&f.name)) {
            assert_eq!(listed(Chip, f.name), 1, "chip {}", f.name);
        }
        for f in RUNTIME_FIELDS {
            assert_eq!(listed(Runtime, f.name), 1, "runtime {}", f.name);
        }
        for f in COMM_FIELDS {
            assert_eq!(listed(Comm, f.name), 1, "comm {}", f.name);
        }
        for f in MOE_FIELDS {
            assert_eq!(listed(Moe, f.name), 1, "moe {}", f.name);
        }
        for f in KERNEL_FIELDS {
            assert_eq!(listed(Kernels, f.name), 1, "kernels {}", f.name);
        }
        assert_eq!(
            COST_PARAMETERS.len(),
            CHIP_FIELDS.len() - power.len() + RUNTIME_FIELDS.len() + COMM_FIELDS.len() + MOE_FIELDS.len() + KERNEL_FIELDS.len()
        );
    }
}
