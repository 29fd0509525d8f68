//! Model names as people write them: a preset's id or alias first, else a normalised match
//! that drops what does not change a model's shape: an organisation prefix (`meta-llama/`,
//! `mlx-community/`, `unsloth/`), case, release suffixes (`-Instruct`, `-it`, `-Thinking`, a
//! date code such as `-2507`), format suffixes (`-GGUF`, `-4bit`, `-MLX`, `-FP8`, `-Q4_K_M`,
//! a `.gguf` extension) and ollama's `name:size` tags (`llama3.1:8b`), then compares letters
//! and digits only. A name two presets answer to is an error naming both: never a silent guess.
//! One function ([`Catalog::find_model`]) serves scenario files' `[model] name`, `validate`,
//! `plan --model` and both benchmark importers (exo-bench's `model_id`, llama-bench's
//! `model_filename`).
//!
//! Quantization labels as people write them (a measurement row's quant column, a Hugging Face
//! repo's `-4bit` / `-MXFP4-Q8` suffix, a GGUF file's `Q4_K_M` / `UD-Q4_K_XL` label) go through
//! one reader too, [`Catalog::find_quant`].

use super::{Catalog, ModelPreset};
use crate::llm::{ModelSpec, QuantFamily, QuantScheme};

/// Why a name found no single model preset.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ModelNameError {
    /// No preset answers to the name.
    #[error("unknown model `{0}`")]
    Unknown(String),
    /// Several presets answer to the name once normalised.
    #[error("model `{name}` matches several presets ({}): write one of their ids", presets.join(", "))]
    Ambiguous {
        /// The name as written.
        name: String,
        /// Ids of the presets it matches.
        presets: Vec<String>,
    },
}

/// Release suffixes: a variant of the same weights' shape (chat or reasoning tuning, the
/// Hugging Face conversion, ollama's default tag, Gemma's pre-trained and QAT releases).
const RELEASE_SUFFIXES: &[&str] = &["instruct", "it", "thinking", "base", "hf", "chat", "latest", "pt", "qat"];

/// Format suffixes: how the weights are stored, which the row's quant column says.
const FORMAT_SUFFIXES: &[&str] = &[
    "gguf", "mlx", "2bit", "3bit", "4bit", "5bit", "6bit", "8bit", "fp4", "fp8", "fp16", "bf16", "f16", "f32", "awq", "gptq", "mxfp4",
    "nvfp4", "int4", "int8", "w4a16", "w8a8", "dwq", "ud", "dynamic", "bnb", "q4", "q8",
];

/// Whether a `-`-separated token is a GGUF type name (`q4_k_m`, `q8_0`, `iq4_xs`, `q4_k_xl`).
fn is_gguf_type(token: &str) -> bool {
    let rest = token.strip_prefix('i').unwrap_or(token);
    let Some(rest) = rest.strip_prefix('q') else { return false };
    let mut parts = rest.split('_');
    parts.next().is_some_and(|bits| !bits.is_empty() && bits.chars().all(|c| c.is_ascii_digit()))
        && parts.all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric()))
}

/// Whether a token is a release date code: `2507`, `0528` (YYMM, MMDD) or `20250528`.
fn is_date_code(token: &str) -> bool {
    matches!(token.len(), 4 | 6 | 8) && token.chars().all(|c| c.is_ascii_digit())
}

fn is_suffix(token: &str) -> bool {
    RELEASE_SUFFIXES.contains(&token) || FORMAT_SUFFIXES.contains(&token) || is_gguf_type(token) || is_date_code(token)
}

/// The key a name is compared by: lower case, without organisation prefix, file extension,
/// release or format suffixes, with an ollama tag joined as a suffix (`llama3.1:8b` ->
/// `llama3.1-8b`), letters and digits only (`llama318b`).
pub fn model_key(name: &str) -> String {
    key_of(name, false)
}

/// [`model_key`] keeping a trailing release date code (`DeepSeek-R1-0528-GGUF` ->
/// `deepseekr10528`): how a name finds a preset of its own dated release first.
pub fn dated_key(name: &str) -> String {
    key_of(name, true)
}

fn key_of(name: &str, keep_date: bool) -> String {
    key_tokens(name, keep_date).concat().chars().filter(char::is_ascii_alphanumeric).collect()
}

/// The tokens of a name that [`model_key`] joins (lower case, suffixes dropped).
fn key_tokens(name: &str, keep_date: bool) -> Vec<String> {
    let lower = name.trim().to_lowercase();
    let base = lower.rsplit('/').next().unwrap_or(&lower);
    let base = base.strip_suffix(".gguf").unwrap_or(base);
    // `-`, ollama's `:` and spaces (`Llama 3.3 70B Instruct`, as tables write names) separate
    // tokens; `_` stays inside one (GGUF types: `q4_k_m`).
    let mut tokens: Vec<&str> = base.split(|c: char| c == '-' || c == ':' || c.is_whitespace()).filter(|t| !t.is_empty()).collect();
    // `Meta-Llama-3.1-8B`: Meta's own name for its Llama releases.
    if tokens.len() > 1 && tokens[0] == "meta" && tokens[1].starts_with("llama") {
        tokens.remove(0);
    }
    while tokens.len() > 1 && tokens.last().is_some_and(|t| is_suffix(t) && !(keep_date && is_date_code(t))) {
        tokens.pop();
    }
    tokens.into_iter().map(str::to_string).collect()
}

/// A size token as a name writes it, in billions of parameters: `80b`, `1.5b` (not `a3b`).
fn size_billions(token: &str) -> Option<f64> {
    token.strip_suffix('b').filter(|n| n.starts_with(|c: char| c.is_ascii_digit())).and_then(|n| n.parse().ok())
}

/// Whether a key's remainder is an active-parameter size: `a10b`, `a3b`.
fn is_active_size(rest: &str) -> bool {
    rest.strip_prefix('a').and_then(|r| r.strip_suffix('b')).is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// The model part of a repo or file name written `{org}_{model}` (an org of letters and `-`,
/// then `_`), e.g. `bartowski/Qwen_Qwen3-8B-GGUF` -> `Qwen3-8B-GGUF`,
/// `meta-llama_Llama-3.3-70B-Instruct-Q4_K_M.gguf` -> `Llama-3.3-70B-Instruct-Q4_K_M.gguf`;
/// `None` for any other name (before a GGUF type's `_` stands a digit: `Qwen3-8B-Q4_K_M.gguf`).
fn org_prefixed(name: &str) -> Option<&str> {
    let base = name.trim().rsplit('/').next()?;
    let (org, rest) = base.split_once('_')?;
    let org_like = org.chars().any(|c| c.is_ascii_alphabetic()) && org.chars().all(|c| c.is_ascii_alphabetic() || c == '-');
    (org_like && !org.starts_with('-') && !rest.is_empty()).then_some(rest)
}

impl Catalog {
    /// The model preset a name written by a person means: an id or alias exactly, else the
    /// one preset whose id or alias has the same [`model_key`]. Errors: unknown, or ambiguous
    /// (the presets listed).
    pub fn find_model(&self, name: &str) -> Result<&(ModelPreset, ModelSpec), ModelNameError> {
        if let Some(m) = self.model(name.trim()) {
            return Ok(m);
        }
        // A dated release with a preset of its own (`DeepSeek-R1-0528`: its GGUFs are not R1's)
        // first; else the release the name means without its date, the undated preset where a
        // dated one shares its key.
        let mut hits = self.keyed(&dated_key(name), dated_key);
        if hits.is_empty() {
            hits = self.keyed(&model_key(name), model_key);
            let undated = |p: &ModelPreset| dated_key(&p.id) == model_key(&p.id);
            if hits.len() > 1 && hits.iter().filter(|(p, _)| undated(p)).count() == 1 {
                hits.retain(|(p, _)| undated(p));
            }
        }
        match hits.as_slice() {
            [one] => Ok(one),
            // A quantizer's repo named `{org}_{model}` (bartowski's `Qwen_Qwen3-30B-A3B-GGUF`,
            // `mistralai_Mistral-Small-3.1-24B-Instruct-2503-GGUF`): the model after the org.
            [] => match (org_prefixed(name), self.by_partial_size(name)) {
                (Some(rest), _) => self.find_model(rest).map_err(|_| ModelNameError::Unknown(name.trim().to_string())),
                (None, Some(one)) => Ok(one),
                (None, None) => Err(ModelNameError::Unknown(name.trim().to_string())),
            },
            many => {
                Err(ModelNameError::Ambiguous { name: name.trim().to_string(), presets: many.iter().map(|(p, _)| p.id.clone()).collect() })
            }
        }
    }
}

impl Catalog {
    /// The one preset a name means that writes only part of its size: the total without the
    /// active count (`Qwen3.5-122B` for `qwen3.5-122b-a10b`), or a total the preset's id leaves
    /// out (`Qwen3-Coder-Next-80B` for `qwen3-coder-next`, whose 79.7 B are within
    /// [`crate::catalog::llama_arch::PARAM_TOLERANCE`] of 80). `None` unless exactly one matches.
    fn by_partial_size(&self, name: &str) -> Option<&(ModelPreset, ModelSpec)> {
        let key = model_key(name);
        let names = |p: &ModelPreset| std::iter::once(p.id.clone()).chain(p.aliases.iter().cloned()).collect::<Vec<_>>();
        let no_active: Vec<_> = self
            .models
            .iter()
            .filter(|(p, _)| {
                names(p).iter().any(|n| model_key(n).strip_prefix(key.as_str()).is_some_and(|rest| !key.is_empty() && is_active_size(rest)))
            })
            .collect();
        if let [one] = no_active.as_slice() {
            return Some(one);
        }
        let mut tokens = key_tokens(name, false);
        let size = size_billions(tokens.pop()?.as_str())? * 1e9;
        let rest: String = tokens.concat().chars().filter(char::is_ascii_alphanumeric).collect();
        let tolerance = crate::catalog::llama_arch::PARAM_TOLERANCE;
        let sized: Vec<_> =
            self.keyed(&rest, model_key).into_iter().filter(|(_, m)| (m.total_params() as f64 / size - 1.0).abs() <= tolerance).collect();
        match sized.as_slice() {
            [one] => Some(one),
            _ => None,
        }
    }

    /// The presets with an id or alias whose key (by `key_fn`) is `key`.
    fn keyed(&self, key: &str, key_fn: fn(&str) -> String) -> Vec<&(ModelPreset, ModelSpec)> {
        self.models.iter().filter(|(p, _)| !key.is_empty() && std::iter::once(&p.id).chain(&p.aliases).any(|n| key_fn(n) == key)).collect()
    }
}

/// Quantization labels people write (llama-bench's `type` column, GGUF file-type names,
/// Hugging Face repo suffixes) for formats a catalog preset stores alike: `f16` is 16 bits a
/// weight like `bf16` (the same bytes streamed, the same half-precision kernel family). Without
/// this a llama.cpp `f16` row was guessed as Q4_K_M (its decode predicted 2.8x too fast).
const QUANT_LABELS: &[(&str, &str)] = &[
    ("f16", "bf16"),
    ("fp16", "bf16"),
    ("float16", "bf16"),
    ("bfloat16", "bf16"),
    // Unsloth's dynamic quants, written without their `ud-` prefix (file names `..-Q4_K_XL.gguf`).
    ("q4_k_xl", "ud-q4_k_xl"),
    ("q8_k_xl", "ud-q8_k_xl"),
    // The int4 checkpoint methods by name (vLLM's `--quantization awq` / `gptq`): 4-bit weights
    // in groups of 128, what the catalog's presets of those names store.
    ("awq", "awq-int4"),
    ("gptq", "gptq-int4"),
    // FP8 weights with dynamic per-token activation scales (llm-compressor's FP8_DYNAMIC scheme,
    // `-FP8-Dynamic` checkpoints): the same stored 8-bit weights as the fp8 preset.
    ("fp8-dynamic", "fp8"),
    ("fp8_dynamic", "fp8"),
    // MLX's DWQ (distilled) conversions keep the ordinary MLX format of their width.
    ("3bit-dwq", "mlx-3bit"),
    ("4bit-dwq", "mlx-4bit"),
    ("5bit-dwq", "mlx-5bit"),
    ("6bit-dwq", "mlx-6bit"),
    ("8bit-dwq", "mlx-8bit"),
    ("mxfp4-q8", "mxfp4"),
    // llama.cpp's name for the IQ3_M file type (`IQ3_S mix - 3.66 bpw`,
    // src/llama-model-loader.cpp `llama_model_ftype_name`): an IQ3_S mix.
    ("iq3_s mix", "iq3_m"),
    // llama-quantize's aliases: a bare K-quant block name is the `_M` mix (tools/quantize/
    // quantize.cpp: `Q3_K` "alias for Q3_K_M", `Q4_K` for Q4_K_M, `Q5_K` for Q5_K_M).
    ("q3_k", "q3_k_m"),
    ("q4_k", "q4_k_m"),
    ("q5_k", "q5_k_m"),
    // llama.cpp's name for the MXFP4_MOE file type (`llama_model_ftype_name`), and the type
    // as llama-quantize takes it (tools/quantize/quantize.cpp `MXFP4_MOE`).
    ("mxfp4 moe", "mxfp4"),
    ("mxfp4_moe", "mxfp4"),
    // llm-compressor's weight-only int4 scheme (`W4A16`: int4 in groups of 128, run by vLLM's
    // Marlin kernels as a GPTQ checkpoint is): the gptq-int4 preset's bytes and kernel.
    ("w4a16", "gptq-int4"),
    // NVIDIA's ModelOpt checkpoints name their NVFP4 weights `-FP4` (`nvidia/...-FP4`), and
    // SGLang loads them as `--quantization modelopt_fp4` (FACTS-2026 B1): FP4 written alone is
    // NVFP4 (MXFP4, gpt-oss's own format, is written as such).
    ("fp4", "nvfp4"),
    ("modelopt_fp4", "nvfp4"),
    ("modelopt-fp4", "nvfp4"),
];

/// A label as [`Catalog::find_quant`] compares it: trimmed, lower case, and llama.cpp's
/// file-type names (src/llama-model-loader.cpp `llama_model_ftype_name`, what llama-bench
/// prints) as the file labels they mean: `Q4_K - Medium` -> `q4_k_m`, `Q3_K - Small` ->
/// `q3_k_s`, `Q2_K - Medium` -> `q2_k` (llama.cpp's name for its plain Q2_K), and the size
/// after an i-quant's name dropped (`IQ4_XS - 4.25 bpw` -> `iq4_xs`).
fn quant_key(label: &str) -> String {
    llama_cpp_file_type(label).unwrap_or_else(|| label.trim().to_lowercase())
}

/// A llama.cpp file-type name (`Q4_K - Medium`, `IQ4_XS - 4.25 bpw`) as the file label it
/// means, lower case (see [`quant_key`]); `None` for a label without such a size word.
pub(crate) fn llama_cpp_file_type(label: &str) -> Option<String> {
    let q = label.trim().to_lowercase();
    let (head, size) = q.split_once(" - ")?;
    let head = head.trim();
    Some(match size.trim() {
        s if s.ends_with("bpw") => head.to_string(),
        "medium" if head == "q2_k" => head.to_string(),
        "small" => format!("{head}_s"),
        "medium" => format!("{head}_m"),
        "large" => format!("{head}_l"),
        _ => return None,
    })
}

/// The standard GGUF preset an Unsloth dynamic label is read as, and the assumption said:
/// `UD-<T>_XL` and `<T>_XL` as T's nearest llama.cpp file type (its `_M` mix where there is
/// one: Q3_K_XL -> q3_k_m, Q5_K_XL -> q5_k_m; else T itself: Q2_K_XL -> q2_k, Q6_K_XL -> q6_k;
/// Q8_K_XL -> q8_0, Q8_K being no file type), `UD-<T>` as T (UD-IQ2_XXS -> iq2_xxs). Unsloth
/// publishes no per-tensor recipe for its dynamic quants (they keep some tensors at more bits
/// than the standard mix), so the standard rules are an assumption, said in the result.
fn unsloth_dynamic(cat: &Catalog, q: &str) -> Option<(String, String)> {
    let (ud, rest) = q.strip_prefix("ud-").map_or((false, q), |r| (true, r));
    // `Q4_K_L`, `Q2_K_L` (not llama.cpp types: `Q3_K_L` is one, and found before this): a K
    // type with some tensors kept at higher precision, as `_XL` is.
    let large = rest.strip_suffix("_l").filter(|b| b.ends_with("_k"));
    let candidates: Vec<String> = match rest.strip_suffix("_xl").or(large) {
        Some("q8_k") => vec!["q8_0".into()],
        Some(base) => vec![format!("{base}_m"), base.to_string()],
        None if ud => vec![rest.to_string()],
        None => return None,
    };
    let id = candidates.into_iter().find(|c| cat.quant(c).is_some_and(|p| matches!(p.scheme, QuantScheme::Gguf(_))))?;
    let what = if ud || large.is_none() { "Unsloth dynamic quant" } else { "GGUF quant" };
    let assumed = format!(
        "{what} `{}` read as llama.cpp's {id} rules (its per-tensor choices are not published; list its tensors with model.gguf_tensor_types for the real mix)",
        q.to_uppercase()
    );
    Some((id, assumed))
}

/// Bit-width labels without a format (`4bit`, `8-bit`, `int4`): the format is the engine's.
fn bits_label(q: &str) -> Option<u32> {
    let q = q.replace(['-', '_', ' '], "");
    match q.as_str() {
        "3bit" | "q3" => Some(3),
        "4bit" | "int4" | "q4" => Some(4),
        "5bit" | "q5" => Some(5),
        "6bit" | "q6" => Some(6),
        "8bit" | "int8" | "q8" => Some(8),
        _ => None,
    }
}

/// Why a quantization label names no preset.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum QuantNameError {
    /// Neither a preset, a label of one, nor a bit width.
    #[error("quant `{0}` unknown")]
    Unknown(String),
    /// A bit width that names no single format in this family (a CUDA engine's 4 bits: awq,
    /// gptq or nvfp4).
    #[error("a {bits}-bit label names no single format for this engine: write the quant (e.g. awq-int4, gptq-int4, nvfp4, fp8)")]
    NoSingleFormat {
        /// The width written.
        bits: u32,
    },
}

/// The preset of a gpt-oss GGUF file labelled F16 or BF16 (Unsloth's `gpt-oss-120b-F16.gguf`):
/// MXFP4 routed experts, every other weight at 16 bits.
pub const MXFP4_F16: &str = "mxfp4-f16";

/// Why a 16-bit GGUF label of a model that ships MXFP4 routed experts means [`MXFP4_F16`]:
/// llama.cpp's converter (`convert_hf_to_gguf.py`, class `GptOssModel`, `repack_mxfp4`) writes
/// the experts' `*_blocks`/`*_scales` as `GGMLQuantizationType.MXFP4` whatever `--outtype` is.
pub const MXFP4_F16_WHY: &str = "llama.cpp's converter keeps the routed experts in MXFP4 whatever --outtype \
     (convert_hf_to_gguf.py GptOssModel.repack_mxfp4): an F16/BF16 GGUF holds MXFP4 experts and 16-bit attention, \
     router, embedding and LM head";

/// The preset a quantization label names, and how.
#[derive(Clone, Debug, PartialEq)]
pub struct QuantName {
    /// Quantization preset id.
    pub id: String,
    /// Read from a bare bit width (`4bit`, `int8`) under the runtime's format family, not a
    /// format's name.
    pub by_width: bool,
    /// What was assumed, when the label leaves the format open (a GGUF width: its common K-quant;
    /// an Unsloth dynamic label: the nearest standard file type's rules).
    pub assumed: Option<String>,
}

impl Catalog {
    /// The quantization preset a label written by a person means (case-insensitive): a preset id,
    /// a label of one (`f16` -> `bf16`, `Q4_K_XL` -> `ud-q4_k_xl`, `MXFP4-Q8` -> `mxfp4`,
    /// llama.cpp's `IQ4_XS - 4.25 bpw` -> `iq4_xs`), an Unsloth dynamic label read as the
    /// nearest standard file type (`UD-Q3_K_XL` -> `q3_k_m`, said in [`QuantName::assumed`]),
    /// else a bit width (`4bit`, `8-bit`, `int4`) read in `family`: MLX has one quant per width (its
    /// affine groups); on llama.cpp a width is the common K-quant of it (said in
    /// [`QuantName::assumed`]); a CUDA engine's width names no single format, so it is refused.
    pub fn find_quant(&self, label: &str, family: QuantFamily) -> Result<QuantName, QuantNameError> {
        let q = quant_key(label);
        let preset = QUANT_LABELS.iter().find(|(l, _)| *l == q).map_or(q.as_str(), |(_, p)| *p);
        if self.quant(preset).is_some() {
            return Ok(QuantName { id: preset.to_string(), by_width: false, assumed: None });
        }
        if let Some((id, assumed)) = unsloth_dynamic(self, &q) {
            return Ok(QuantName { id, by_width: false, assumed: Some(assumed) });
        }
        // A checkpoint's repository or file name (`mlx-community/Qwen3-Coder-Next-4bit`,
        // `unsloth/Qwen3-30B-A3B-GGUF:Q4_K_M`, `Llama-3.1-8B-Instruct-Q8_0.gguf`): the format its
        // name ends with.
        if let Some(found) = self.repo_quant(&q, family) {
            return Ok(found);
        }
        // The framework written before the format (`mlx-mxfp4-q8`, `MLX 8-bit`, `mlx-bf16`,
        // `mlx-community 4bit`): the format in MLX's family. An id that starts so (`mlx-4bit`)
        // was found above.
        if let Some(rest) = ["mlx-community/", "mlx-community ", "mlx-", "mlx_", "mlx "]
            .iter()
            .find_map(|p| q.strip_prefix(p))
            .filter(|r| !r.trim().is_empty())
        {
            return self.find_quant(rest, QuantFamily::Mlx).map_err(|_| QuantNameError::Unknown(label.trim().to_string()));
        }
        let bits = bits_label(&q).ok_or_else(|| QuantNameError::Unknown(label.trim().to_string()))?;
        let (id, assumed) = match (family, bits) {
            (QuantFamily::Mlx, 3) => ("mlx-3bit", None),
            (QuantFamily::Mlx, 4) => ("mlx-4bit", None),
            (QuantFamily::Mlx, 5) => ("mlx-5bit", None),
            (QuantFamily::Mlx, 6) => ("mlx-6bit", None),
            (QuantFamily::Mlx, 8) => ("mlx-8bit", None),
            (QuantFamily::Gguf, 3) => ("q3_k_m", Some(format!("{bits}-bit GGUF type not stated: assumed q3_k_m"))),
            (QuantFamily::Gguf, 4) => ("q4_k_m", Some(format!("{bits}-bit GGUF type not stated: assumed q4_k_m"))),
            (QuantFamily::Gguf, 5) => ("q5_k_m", Some(format!("{bits}-bit GGUF type not stated: assumed q5_k_m"))),
            (QuantFamily::Gguf, 6) => ("q6_k", Some(format!("{bits}-bit GGUF type not stated: assumed q6_k"))),
            (QuantFamily::Gguf, 8) => ("q8_0", Some(format!("{bits}-bit GGUF type not stated: assumed q8_0"))),
            _ => return Err(QuantNameError::NoSingleFormat { bits }),
        };
        Ok(QuantName { id: id.to_string(), by_width: true, assumed })
    }

    /// The format a checkpoint's repository or file name ends with (a label with `/`, `:` or a
    /// `.gguf` suffix): after the tag (`:Q4_K_M`) if any, else the last one to three
    /// `-`-separated words of the name, longest first (`MXFP4-Q8`, `4bit-DWQ`, `4bit`); an
    /// `mlx-community/` repository holds MLX files. `None` when the name ends with no format.
    fn repo_quant(&self, q: &str, family: QuantFamily) -> Option<QuantName> {
        if !(q.contains('/') || q.contains(':') || q.ends_with(".gguf")) {
            return None;
        }
        let family = if q.starts_with("mlx-community/") { QuantFamily::Mlx } else { family };
        let name = q.rsplit('/').next().unwrap_or(q).trim_end_matches(".gguf");
        let name = name.rsplit_once(':').map_or(name, |(_, tag)| tag);
        let words: Vec<&str> = name.split('-').filter(|w| !w.is_empty()).collect();
        (1..=words.len().min(3)).rev().find_map(|k| {
            let tail = words[words.len() - k..].join("-");
            self.find_quant(&tail, family).ok()
        })
    }

    /// Whether `label` names a 16-bit file (`f16`, `F16`, `bf16`, `fp16`, `bfloat16`: every label
    /// [`Catalog::find_quant`] reads as `bf16`).
    pub fn is_sixteen_bit(&self, label: &str) -> bool {
        self.find_quant(label, QuantFamily::Any).is_ok_and(|q| q.id == "bf16")
    }

    /// Whether a model preset's checkpoint ships its routed experts in MXFP4: the presets whose
    /// default quantization is `mxfp4` (gpt-oss, released with MXFP4 experts).
    pub fn ships_mxfp4_experts(&self, model_id: &str) -> bool {
        self.model(model_id).is_some_and(|(p, _)| p.default_quant == "mxfp4")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::catalog;

    /// Real-world spellings (Hugging Face repos, ollama tags, GGUF and MLX conversions, file
    /// names) and the preset each means.
    #[test]
    fn names_people_write_resolve_to_their_preset() {
        let c = catalog();
        for (name, id) in [
            ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "llama-4-scout-17b-16e"),
            ("unsloth/Llama-4-Scout-17B-16E-Instruct-GGUF", "llama-4-scout-17b-16e"),
            ("llama4:scout", "llama-4-scout-17b-16e"),
            ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", "llama-4-maverick-17b-128e"),
            ("meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8", "llama-4-maverick-17b-128e"),
            ("unsloth/Llama-4-Maverick-17B-128E-Instruct-GGUF", "llama-4-maverick-17b-128e"),
            ("llama4:maverick", "llama-4-maverick-17b-128e"),
            ("Qwen/Qwen3.5-397B-A17B", "qwen3.5-397b-a17b"),
            ("mlx-community/Qwen3.5-397B-A17B-4bit", "qwen3.5-397b-a17b"),
            ("qwen3.5:397b", "qwen3.5-397b-a17b"),
            ("google/gemma-3-27b-it", "gemma-3-27b"),
            ("gemma3:27b", "gemma-3-27b"),
            ("mlx-community/gemma-3-27b-it-qat-4bit", "gemma-3-27b"),
            ("Qwen/Qwen3-Coder-Next", "qwen3-coder-next"),
            ("Qwen/Qwen3-Next-80B-A3B-Instruct", "qwen3-coder-next"),
            ("mlx-community/Qwen3-Next-80B-A3B-Thinking-4bit", "qwen3-coder-next"),
            ("Qwen/Qwen3.5-122B-A10B", "qwen3.5-122b-a10b"),
            ("gpt-oss-20b", "gpt-oss-20b"),
            ("openai/gpt-oss-20b", "gpt-oss-20b"),
            ("gpt-oss:20b", "gpt-oss-20b"),
            ("ggml-org/gpt-oss-120b-GGUF", "gpt-oss-120b"),
            ("gpt-oss-120b-mxfp4.gguf", "gpt-oss-120b"),
            ("lmstudio-community/gpt-oss-120b-MLX-8bit", "gpt-oss-120b"),
            ("meta-llama/Llama-3.3-70B-Instruct", "llama-3.3-70b"),
            ("llama3.3:70b", "llama-3.3-70b"),
            ("Meta-Llama-3.1-70B-Instruct", "llama-3.3-70b"),
            ("zai-org/GLM-4.5-Air", "glm-4.5-air"),
            ("mlx-community/GLM-4.5-Air-4bit", "glm-4.5-air"),
            // Fine-tunes and updates of a preset's shapes, by their model cards.
            ("zai-org/GLM-4.5V", "glm-4.5-air"),
            ("mistralai/Mistral-Small-3.2-24B-Instruct-2506", "mistral-small-3.1-24b"),
            ("unsloth/Devstral-Small-2507-GGUF", "mistral-small-3.1-24b"),
            ("mistralai/Magistral-Small-2509", "mistral-small-3.1-24b"),
            ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "qwen2.5-32b"),
            ("bartowski/DeepSeek-R1-Distill-Qwen-14B-GGUF", "qwen2.5-14b"),
            ("NousResearch/Hermes-4-70B", "llama-3.3-70b"),
            ("NousResearch/Hermes-4-405B-FP8", "llama-3.1-405b"),
            ("NousResearch/Hermes-4-14B", "qwen3-14b"),
            ("deepseek-ai/DeepSeek-R1-0528-Qwen3-8B", "qwen3-8b"),
            ("openai/gpt-oss-safeguard-120b", "gpt-oss-120b"),
            ("gpt-oss-safeguard-20b", "gpt-oss-20b"),
            // ollama's library tags.
            ("qwen3:30b", "qwen3-30b-a3b"),
            ("qwen3:235b", "qwen3-235b-a22b"),
            ("deepseek-r1:70b", "llama-3.3-70b"),
            ("deepseek-r1:671b", "deepseek-r1"),
            ("Qwen/Qwen2.5-VL-72B-Instruct", "qwen2.5-72b"),
            ("zai-org/GLM-4.6-FP8", "glm-4.6"),
            ("llama3.1:8b", "llama-3.1-8b"),
            ("llama3.1:8b-instruct-q4_K_M", "llama-3.1-8b"),
            ("Meta-Llama-3.1-8B-Instruct-Q8_0.gguf", "llama-3.1-8b"),
            ("llama3.2:3b", "llama-3.2-3b"),
            ("Llama-3.2-1B-Instruct", "llama-3.2-1b"),
            ("qwen3:30b-a3b", "qwen3-30b-a3b"),
            ("Qwen/Qwen3-30B-A3B-Instruct-2507", "qwen3-30b-a3b"),
            ("unsloth/Qwen3-30B-A3B-GGUF:UD-Q4_K_XL", "qwen3-30b-a3b"),
            ("Qwen/Qwen3-Coder-30B-A3B-Instruct", "qwen3-coder-30b-a3b"),
            ("qwen3-coder:30b", "qwen3-coder-30b-a3b"),
            ("Qwen3-235B-A22B-Instruct-2507-MLX-8bit", "qwen3-235b-a22b"),
            ("deepseek-ai/DeepSeek-V3.1", "deepseek-v3.1"),
            ("DeepSeek-V3-0324", "deepseek-v3"),
            ("deepseek-ai/DeepSeek-R1-0528", "deepseek-r1-0528"),
            ("unsloth/DeepSeek-R1-0528-GGUF", "deepseek-r1-0528"),
            ("DeepSeek-R1-0528-UD-Q4_K_XL.gguf", "deepseek-r1-0528"),
            ("unsloth/DeepSeek-R1-GGUF", "deepseek-r1"),
            ("deepseek-ai/DeepSeek-R1", "deepseek-r1"),
            ("deepseek-ai/DeepSeek-V3", "deepseek-v3"),
            ("unsloth/DeepSeek-V3-0324-GGUF", "deepseek-v3"),
            ("deepseek-ai/DeepSeek-V3.1-Terminus", "deepseek-v3.1"),
            ("moonshotai/Kimi-K2-Thinking", "kimi-k2-thinking"),
            ("MiniMaxAI/MiniMax-M2", "minimax-m2.1"),
            ("mlx-community/MiniMax-M2.1-4bit", "minimax-m2.1"),
            ("QWEN3.5-35B-A3B-MXFP4-Q8", "qwen3.5-35b-a3b"),
            // A quantizer's `{org}_{model}` repo.
            ("bartowski/Qwen_Qwen3-30B-A3B-GGUF", "qwen3-30b-a3b"),
            ("bartowski/openai_gpt-oss-120b-GGUF", "gpt-oss-120b"),
            ("meta-llama_Llama-3.3-70B-Instruct-Q4_K_M.gguf", "llama-3.3-70b"),
            // Part of the size: the total without the active count, or a total the id leaves out.
            ("Qwen3.5-122B", "qwen3.5-122b-a10b"),
            ("Qwen3-235B-Instruct", "qwen3-235b-a22b"),
            ("Qwen3-Coder-Next-80B", "qwen3-coder-next"),
            ("qwen3-coder-next-80b-gguf", "qwen3-coder-next"),
        ] {
            let got = c.find_model(name).map(|(p, _)| p.id.as_str());
            assert_eq!(got, Ok(id), "{name}");
        }
    }

    /// Names that must not match a neighbour: another size of the family, another release.
    #[test]
    fn near_names_of_other_models_do_not_match() {
        let c = catalog();
        for (name, not) in [
            ("llama-3.2-3b", "llama-3.2-1b"),
            ("qwen3-30b-a3b", "qwen3-235b-a22b"),
            ("gpt-oss-20b", "gpt-oss-120b"),
            ("glm-4.5-air", "glm-4.6"),
            ("Qwen/Qwen3.5-122B-A10B", "qwen3.5-35b-a3b"),
            ("Qwen/Qwen3.5-397B-A17B", "qwen3.5-122b-a10b"),
            ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "llama-4-maverick-17b-128e"),
            ("llama4:scout", "llama-4-maverick-17b-128e"),
            ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", "llama-4-scout-17b-16e"),
            // DeepSeek V3.2's sparse attention is another architecture than V3/V3.1's.
            ("deepseek-ai/DeepSeek-V3.2-Exp", "deepseek-v3.1"),
            ("glm-5", "glm-4.6"),
        ] {
            assert_ne!(c.find_model(name).map(|(p, _)| p.id.as_str()), Ok(not), "{name}");
        }
        for name in [
            "llama3.2",
            "qwen3:20b",
            "Qwen/Qwen3.5-9B",
            "llama4",
            "Llama-4-Behemoth-288B-16E",
            "MiniMax-M3",
            "phi5:14b",
            "llama-3.1-7b",
            "",
            "-it",
            "bartowski/Qwen_Qwen3-20B-GGUF",
            "Qwen3_",
            "Qwen3-Coder-Next-30B",
            "Qwen3.5-12B",
        ] {
            assert_eq!(c.find_model(name).map(|(p, _)| p.id.clone()), Err(ModelNameError::Unknown(name.trim().into())), "{name}");
        }
    }

    /// No two presets answer to one key: a normalised name is never ambiguous among the
    /// built-ins (an ambiguous one is reported, not guessed: see the user-catalog test).
    #[test]
    fn every_preset_key_belongs_to_one_preset() {
        let c = catalog();
        // By the key that keeps a release date, every name is one preset's; without the date
        // only a dated release's preset may share its undated model's key.
        let mut seen: Vec<(String, String, &str)> = Vec::new();
        for (p, _) in &c.models {
            let dated_preset = dated_key(&p.id) != model_key(&p.id);
            for n in std::iter::once(&p.id).chain(&p.aliases) {
                let (d, k) = (dated_key(n), model_key(n));
                if let Some((_, _, other)) = seen.iter().find(|(x, _, o)| *x == d && *o != p.id) {
                    panic!("`{n}` of {} has key {d}, also {other}'s", p.id);
                }
                let shares = seen.iter().find(|(_, y, o)| *y == k && *o != p.id);
                if let Some((_, _, other)) = shares.filter(|_| !dated_preset) {
                    let other_dated = dated_key(other) != model_key(other);
                    assert!(other_dated, "`{n}` of {} has key {k}, also {other}'s", p.id);
                }
                seen.push((d, k, &p.id));
            }
        }
    }

    #[test]
    fn a_name_two_presets_answer_to_is_an_error_naming_both() {
        let mut c = catalog().clone();
        let mut twin = c.models.iter().find(|(p, _)| p.id == "llama-3.2-3b").unwrap().clone();
        twin.0.id = "llama-3.2-3b-instruct".into();
        twin.0.aliases.clear();
        c.models.push(twin);
        let e = c.find_model("meta-llama/Llama-3.2-3B-Instruct").unwrap_err();
        assert_eq!(
            e,
            ModelNameError::Ambiguous {
                name: "meta-llama/Llama-3.2-3B-Instruct".into(),
                presets: vec!["llama-3.2-3b".into(), "llama-3.2-3b-instruct".into()]
            }
        );
        assert!(e.to_string().contains("(llama-3.2-3b, llama-3.2-3b-instruct): write one of their ids"), "{e}");
        // An exact id still wins.
        assert_eq!(c.find_model("llama-3.2-3b").unwrap().0.id, "llama-3.2-3b");
    }

    /// Quant labels as people write them, in each family: the preset, whether a width was read,
    /// whether something was assumed; and the refusals.
    #[test]
    fn quant_labels_people_write_name_their_preset() {
        let c = catalog();
        let q = |label: &str, family| c.find_quant(label, family).map(|n| (n.id, n.by_width, n.assumed.is_some()));
        for (label, family, id, width, assumed) in [
            ("Q4_K_M", QuantFamily::Gguf, "q4_k_m", false, false),
            ("UD-Q4_K_XL", QuantFamily::Gguf, "ud-q4_k_xl", false, false),
            ("Q4_K_XL", QuantFamily::Gguf, "ud-q4_k_xl", false, false),
            ("F16", QuantFamily::Gguf, "bf16", false, false),
            ("MXFP4-Q8", QuantFamily::Mlx, "mxfp4", false, false),
            // The framework's name before the format.
            ("mlx-mxfp4-q8", QuantFamily::Mlx, "mxfp4", false, false),
            ("MLX 8-bit", QuantFamily::Mlx, "mlx-8bit", true, false),
            ("mlx-bf16", QuantFamily::Any, "bf16", false, false),
            ("mlx-6bit", QuantFamily::Gguf, "mlx-6bit", false, false),
            ("4bit-DWQ", QuantFamily::Mlx, "mlx-4bit", false, false),
            ("3bit-DWQ", QuantFamily::Mlx, "mlx-3bit", false, false),
            ("3bit", QuantFamily::Mlx, "mlx-3bit", true, false),
            ("5-bit", QuantFamily::Mlx, "mlx-5bit", true, false),
            ("mlx-community 4bit", QuantFamily::Mlx, "mlx-4bit", true, false),
            ("3bit", QuantFamily::Gguf, "q3_k_m", true, true),
            ("MXFP4_MOE", QuantFamily::Gguf, "mxfp4", false, false),
            ("W4A16", QuantFamily::Hf, "gptq-int4", false, false),
            // NVIDIA's ModelOpt `-FP4` checkpoints and SGLang's `modelopt_fp4`: NVFP4.
            ("FP4", QuantFamily::Hf, "nvfp4", false, false),
            ("modelopt_fp4", QuantFamily::Hf, "nvfp4", false, false),
            ("4bit", QuantFamily::Mlx, "mlx-4bit", true, false),
            ("8-bit", QuantFamily::Mlx, "mlx-8bit", true, false),
            ("int4", QuantFamily::Gguf, "q4_k_m", true, true),
            // llama.cpp's i-quant file types, as written and as llama.cpp prints them.
            ("IQ4_XS", QuantFamily::Gguf, "iq4_xs", false, false),
            (" iq4_xs ", QuantFamily::Gguf, "iq4_xs", false, false),
            ("IQ4_XS - 4.25 bpw", QuantFamily::Gguf, "iq4_xs", false, false),
            ("IQ3_S mix - 3.66 bpw", QuantFamily::Gguf, "iq3_m", false, false),
            ("IQ2_XXS", QuantFamily::Gguf, "iq2_xxs", false, false),
            ("Q3_K_S", QuantFamily::Gguf, "q3_k_s", false, false),
            // llama.cpp's file-type names (what llama-bench prints) and llama-quantize's aliases.
            ("Q4_K - Medium", QuantFamily::Gguf, "q4_k_m", false, false),
            ("Q4_K - Small", QuantFamily::Gguf, "q4_k_s", false, false),
            ("Q3_K - Large", QuantFamily::Gguf, "q3_k_l", false, false),
            ("Q2_K - Medium", QuantFamily::Gguf, "q2_k", false, false),
            ("MXFP4 MoE", QuantFamily::Gguf, "mxfp4", false, false),
            ("Q4_K", QuantFamily::Gguf, "q4_k_m", false, false),
            ("q5_k", QuantFamily::Gguf, "q5_k_m", false, false),
            // Unsloth's dynamic labels: the two presets of their own, else the nearest standard
            // file type with the assumption said.
            ("Q8_K_XL", QuantFamily::Gguf, "ud-q8_k_xl", false, false),
            ("UD-Q3_K_XL", QuantFamily::Gguf, "q3_k_m", false, true),
            ("Q3_K_XL", QuantFamily::Gguf, "q3_k_m", false, true),
            ("UD-Q2_K_XL", QuantFamily::Gguf, "q2_k", false, true),
            ("UD-Q5_K_XL", QuantFamily::Gguf, "q5_k_m", false, true),
            ("UD-Q6_K_XL", QuantFamily::Gguf, "q6_k", false, true),
            ("UD-IQ2_XXS", QuantFamily::Gguf, "iq2_xxs", false, true),
            ("UD-IQ1_S", QuantFamily::Gguf, "iq1_s", false, true),
            ("ud-iq3_xxs", QuantFamily::Gguf, "iq3_xxs", false, true),
            // `_L` files of K types that have no large variant: the type's rules, said.
            ("Q4_K_L", QuantFamily::Gguf, "q4_k_m", false, true),
            ("Q2_K_L", QuantFamily::Gguf, "q2_k", false, true),
            ("Q6_K_L", QuantFamily::Gguf, "q6_k", false, true),
            ("Q3_K_L", QuantFamily::Gguf, "q3_k_l", false, false),
            // A checkpoint's repository or file name: the format its name ends with.
            ("mlx-community/Qwen3-Coder-Next-4bit", QuantFamily::Mlx, "mlx-4bit", true, false),
            ("mlx-community/Qwen3-30B-A3B-4bit-DWQ", QuantFamily::Any, "mlx-4bit", false, false),
            ("mlx-community/gpt-oss-120b-MXFP4-Q8", QuantFamily::Mlx, "mxfp4", false, false),
            ("mlx-community/Llama-3.3-70B-Instruct-bf16", QuantFamily::Mlx, "bf16", false, false),
            ("unsloth/Qwen3-30B-A3B-GGUF:Q4_K_M", QuantFamily::Gguf, "q4_k_m", false, false),
            ("unsloth/GLM-4.6-GGUF:UD-Q4_K_XL", QuantFamily::Gguf, "ud-q4_k_xl", false, false),
            ("Llama-3.1-8B-Instruct-Q8_0.gguf", QuantFamily::Gguf, "q8_0", false, false),
            ("nvidia/Llama-3.1-8B-Instruct-FP4", QuantFamily::Hf, "nvfp4", false, false),
            ("RedHatAI/Qwen3-30B-A3B-FP8-dynamic", QuantFamily::Hf, "fp8", false, false),
        ] {
            assert_eq!(q(label, family), Ok((id.to_string(), width, assumed)), "{label}");
        }
        let said = c.find_quant("UD-Q3_K_XL", QuantFamily::Gguf).unwrap().assumed.unwrap();
        assert!(said.contains("`UD-Q3_K_XL` read as llama.cpp's q3_k_m rules"), "{said}");
        // Q8_K is no file type: a Q8_K_XL is read as Q8_0 (through its preset).
        assert_eq!(c.find_quant("UD-Q8_K_XL", QuantFamily::Gguf).unwrap().id, "ud-q8_k_xl");
        assert_eq!(q("4bit", QuantFamily::Hf), Err(QuantNameError::NoSingleFormat { bits: 4 }));
        // A repository whose name ends with no format is no quant.
        assert_eq!(q("Qwen/Qwen3-30B-A3B", QuantFamily::Hf), Err(QuantNameError::Unknown("Qwen/Qwen3-30B-A3B".into())));
        for unknown in ["mlx-", "mlx-q9", "IQ5_XS", "TQ1_0", "UD-TQ1_0", "Q9_K_XL", "UD-BF16", "UD-", "_XL", "IQ4_XS - Medium"] {
            assert_eq!(q(&format!(" {unknown} "), QuantFamily::Gguf), Err(QuantNameError::Unknown(unknown.into())), "{unknown}");
        }
    }

    #[test]
    fn keys_by_hand() {
        assert_eq!(model_key("llama3.1:8b"), "llama318b");
        assert_eq!(model_key("llama-3.1-8b"), "llama318b");
        assert_eq!(model_key("unsloth/Qwen3-30B-A3B-GGUF:UD-Q4_K_XL"), "qwen330ba3b");
        assert_eq!(model_key("gpt-oss-120b-MXFP4-Q8"), "gptoss120b");
        assert_eq!(model_key("Qwen3-30B-A3B-Instruct-2507"), "qwen330ba3b");
        // Names written with spaces, as tables and model cards write them: suffixes drop alike.
        assert_eq!(model_key("Llama 3.3 70B Instruct"), "llama3370b");
        assert_eq!(model_key("Qwen2.5 Coder 7B Instruct"), "qwen25coder7b");
        assert_eq!(model_key("gemma 3 4B QAT"), "gemma34b");
        assert_eq!(model_key("llama 7B Q4_0"), "llama7b");
        let cat = crate::catalog::catalog();
        for (name, id) in [("Llama 3.3 70B Instruct", "llama-3.3-70b"), ("gemma 3 4B QAT", "gemma-3-4b"), ("llama 7B Q4_0", "llama-2-7b")] {
            assert_eq!(cat.find_model(name).map(|(p, _)| p.id.as_str()), Ok(id), "{name}");
        }
    }
}
