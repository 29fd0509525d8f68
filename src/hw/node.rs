//! Node presets: memory, bandwidth, compute, ports, power.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The operating system a node runs (decides e.g. the GPU<->CPU sync path).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Os {
    /// macOS (Metal, JACCL over Thunderbolt).
    Macos,
    /// Linux (CUDA, ROCm/Vulkan, or CPU).
    Linux,
}

/// A machine preset.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    /// Preset id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Chip family; calibration profiles are keyed by it.
    pub chip: String,
    /// Operating system.
    pub os: Os,
    /// GPU cores (CUDA cores for GB10, CUs for Radeon).
    pub gpu_cores: u32,
    /// CPU cores.
    pub cpu_cores: u32,
    /// Unified memory as the maker states it, GB; DRAM comes in binary sizes, so the figure is
    /// GiB ([`NodeSpec::memory_bytes`]).
    pub memory_gb: f64,
    /// Peak memory bandwidth, GB/s.
    pub mem_bw_gbs: f64,
    /// Peak FP16 GPU throughput, TFLOPS.
    pub fp16_tflops: f64,
    /// Price, USD.
    pub price_usd: f64,
    /// Idle wall power, W.
    pub idle_w: f64,
    /// Maximum wall power, W.
    pub max_w: f64,
    /// Ports usable for RDMA (Thunderbolt 5 on Macs, QSFP on GB10).
    pub rdma_ports: u32,
    /// Thunderbolt/USB4 ports.
    pub tb_ports: u32,
    /// QSFP ports (ConnectX-7 on GB10 machines).
    #[serde(default)]
    pub qsfp_ports: u32,
    /// Thunderbolt generation of those ports (0: none).
    pub tb_generation: u32,
    /// Payload rate its ConnectX-7 reaches over RoCE with both x4 halves pinned, Gb/s, where
    /// slower than the DGX Spark FE's (the `cx7-roce` fabric's): the ASUS GX10's second PCIe
    /// endpoint negotiates Gen5 x2 (FACTS-2026 A4). `None`: the Spark FE's.
    #[serde(default)]
    pub qsfp_gbps: Option<f64>,
    /// Built-in Ethernet, Gb/s.
    pub ethernet_gbps: f64,
    /// Fraction of memory the GPU may wire (macOS recommended working set).
    pub wired_fraction: f64,
    /// Measured single-node CPU HPL, Gflops.
    pub hpl_cpu_gflops: f64,
    /// Wall power during HPL, W.
    pub hpl_w: f64,
    /// The profiled chip whose calibrated parameters this node uses when the profile has none
    /// for `chip` (a chip never measured: its nearest profiled family). Predictions that use it
    /// are labelled extrapolations.
    #[serde(default)]
    pub calibrated_as: Option<String>,
    /// The GPU memory limit the user set, GB (macOS `iogpu.wired_limit_mb`, Linux GTT/TTM
    /// `ttm.pages_limit`): taken as written instead of the wired-fraction default.
    #[serde(default)]
    pub gpu_memory_limit_gb: Option<f64>,
    /// FP16 GEMM throughput MLX reaches on the GPU's neural accelerators, TFLOPS (M5's "Neural
    /// Accelerator in each core": MLX takes them on GPU generation >= 17 and macOS >= 26.2,
    /// FACTS-2026 A2). MLX runs time compute against it, other runtimes (llama.cpp's Metal
    /// kernels) against `fp16_tflops`. Assumption: it stands for every compute op of an MLX run
    /// (attention has NAX kernels for head dims 64 and 128 only; the rest is not modelled).
    #[serde(default)]
    pub mlx_gemm_tflops: Option<f64>,
    /// Dense FP8 tensor-core peak, TFLOPS, where the GPU has an FP8 tensor path (GB10): the
    /// CUDA engines (vLLM, SGLang) run an FP8 W8A8 checkpoint's GEMMs there (CUTLASS scaled_mm)
    /// at the chip's GEMM efficiencies; every other format and runtime reads `fp16_tflops`.
    #[serde(default)]
    pub fp8_gemm_tflops: Option<f64>,
    /// The sustained DRAM read bandwidth measured on this box, GB/s (a saturating-read kernel),
    /// where a source gives one: no kernel streams faster, whatever its fitted efficiency
    /// (`engine::cost` caps every stream at it: weights, KV, side kernels and elementwise
    /// traffic). None: the spec `mem_bw_gbs`.
    #[serde(default)]
    pub read_ceiling_gbs: Option<f64>,
    /// The SoC power limits, W, the box's firmware offers (AI Max+ 395 boards: 55/85/120 W,
    /// FACTS-2026 A3); empty when the box has no user-set mode.
    #[serde(default)]
    pub power_modes_w: Vec<f64>,
    /// The SoC power limit chosen, W (one of `power_modes_w`; none: the box as shipped, its
    /// `fp16_tflops` and `max_w`). It caps compute, not memory bandwidth: issued FLOP/s at most
    /// the limit over the chip's energy per FLOP, and wall power at most idle plus the limit.
    #[serde(default)]
    pub power_mode_w: Option<f64>,
    /// Whether `plan` considers this node when the request names no nodes (false for boxes of a
    /// chip that has its reference box in the set, and for chips never measured).
    #[serde(default = "yes")]
    pub planner: bool,
    /// Source of each figure.
    #[serde(default)]
    pub sources: BTreeMap<String, String>,
}

fn yes() -> bool {
    true
}

/// Rate at which a node reads model weights back from its internal SSD after a restart, GB/s,
/// when the scenario gives none (`faults.node.disk_read_gbs`). FACTS.md has no published load
/// rate for these machines: this is an assumed round figure for a PCIe 4.0 x4 NVMe SSD's
/// sequential read, below its ~7 GB/s line rate because a load also wires the memory. Set your
/// own from a timed model load.
pub const DEFAULT_DISK_READ_GBS: f64 = 3.0;

impl NodeSpec {
    /// Whether `other` does the same work in the same time: the same machine but for what only
    /// sizes or labels it (id, name, memory and its GPU limit, price, the planner flag,
    /// sources). A 256 GB and a 512 GB M3 Ultra run a step alike; what fits on each is the
    /// plan's concern.
    pub fn times_like(&self, other: &NodeSpec) -> bool {
        let strip = |n: &NodeSpec| NodeSpec {
            id: String::new(),
            name: String::new(),
            memory_gb: 0.0,
            gpu_memory_limit_gb: None,
            wired_fraction: 0.0,
            price_usd: 0.0,
            planner: true,
            sources: BTreeMap::new(),
            ..n.clone()
        };
        self == other || strip(self) == strip(other)
    }

    /// Bytes of physical memory. A maker's "GB" of DRAM is binary (a 128 GB box holds 128 GiB):
    /// FACTS-2026 B1/B2, vLLM sees 121.63 GiB of GPU memory on a "128 GB" GB10, more than
    /// 128e9 bytes (119.2 GiB) could give.
    pub fn memory_bytes(&self) -> f64 {
        self.memory_gb * (1u64 << 30) as f64
    }

    /// Memory the GPU may use, in bytes, for a wired fraction of [`NodeSpec::memory_bytes`].
    pub fn usable_bytes(&self, wired_fraction: f64) -> f64 {
        self.memory_bytes() * wired_fraction
    }

    /// Peak memory bandwidth in bytes per second.
    pub fn mem_bw(&self) -> f64 {
        self.mem_bw_gbs * 1e9
    }

    /// Peak FP16 in FLOP/s.
    pub fn flops(&self) -> f64 {
        self.fp16_tflops * 1e12
    }

    /// The FLOP/s a runtime can issue on this node: `mlx_gemm_tflops` when the runtime is MLX
    /// and the chip has neural accelerators, else `fp16_tflops`; under a power mode, at most
    /// the mode's watts over `pj_per_flop` (the chip's fitted energy per issued FLOP, the same
    /// figure the power model charges), so the mode's cap on compute follows from its energy.
    pub fn issued_flops(&self, mlx: bool, pj_per_flop: f64) -> f64 {
        let peak = match self.mlx_gemm_tflops {
            Some(t) if mlx => t * 1e12,
            _ => self.flops(),
        };
        self.power_capped(peak, pj_per_flop)
    }

    /// The fraction of the spec bandwidth a stream can reach at most: the measured sustained
    /// read over `mem_bw_gbs` (`read_ceiling_gbs`), 1 where no source measures it.
    pub fn read_ceiling(&self) -> f64 {
        self.read_ceiling_gbs.map_or(1.0, |r| (r / self.mem_bw_gbs).min(1.0))
    }

    /// The FP8 tensor-core FLOP/s an FP8 W8A8 GEMM can issue on this node (`fp8_gemm_tflops`,
    /// under a power mode's cap as [`Self::issued_flops`]), or `None` without an FP8 path.
    pub fn fp8_issued_flops(&self, pj_per_flop: f64) -> Option<f64> {
        Some(self.power_capped(self.fp8_gemm_tflops? * 1e12, pj_per_flop))
    }

    /// `peak` FLOP/s under the chosen power mode: at most the mode's watts over `pj_per_flop`.
    fn power_capped(&self, peak: f64, pj_per_flop: f64) -> f64 {
        match self.power_mode_w {
            Some(w) if pj_per_flop > 0.0 => peak.min(w / (pj_per_flop * 1e-12)),
            _ => peak,
        }
    }

    /// Checks that a chosen power mode is one the box offers.
    pub fn check_power_mode(&self) -> Result<(), String> {
        match self.power_mode_w {
            Some(w) if !self.power_modes_w.contains(&w) => {
                Err(format!("`power_mode_w = {w}` is not a mode of node `{}` (its modes: {:?} W)", self.id, self.power_modes_w))
            }
            _ => Ok(()),
        }
    }

    /// Wall power ceiling, W: `max_w`, or under a power mode at most idle plus the mode's
    /// SoC limit (assumption: the rest of the box draws its idle power; FACTS-2026 D: the
    /// MS-S1 Max in its 130 W mode drew ~120 W at the wall for AI inference, idle 9-12 W).
    /// Memory-bound decode keeps its rate under the cap: FACTS-2026 D has Llama 3.1 8B Q4_K_M
    /// Vulkan decode on a Ryzen AI Max 385 (same 256-bit memory) at 52.2 W average, inside even
    /// the 55 W mode, so a mode clamps the power the model charges, not the bytes per second.
    pub fn max_wall_w(&self) -> f64 {
        match self.power_mode_w {
            Some(w) => self.max_w.min(self.idle_w + w),
            None => self.max_w,
        }
    }
}
