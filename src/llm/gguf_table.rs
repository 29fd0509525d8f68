//! A GGUF file's tensor types as a user lists them (`model.gguf_tensor_types = "file"`):
//! `gguf-dump` output (`  12: 58720256 | 7168, 8192, 1, 1 | Q4_K | blk.0.attn_q_b.weight`) or
//! llama.cpp's loader listing (`- tensor 12: blk.0.attn_q_b.weight q4_K [7168, 8192, 1, 1]`).
//! Each tensor is classed by its GGUF name; the quantization gets, per class and layer, the
//! byte-weighted mean bits of the listed tensors, so the bytes per class are the file's.

use std::collections::BTreeMap;

use super::hf_config::LlmError;
use super::quant::{ClassFormat, GgufType, KernelFamily, QuantFamily, QuantScheme, QuantSpec, TensorClass, TensorFormat};

/// The class of a GGUF tensor name (`blk.3.ffn_down_exps.weight`) and its layer.
pub fn gguf_class(name: &str) -> Option<(TensorClass, Option<u64>)> {
    let layer = name.strip_prefix("blk.").and_then(|r| r.split('.').next()).and_then(|n| n.parse().ok());
    let class = if name.starts_with("token_embd") {
        TensorClass::Embedding
    } else if name.starts_with("output.") {
        TensorClass::LmHead
    } else if name.contains("norm") {
        TensorClass::Norm
    } else if name.contains("ffn_gate_inp") || name.contains("exp_probs_b") {
        TensorClass::Router
    } else if name.contains("_exps") {
        TensorClass::RoutedExpert
    } else if name.contains("_shexp") {
        TensorClass::SharedExpert
    } else if name.contains(".attn_") {
        TensorClass::Attention
    } else if name.contains(".ffn_") {
        TensorClass::DenseMlp
    } else {
        return None;
    };
    Some((class, layer))
}

/// One parsed tensor line: name, type and element count.
fn parse_line(line: &str) -> Option<(String, GgufType, u64)> {
    let tokens: Vec<&str> = line.split(|c: char| c.is_whitespace() || "|,[]".contains(c)).filter(|t| !t.is_empty()).collect();
    let name = tokens.iter().find(|t| t.ends_with(".weight") || t.ends_with(".bias"))?;
    let ty = tokens.iter().find_map(|t| GgufType::parse(t))?;
    // Numbers, without the index (`12:`) that starts the line.
    let nums: Vec<u64> = tokens.iter().filter(|t| !t.ends_with(':')).filter_map(|t| t.parse().ok()).collect();
    let count = match nums.as_slice() {
        [] => return None,
        [first, rest @ ..] if !rest.is_empty() && *first == rest.iter().product::<u64>() => *first,
        all => all.iter().product(),
    };
    Some((name.to_string(), ty, count))
}

/// Per class and layer: (elements, bits x elements, bytes per kernel family).
type Sums = BTreeMap<(TensorClass, Option<u64>), (f64, f64, BTreeMap<&'static str, f64>)>;

/// Reads a tensor-type listing into a quantization (family GGUF). `path` names the file in
/// errors. Lines that are not tensor lines (headers, metadata) are skipped; a tensor line
/// whose name has no class is an error naming the line.
pub fn quant_from_gguf_table(id: &str, path: &str, text: &str) -> Result<QuantSpec, LlmError> {
    let mut sums: Sums = BTreeMap::new();
    let mut tensors = 0;
    for (i, line) in text.lines().enumerate() {
        let Some((name, ty, count)) = parse_line(line) else { continue };
        let Some((class, layer)) = gguf_class(&name) else {
            return Err(LlmError::Invalid {
                key: "gguf_tensor_types",
                why: format!("{path}:{}: tensor `{name}` is of no known class (token_embd, output, blk.N.attn_*, blk.N.ffn_*)", i + 1),
            });
        };
        let e = sums.entry((class, layer)).or_default();
        e.0 += count as f64;
        e.1 += count as f64 * ty.bits();
        *e.2.entry(ty.kernel().id()).or_default() += count as f64 * ty.bits();
        tensors += 1;
    }
    if tensors == 0 {
        return Err(LlmError::Invalid {
            key: "gguf_tensor_types",
            why: format!("{path}: no tensor lines found (expected `gguf-dump` output: index, elements, dims, type, name)"),
        });
    }
    let overrides = sums
        .into_iter()
        .map(|((class, layer), (n, bits, kernels))| {
            let kernel =
                kernels.iter().max_by(|a, b| a.1.total_cmp(b.1)).and_then(|(k, _)| KernelFamily::parse(k)).unwrap_or(KernelFamily::KQuant);
            ClassFormat { class, layer, format: TensorFormat { bits: bits / n, kernel } }
        })
        .collect();
    Ok(QuantSpec {
        id: id.into(),
        family: QuantFamily::Gguf,
        scheme: QuantScheme::PerClass { default: GgufType::Q4_K.format(), overrides },
        source: format!("tensor types listed in {path} ({tensors} tensors)"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::TensorRole;

    #[test]
    fn gguf_dump_and_loader_lines() {
        let text = "* Dumping 5 tensor(s)\n\
              1:  926679040 |  7168, 129280,     1,     1 | Q4_K    | token_embd.weight\n\
              2:       7168 |  7168,     1,     1,     1 | F32     | blk.0.attn_norm.weight\n\
              3:   58720256 |  8192,  7168,     1,     1 | Q6_K    | blk.0.ffn_down.weight\n\
            llama_model_loader: - tensor    4:   blk.0.ffn_up.weight q4_K     [  7168,  8192,     1,     1 ]\n\
            llama_model_loader: - tensor    5:   blk.0.ffn_gate.weight q4_K     [  7168,  8192,     1,     1 ]\n";
        let q = quant_from_gguf_table("t", "types.txt", text).unwrap();
        let s = crate::catalog::catalog().model("deepseek-r1").unwrap().1.quant_shape();
        let mlp = q.format(TensorRole::Mlp, 0, &s);
        assert!((mlp.bits - (6.5625 + 4.5 + 4.5) / 3.0).abs() < 1e-9, "{mlp:?}");
        assert_eq!(mlp.kernel, KernelFamily::KQuant);
        assert_eq!(q.format(TensorRole::Embedding, 0, &s).bits, 4.5);
        let e = quant_from_gguf_table("t", "types.txt", "  1: 10 | 10, 1 | Q4_K | blk.0.mystery.weight\n").unwrap_err().to_string();
        assert!(e.contains("types.txt:1") && e.contains("blk.0.mystery.weight"), "{e}");
    }
}
