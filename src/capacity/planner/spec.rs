//! Plan spec files: a planning question written down (`supernode plan --spec FILE`), so a
//! question can be kept, reviewed and re-asked. Every key is a `plan` flag; flags given on the
//! command line win over the file.
//!
//! ```toml
//! question = "Best tokens per day per dollar for Kimi K2 Thinking under $40,000"
//! model = "kimi-k2-thinking"
//! goal = "tokens-per-day-per-dollar"
//! budget_usd = 40000
//! nodes = ["m3-ultra-80c-512gb", "dell-pro-max-gb10", "framework-desktop-ai-max-395"]
//! mixed_fleets = true
//! ```

use std::path::Path;

use serde::Deserialize;

/// A plan spec file as written (`deny_unknown_fields`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PlanSpec {
    /// The question in words, for the report (optional).
    pub question: Option<String>,
    /// Model preset.
    pub model: Option<String>,
    /// Quantization.
    pub quant: Option<String>,
    /// Context to hold.
    pub context: Option<u64>,
    /// `speed`, `tokens-per-s-per-dollar` or `tokens-per-day-per-dollar`.
    pub goal: Option<String>,
    /// Minimum decode tokens/s.
    pub target_tokens_per_s: Option<f64>,
    /// Hardware budget, USD.
    pub budget_usd: Option<f64>,
    /// Power cap, W.
    pub max_power_w: Option<f64>,
    /// Node presets allowed.
    #[serde(default)]
    pub nodes: Vec<String>,
    /// Largest cluster.
    pub max_nodes: Option<usize>,
    /// Fabrics allowed.
    #[serde(default)]
    pub fabrics: Vec<String>,
    /// Engines allowed.
    #[serde(default)]
    pub engines: Vec<String>,
    /// Mix chip families where the runtime allows it.
    #[serde(default)]
    pub mixed_fleets: bool,
    /// Vary engine options.
    #[serde(default)]
    pub vary_options: bool,
}

impl PlanSpec {
    /// Reads a spec file; errors name the file, line and column.
    pub fn load(path: &Path) -> Result<PlanSpec, String> {
        let text =
            crate::util::read_bounded(path, crate::util::MAX_INPUT_BYTES).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("{}:{e}", path.display()))
    }

    /// Parses spec text; the error starts with `line:column: `.
    pub fn parse(text: &str) -> Result<PlanSpec, String> {
        Self::located(text)
    }

    /// Deserializes any spec type from TOML text; the error starts with `line:column: `.
    pub fn located<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
        toml::from_str(text).map_err(|e: toml::de::Error| {
            let (line, col) = e.span().map_or((1, 1), |sp| {
                let before = &text[..sp.start.min(text.len())];
                (before.matches('\n').count() + 1, before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1)
            });
            let msg = crate::util::user_words(e.message().trim());
            match crate::util::toml_shape(text, e.span().unwrap_or(0..0), &msg) {
                Some((msg, help)) => format!("{line}:{col}: {msg}; {help}"),
                None => format!("{line}:{col}: {msg}"),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_located() {
        let e = PlanSpec::parse("model = \"kimi-k2-thinking\"\nbudget = 3\n").unwrap_err();
        assert!(e.starts_with("2:1: unknown field `budget`"), "{e}");
        let s = PlanSpec::parse("model = \"x\"\nmixed_fleets = true\n").unwrap();
        assert!(s.mixed_fleets && s.model.as_deref() == Some("x"));
    }
}
