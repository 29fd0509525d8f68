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
    /// Unified memory, GB.
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
    /// Source of each figure.
    #[serde(default)]
    pub sources: BTreeMap<String, String>,
}

/// Rate at which a node reads model weights back from its internal SSD after a restart, GB/s,
/// when the scenario gives none (`faults.node.disk_read_gbs`). FACTS.md has no published load
/// rate for these machines: this is an assumed round figure for a PCIe 4.0 x4 NVMe SSD's
/// sequential read, below its ~7 GB/s line rate because a load also wires the memory. Set your
/// own from a timed model load.
pub const DEFAULT_DISK_READ_GBS: f64 = 3.0;

impl NodeSpec {
    /// Memory the GPU may use, in bytes, for a wired fraction.
    pub fn usable_bytes(&self, wired_fraction: f64) -> f64 {
        self.memory_gb * 1e9 * wired_fraction
    }

    /// Peak memory bandwidth in bytes per second.
    pub fn mem_bw(&self) -> f64 {
        self.mem_bw_gbs * 1e9
    }

    /// Peak FP16 in FLOP/s.
    pub fn flops(&self) -> f64 {
        self.fp16_tflops * 1e12
    }
}
