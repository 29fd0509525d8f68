//! oMLX on one node: an MLX server with continuous batching (FACTS.md: jundot/omlx issue 1783,
//! Qwen3-Coder-Next 6-bit on an M4 Max, 1 user 78.4 and 8 users 180.2 tok/s aggregate). The
//! shape of vllm-mlx ([`MlxServer`]): MLX kernels behind its own Python server loop, whose host
//! costs are the chip's `[engines.omlx]` (borrowed from another chip where a chip has none),
//! its scheduler taken as mlx-lm's `BatchGenerator` (an assumption: FACTS.md describes mlx-lm's,
//! not oMLX's). The planner does not enumerate it.

use super::super::options::EngineKind;
use super::vllm_mlx::MlxServer;

/// oMLX: MLX kernels behind oMLX's own server loop.
pub const OMLX: MlxServer = MlxServer {
    kind: EngineKind::Omlx,
    names: &["omlx"],
    label: "oMLX",
    assumption: "oMLX scheduler taken as mlx-lm's BatchGenerator (MLX kernels, oMLX host costs)",
};
