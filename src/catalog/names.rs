//! Model names as people write them: a preset's id or alias first, else a normalised match
//! that drops what does not change a model's shape: an organisation prefix (`meta-llama/`,
//! `mlx-community/`, `unsloth/`), case, release suffixes (`-Instruct`, `-it`, `-Thinking`, a
//! date code such as `-2507`), format suffixes (`-GGUF`, `-4bit`, `-MLX`, `-FP8`, `-Q4_K_M`,
//! a `.gguf` extension) and ollama's `name:size` tags (`llama3.1:8b`), then compares letters
//! and digits only. A name two presets answer to is an error naming both: never a silent guess.
//! One function ([`Catalog::find_model`]) serves scenario files' `[model] name` and `validate`.

use super::{Catalog, ModelPreset};
use crate::llm::ModelSpec;

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
    let lower = name.trim().to_lowercase();
    let base = lower.rsplit('/').next().unwrap_or(&lower);
    let base = base.strip_suffix(".gguf").unwrap_or(base);
    // `-` and ollama's `:` separate tokens; `_` stays inside one (GGUF types: `q4_k_m`).
    let mut tokens: Vec<&str> = base.split(['-', ':']).filter(|t| !t.is_empty()).collect();
    // `Meta-Llama-3.1-8B`: Meta's own name for its Llama releases.
    if tokens.len() > 1 && tokens[0] == "meta" && tokens[1].starts_with("llama") {
        tokens.remove(0);
    }
    while tokens.len() > 1 && tokens.last().is_some_and(|t| is_suffix(t)) {
        tokens.pop();
    }
    tokens.concat().chars().filter(char::is_ascii_alphanumeric).collect()
}

impl Catalog {
    /// The model preset a name written by a person means: an id or alias exactly, else the
    /// one preset whose id or alias has the same [`model_key`]. Errors: unknown, or ambiguous
    /// (the presets listed).
    pub fn find_model(&self, name: &str) -> Result<&(ModelPreset, ModelSpec), ModelNameError> {
        if let Some(m) = self.model(name.trim()) {
            return Ok(m);
        }
        let key = model_key(name);
        let hits: Vec<&(ModelPreset, ModelSpec)> = self
            .models
            .iter()
            .filter(|(p, _)| !key.is_empty() && std::iter::once(&p.id).chain(&p.aliases).any(|n| model_key(n) == key))
            .collect();
        match hits.as_slice() {
            [one] => Ok(one),
            [] => Err(ModelNameError::Unknown(name.trim().to_string())),
            many => {
                Err(ModelNameError::Ambiguous { name: name.trim().to_string(), presets: many.iter().map(|(p, _)| p.id.clone()).collect() })
            }
        }
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
            ("unsloth/DeepSeek-R1-0528-GGUF", "deepseek-r1"),
            ("deepseek-ai/DeepSeek-V3.1", "deepseek-v3.1"),
            ("moonshotai/Kimi-K2-Thinking", "kimi-k2-thinking"),
            ("MiniMaxAI/MiniMax-M2", "minimax-m2.1"),
            ("mlx-community/MiniMax-M2.1-4bit", "minimax-m2.1"),
            ("QWEN3.5-35B-A3B-MXFP4-Q8", "qwen3.5-35b-a3b"),
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
        ] {
            assert_ne!(c.find_model(name).map(|(p, _)| p.id.as_str()), Ok(not), "{name}");
        }
        for name in ["llama3.2", "qwen3:32b", "Qwen/Qwen3.5-397B-A17B", "MiniMax-M2.5", "gemma3:12b", "llama-3.1-7b", "", "-it"] {
            assert_eq!(c.find_model(name).map(|(p, _)| p.id.clone()), Err(ModelNameError::Unknown(name.trim().into())), "{name}");
        }
    }

    /// No two presets answer to one key: a normalised name is never ambiguous among the
    /// built-ins (an ambiguous one is reported, not guessed: see the user-catalog test).
    #[test]
    fn every_preset_key_belongs_to_one_preset() {
        let c = catalog();
        let mut seen: Vec<(String, &str)> = Vec::new();
        for (p, _) in &c.models {
            for n in std::iter::once(&p.id).chain(&p.aliases) {
                let k = model_key(n);
                if let Some((_, other)) = seen.iter().find(|(x, o)| *x == k && *o != p.id) {
                    panic!("`{n}` of {} has key {k}, also {other}'s", p.id);
                }
                seen.push((k, &p.id));
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

    #[test]
    fn keys_by_hand() {
        assert_eq!(model_key("llama3.1:8b"), "llama318b");
        assert_eq!(model_key("llama-3.1-8b"), "llama318b");
        assert_eq!(model_key("unsloth/Qwen3-30B-A3B-GGUF:UD-Q4_K_XL"), "qwen330ba3b");
        assert_eq!(model_key("gpt-oss-120b-MXFP4-Q8"), "gptoss120b");
        assert_eq!(model_key("Qwen3-30B-A3B-Instruct-2507"), "qwen330ba3b");
    }
}
