//! Operations: one kernel-level step of a layer, with its weights, FLOPs, KV traffic and how it
//! shards under tensor parallelism.

pub use super::op_class::OpClass;
use super::quant::{TensorFormat, TensorRole};

/// Where an operation's weights live under tensor parallelism.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Split 1/N across ranks.
    Sharded,
    /// A full copy on every rank.
    Replicated,
}

/// One operation of a layer.
#[derive(Clone, Debug, PartialEq)]
pub struct Op {
    /// Name for traces.
    pub name: &'static str,
    /// Kernel class.
    pub class: OpClass,
    /// Weight parameters (for `Expert`: per expert).
    pub params: u64,
    /// Kernel launches.
    pub kernels: u32,
    /// Tensor-parallel placement.
    pub placement: Placement,
    /// KV-cache bytes read per token of context (attention only).
    pub kv_bytes_per_ctx: u64,
    /// Whether the KV cache is split across ranks (GQA by KV head) or replicated (MLA latent).
    pub kv_sharded: bool,
    /// KV heads of this op's layer (a GQA layer's K/V projections and attention; 0 for the
    /// others): a full-attention layer with its own geometry (Gemma 4, MiMo-V2-Flash) has fewer
    /// than the model's sliding layers, so tensor parallelism replicates them sooner.
    pub kv_heads: u64,
    /// Attention FLOPs per query token per context token.
    pub attn_flops_per_ctx: u64,
    /// Sliding window, if the layer has one.
    pub window: Option<u64>,
    /// Chunked attention (Llama 4's RoPE layers): a token attends only to the earlier tokens of
    /// its own `chunk`-token block.
    pub chunk: Option<u64>,
    /// Sparse attention (DeepSeek Sparse Attention): each query attends to its indexer's top
    /// `k` tokens, which a runtime's kernel may gather (reading at most `k` cached entries) or
    /// run as dense attention under a mask (`engine::cost::SparseGather`).
    pub sparse_top_k: Option<u64>,
    /// Recurrent state one sequence holds for this op, bytes (a [`OpClass::Recurrent`] op reads
    /// and writes it once per step).
    pub state_bytes: u64,
    /// Recurrence FLOPs per token (a [`OpClass::Recurrent`] op).
    pub recurrence_flops_per_token: u64,
    /// A recurrence whose multi-token form runs as chunked matrix multiplications in every
    /// runtime (Mamba-2's SSD), never as MLX's token-by-token kernel.
    pub recurrence_chunked: bool,
    /// Key dimension of a recurrence's state rows (`linear_key_head_dim`): how many state
    /// entries each lane of MLX's kernel keeps (Dk/32), which sets its instruction mix.
    pub recurrence_key_dim: u64,
    /// `(experts, active)` for routed experts.
    pub experts: Option<(u64, u64)>,
    /// MLA only: the multi-token form of a runtime that expands the latent cache into per-head
    /// keys and values instead of absorbing the up-projections (see [`MlaExpanded`]).
    pub mla_expanded: Option<MlaExpanded>,
    /// MLA only: the attention of llama.cpp's path for GGUFs converted without MLA metadata (see
    /// [`MlaPerHead`]).
    pub mla_per_head: Option<MlaPerHead>,
    /// MLA only: this op's weights are the latent up-projections, which the expanded form applies
    /// to every cached position of a multi-token step (FLOPs scale with the context, not the
    /// step's tokens).
    pub expands_latent: bool,
    /// What the weights are (for per-class quantization); `None` for ops without weights.
    pub role: Option<TensorRole>,
    /// Stored format of the weights (bf16 until [`crate::llm::ModelSpec::quantized_layer_ops`]
    /// applies a quantization).
    pub format: TensorFormat,
}

/// MLA run as plain multi-head attention over a per-head cache: llama.cpp's `deepseek2` graph
/// for a GGUF converted without MLA metadata (`hparams.is_mla()` false) up-projects each new
/// token's latent into per-head keys (nope + rope) and values, caches those, and attends with
/// every head over them in every step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MlaPerHead {
    /// KV-cache bytes per token (bf16/f16): `heads x (nope + rope + v) x 2`.
    pub kv_bytes_per_ctx: u64,
    /// Attention FLOPs per query token per context token: `2 x heads x (nope + rope + v)`.
    pub attn_flops_per_ctx: u64,
}

/// How an MLA attention runs a multi-token step in the expanded form. mlx-lm's DeepSeek V3 (also
/// used for Kimi K2; mlx-lm 0.32.2 `deepseek_v3.py`) absorbs the up-projections into the query
/// only for one-token steps (`L == 1`); for a prefill chunk it computes `k = embed_q(latent)` and
/// `v = unembed_out(latent)` over the whole cache, runs the attention over 128-dim keys and values,
/// and adds the rope scores as a separately materialised mask.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MlaExpanded {
    /// Attention FLOPs per query token per context token: `2 x heads x (nope + v + rope)`.
    pub attn_flops_per_ctx: u64,
    /// Bytes per query token per context token of the rope-score mask (written by a matmul,
    /// read and rewritten by the masking `where`, read by the attention kernel: 4 passes of 2
    /// bytes per head), streamed by two extra kernels.
    pub score_bytes_per_ctx: u64,
}

/// The fraction of `kv_heads` KV heads a rank holding `shard` of the query heads keeps:
/// `max(1, kv_heads / tp) / kv_heads`, i.e. `max(shard, 1 / kv_heads)` (vLLM splits the KV heads
/// while tp <= kv_heads and replicates them beyond; `engine::plan::kv_head_share` cites it).
pub fn kv_head_fraction(kv_heads: u64, shard: f64) -> f64 {
    shard.max(1.0 / kv_heads.max(1) as f64)
}

impl Op {
    /// The fraction of this operation's weights a rank holding `shard` of the query heads keeps,
    /// where the runtime keeps `kv_shard` of the KV heads (`engine::plan::kv_head_share`):
    /// the K and V projections follow the KV heads (vLLM replicates them past the KV-head
    /// count, `QKVParallelLinear`); every other sharded weight `shard`; a replicated one all.
    pub fn weight_share(&self, shard: f64, kv_shard: f64) -> f64 {
        match (self.placement, self.role) {
            (Placement::Sharded, Some(TensorRole::AttnK | TensorRole::AttnV)) => self.kv_share(shard, kv_shard),
            (Placement::Sharded, _) => shard,
            _ => 1.0,
        }
    }

    /// The fraction of this op's KV heads a rank holding `shard` of the query heads keeps:
    /// `max(shard, 1 / kv_heads)` of its own layer's KV heads when it names them, else the
    /// model's `kv_shard` (`engine::plan::kv_head_share`, the same rule).
    pub fn kv_share(&self, shard: f64, kv_shard: f64) -> f64 {
        if self.kv_heads > 0 { kv_head_fraction(self.kv_heads, shard) } else { kv_shard }
    }

    /// An op with no weights, KV cache or experts: the fields every constructor starts from.
    fn base(name: &'static str, class: OpClass, kernels: u32, placement: Placement) -> Self {
        Op {
            name,
            class,
            params: 0,
            kernels,
            placement,
            kv_bytes_per_ctx: 0,
            kv_sharded: false,
            kv_heads: 0,
            attn_flops_per_ctx: 0,
            window: None,
            chunk: None,
            sparse_top_k: None,
            state_bytes: 0,
            recurrence_flops_per_token: 0,
            recurrence_chunked: false,
            recurrence_key_dim: 0,
            experts: None,
            mla_expanded: None,
            mla_per_head: None,
            expands_latent: false,
            role: None,
            format: TensorFormat::BF16,
        }
    }

    /// A dense weight op in the role `role`.
    pub fn dense(name: &'static str, role: TensorRole, params: u64, placement: Placement) -> Self {
        Op { params, role: Some(role), ..Op::base(name, OpClass::Dense, 1, placement) }
    }

    /// Stored bytes of `params` of this op's weights.
    pub fn weight_bytes(&self, params: f64) -> f64 {
        params * self.format.bits / 8.0
    }

    /// An elementwise op (launch cost only).
    pub fn elementwise(name: &'static str, kernels: u32) -> Self {
        Op::base(name, OpClass::Elementwise, kernels, Placement::Replicated)
    }

    /// Attention over the KV cache (heads sharded under tensor parallelism; the cache itself
    /// split by KV head when `kv_sharded`, replicated otherwise).
    pub fn attention(name: &'static str, kv_bytes_per_ctx: u64, kv_sharded: bool, attn_flops_per_ctx: u64, window: Option<u64>) -> Self {
        Op { kv_bytes_per_ctx, kv_sharded, attn_flops_per_ctx, window, ..Op::base(name, OpClass::Attention, 1, Placement::Sharded) }
    }

    /// A linear-attention recurrence over a fixed per-sequence state of `state_bytes` (heads
    /// sharded under tensor parallelism, so the state too), `flops_per_token` per token, with
    /// `params` small unquantized weights of its own (the depthwise convolution, decay and
    /// bias vectors: MLX quantizes only linear and embedding layers).
    /// `key_dim` is the state rows' key dimension (`linear_key_head_dim`).
    pub fn recurrent(name: &'static str, params: u64, state_bytes: u64, flops_per_token: u64, key_dim: u64, kernels: u32) -> Self {
        Op {
            params,
            state_bytes,
            recurrence_flops_per_token: flops_per_token,
            recurrence_key_dim: key_dim,
            ..Op::base(name, OpClass::Recurrent, kernels, Placement::Sharded)
        }
    }

    /// Routed experts: `params_per_expert` weights per expert, `active` of `experts` selected
    /// per token, `kernels` gather kernels.
    pub fn experts(name: &'static str, params_per_expert: u64, kernels: u32, experts: u64, active: u64) -> Self {
        Op {
            params: params_per_expert,
            experts: Some((experts, active)),
            role: Some(TensorRole::RoutedExperts),
            ..Op::base(name, OpClass::Expert, kernels, Placement::Sharded)
        }
    }

    pub(super) fn all_sum() -> Self {
        Op::base("all_sum", OpClass::AllSum, 0, Placement::Replicated)
    }

    /// All parameters stored for this op.
    pub fn total_params(&self) -> u64 {
        match self.experts {
            Some((e, _)) => self.params * e,
            None => self.params,
        }
    }

    /// Parameters read when one token passes through.
    pub fn active_params(&self) -> u64 {
        match self.experts {
            Some((_, k)) => self.params * k,
            None => self.params,
        }
    }

    /// Distinct experts touched by a batch of `tokens` tokens (expected value under uniform
    /// routing): `E (1 - (1 - k/E)^T)`.
    pub fn experts_touched(&self, tokens: u64) -> f64 {
        self.experts_touched_skewed(tokens, 0.0)
    }

    /// Distinct experts touched by `tokens` independently routed tokens when log expert
    /// popularity spreads by `skew` ([`expert_coverage`]); 1 for a non-expert op.
    pub fn experts_touched_skewed(&self, tokens: u64, skew: f64) -> f64 {
        match self.experts {
            Some((e, k)) => expert_coverage(e, k, tokens, skew),
            None => 1.0,
        }
    }

    /// Expected GEMM tiles of `tile` rows that `tokens` independently routed rows fill over the
    /// experts ([`expert_row_tiles`]); a dense op's rows fill `ceil(tokens / tile)`.
    pub fn expert_row_tiles(&self, tokens: u64, skew: f64, tile: f64) -> f64 {
        match self.experts {
            Some((e, k)) => expert_row_tiles(e, k, tokens, skew, tile),
            None => (tokens as f64 / tile).ceil(),
        }
    }

    /// Whether the op's cost depends on the cached context or on each sequence's own state, so
    /// that a batch runs it once per sequence: attention, the MLA latent up-projections (which
    /// the expanded prefill form runs over the whole cache) and a recurrence (each sequence's
    /// state read and written).
    pub fn depends_on_context(&self) -> bool {
        matches!(self.class, OpClass::Attention | OpClass::Recurrent) || self.expands_latent
    }

    /// Context length this op attends over when `ctx` tokens (the current one included) are
    /// in the sequence: all of them, the last `window`, or for chunked attention those of the
    /// current chunk, `(ctx - 1) mod chunk + 1`. A multi-token step is charged at its last (and
    /// middle) token: exact when the step stays inside one chunk, as prefill chunks that divide
    /// the chunk size (512, 2048, 4096 of 8192) always do.
    pub fn effective_context(&self, ctx: u64) -> u64 {
        let ctx = self.chunk.filter(|c| *c > 0).map_or(ctx, |c| if ctx == 0 { 0 } else { (ctx - 1) % c + 1 });
        self.window.map_or(ctx, |w| w.min(ctx))
    }
}

/// Expected distinct experts that `tokens` independently routed tokens touch, of `experts`
/// with `active` chosen per token, when expert `i` (by rank, from 1 the most popular) is chosen
/// by a token with probability `p_i = min(1, c w_i)`, its popularity log-normal,
/// `w_i = exp(skew z_i)` at the normal quantile `z_i = Phi^-1((E - i + 1/2) / E)` (the `E`
/// experts spaced evenly over the distribution, so the function is deterministic), `c` set so
/// that `sum p_i = active` (every token selects exactly `active` experts; the `min`
/// water-fills the mass of an expert above certainty onto the others):
/// `sum_i 1 - (1 - p_i)^tokens`.
///
/// `skew` = 0 is uniform routing, `E (1 - (1 - k/E)^T)`. Assumption (no published source
/// measures it): a workload's requests (one task, one domain: a benchmark's prompts cut from
/// one book) do not spread over the experts as evenly as the router's load-balancing loss
/// spreads a mix of domains, so some experts are hot; a log-normal spread of popularity is the
/// one-parameter form of that skew, fitted on the rows whose batches it moves. It replaced a
/// Zipf law (`p_i ~ i^-s`), whose few near-certain head experts made a batch of 8 touch too few
/// experts for a batch of 32 touching as many as measured (gpt-oss-120b on a GB10, vLLM and
/// llama-batched-bench alike: Zipf 16.9 of 128 at 8 and 40.3 at 32; the rates imply ~20 and
/// ~40); judged by cross-validation (2026-12-05: `--cv row` 12.6 -> 11.7%, `--cv model`
/// 16.4 -> 15.1%, same parameter count).
///
/// Bounds, for any `skew` >= 0 and `tokens` >= 1: `active <= coverage <= uniform coverage`
/// (each term `1 - (1 - p)^T` is at least `p`, and concave in `p`, so by Jensen the sum is at
/// most `E` times its value at the mean `k/E`); exactly `active` at one token; non-decreasing
/// in `tokens`; at most `experts`.
///
/// Memoised per thread: the skewed form costs two `powf` per expert, and every step, rank and
/// nudged profile of a run asks for the same few values (a 64-rank DeepSeek run spent half its
/// time here). The value is the pure function's, bit for bit.
pub fn expert_coverage(experts: u64, active: u64, tokens: u64, skew: f64) -> f64 {
    memoised((0, experts, active, tokens, skew.to_bits(), 0), || expert_coverage_uncached(experts, active, tokens, skew))
}

/// Memo key of the routing functions: (function, experts, active, tokens, skew bits, tile bits).
type RoutingKey = (u8, u64, u64, u64, u64, u64);

/// `compute()`, memoised per thread under `key` (the cache starts over past 4096 entries, as a
/// sweep of many models and batch sizes would fill it): the value is the pure function's, bit
/// for bit.
fn memoised(key: RoutingKey, compute: impl FnOnce() -> f64) -> f64 {
    /// Entries kept before the cache starts over.
    const CAPACITY: usize = 4096;
    thread_local! {
        static MEMO: std::cell::RefCell<crate::util::FastMap<RoutingKey, f64>> = Default::default();
    }
    if let Some(hit) = MEMO.with(|m| m.borrow().get(&key).copied()) {
        return hit;
    }
    let value = compute();
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= CAPACITY {
            m.clear();
        }
        m.insert(key, value);
    });
    value
}

/// The standard normal's quantile function (Acklam's rational approximation, relative error
/// below 1.2e-9 on (0, 1)).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] =
        [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1, 2.506628277459239];
    const B: [f64; 5] = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
    const C: [f64; 6] =
        [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
    const D: [f64; 4] = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
    const LOW: f64 = 0.02425;
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5]) / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < LOW {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - LOW {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// [`expert_coverage`] computed afresh.
fn expert_coverage_uncached(experts: u64, active: u64, tokens: u64, skew: f64) -> f64 {
    let (e, k, t) = (experts as f64, (active.min(experts)) as f64, tokens as f64);
    if experts == 0 || tokens == 0 {
        return 0.0;
    }
    if skew <= 0.0 || k >= e {
        return e * (1.0 - (1.0 - k / e).powf(t));
    }
    let (certain, rest) = expert_choice_probabilities(experts, active, skew);
    let spread: f64 = rest.iter().map(|p| 1.0 - (1.0 - p).powf(t)).sum();
    (certain as f64 + spread).min(e)
}

/// The chance that one token chooses each expert under [`expert_coverage`]'s popularity:
/// `(certain, rest)`, the number of experts every token chooses (water-filled to certainty) and
/// the probabilities of the others, most popular first. Uniform `k / E` at `skew` 0.
fn expert_choice_probabilities(experts: u64, active: u64, skew: f64) -> (usize, Vec<f64>) {
    let (e, k) = (experts as f64, (active.min(experts)) as f64);
    if skew <= 0.0 || k >= e {
        return if k >= e { (experts as usize, Vec::new()) } else { (0, vec![k / e; experts as usize]) };
    }
    let weights: Vec<f64> = (1..=experts).rev().map(|i| (skew * normal_quantile((i as f64 - 0.5) / e)).exp()).collect();
    // Water-filling: the most popular `certain` experts are chosen by every token; the rest
    // share the remaining mass in proportion to their weights.
    let mut certain = 0usize;
    let mut tail: f64 = weights.iter().sum();
    let mut scale = k / tail;
    while certain < weights.len() && scale * weights[certain] > 1.0 {
        tail -= weights[certain];
        certain += 1;
        scale = (k - certain as f64) / tail;
    }
    (certain, weights[certain..].iter().map(|w| (scale * w).min(1.0)).collect())
}

/// Expected GEMM tiles the routed experts of a `tokens`-row step fill when a kernel computes
/// each expert's rows in tiles of `tile` rows and a partial tile costs a whole one:
/// `sum_i E[ceil(n_i / tile)]`, `n_i ~ Binomial(tokens, p_i)` with [`expert_coverage`]'s
/// choice probabilities. The first tile of an expert is its chance of being touched at all
/// (exact, as in the coverage); each further one, `P(n_i > j tile)`, takes the binomial's normal
/// approximation with a continuity correction. `tile` may be fractional (rows per routed
/// token above 1 scale it down). At least the coverage; `tokens x active / tile` or more.
///
/// Memoised per thread, as [`expert_coverage`] is.
pub fn expert_row_tiles(experts: u64, active: u64, tokens: u64, skew: f64, tile: f64) -> f64 {
    memoised((1, experts, active, tokens, skew.to_bits(), tile.to_bits()), || {
        expert_row_tiles_uncached(experts, active, tokens, skew, tile)
    })
}

/// [`expert_row_tiles`] computed afresh.
fn expert_row_tiles_uncached(experts: u64, active: u64, tokens: u64, skew: f64, tile: f64) -> f64 {
    if experts == 0 || tokens == 0 || tile <= 0.0 {
        return 0.0;
    }
    let t = tokens as f64;
    let (certain, rest) = expert_choice_probabilities(experts, active, skew);
    // An expert every token chooses holds all the rows.
    let mut tiles = certain as f64 * (t / tile).ceil();
    for p in rest {
        tiles += 1.0 - (1.0 - p).powf(t);
        let (mean, sd) = (t * p, (t * p * (1.0 - p)).sqrt());
        let mut j = 1.0;
        while j * tile < t {
            // P(n > j tile) = P(n >= floor(j tile) + 1), continuity-corrected.
            let tail = if sd > 0.0 {
                normal_upper_tail(((j * tile).floor() + 0.5 - mean) / sd)
            } else if mean > j * tile {
                1.0
            } else {
                0.0
            };
            if tail < 1e-12 && j * tile > mean {
                break;
            }
            tiles += tail;
            j += 1.0;
        }
    }
    tiles
}

/// The standard normal's upper tail `P(Z > x)`, from the complementary error function
/// (Numerical Recipes' Chebyshev fit `erfcc`, fractional error below 1.2e-7).
fn normal_upper_tail(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let u = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.26551223
        + u * (1.00002368
            + u * (0.37409196
                + u * (0.09678418
                    + u * (-0.18628806 + u * (0.27886807 + u * (-1.13520398 + u * (1.48851587 + u * (-0.82215223 + u * 0.17087277))))))));
    let erfc = u * poly.exp();
    if x >= 0.0 { 0.5 * erfc } else { 1.0 - 0.5 * erfc }
}

#[cfg(test)]
mod tests {
    use super::{expert_coverage, expert_row_tiles, normal_upper_tail};

    #[test]
    fn expert_row_tiles_count_each_experts_rows_in_whole_tiles() {
        assert!((normal_upper_tail(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_upper_tail(1.96) - 0.025).abs() < 1e-4);
        assert!((normal_upper_tail(-1.96) - 0.975).abs() < 1e-4);
        // A tile at least as long as the step: one tile per touched expert, the coverage.
        for skew in [0.0, 1.7] {
            let (tiles, cover) = (expert_row_tiles(128, 8, 64, skew, 64.0), expert_coverage(128, 8, 64, skew));
            assert!((tiles - cover).abs() < 1e-9, "{tiles} vs {cover}");
        }
        // One-row tiles: every routed row its own tile, tokens x active (to the normal
        // approximation's accuracy).
        let tiles = expert_row_tiles(32, 4, 256, 0.0, 1.0);
        assert!((tiles - 1024.0).abs() < 1.0, "{tiles}");
        // gpt-oss-120b (128 experts, 4 active) at 2048 rows: ~64 rows an expert (sd 7.9), never
        // past 128: one tile each.
        let tiles = expert_row_tiles(128, 4, 2048, 0.0, 128.0);
        assert!((tiles - 128.0).abs() < 1e-6, "{tiles}");
        // Qwen3-30B-A3B (128 experts, 8 active): 128 rows an expert on average (sd 11.0);
        // P(n > 128) = Q(0.5 / 10.96) = 0.482, so 1.482 tiles an expert.
        let tiles = expert_row_tiles(128, 8, 2048, 0.0, 128.0);
        assert!((tiles / 128.0 - 1.482).abs() < 0.005, "{tiles}");
        // Experts every token chooses hold all the rows: ceil(200 / 128) = 2 tiles each.
        assert_eq!(expert_row_tiles(2, 2, 200, 0.0, 128.0), 4.0);
        // Skew concentrates rows on hot experts: never fewer tiles than the rows need.
        let skewed = expert_row_tiles(128, 4, 2048, 1.7, 128.0);
        assert!(skewed >= 2048.0 * 4.0 / 128.0, "{skewed}");
    }
}
