//! Random edits to a valid scenario never panic.

use proptest::prelude::*;
use supernode::profile::Profile;
use supernode::scenario::{Source, parse};

const BASE: &str = r#"name = "p"
seed = 3
[cluster]
node = "m3-ultra-80c-256gb"
count = 2
fabric = "tb5-rdma"
topology = "full-mesh"
[model]
name = "llama-3.2-3b"
quant = "mlx-4bit"
[engine]
name = "exo"
parallelism = "tensor"
[workload]
prompt_tokens = 40
generate_tokens = 3
"#;

const VALUES: &[&str] = &[
    "0",
    "-1",
    "1",
    "3",
    "7",
    "65",
    "2.5",
    "\"\"",
    "\"x\"",
    "true",
    "[]",
    "[\"m3-ultra-80c-512gb\"]",
    "\"pipeline\"",
    "\"ring\"",
    "\"switch\"",
    "\"tb5-tcp\"",
    "\"eth-10g\"",
    "\"llama-cpp-rpc\"",
    "\"q4_k_m\"",
    "\"deepseek-v3.1\"",
    "\"26.3\"",
    "{}",
    "1e300",
    "nan",
];

fn run(text: String) {
    let src = Source { path: "p.toml".into(), dir: Default::default(), text };
    if let Ok(s) = parse(src) {
        let _ = supernode::estimate::estimate(&s, &Profile::default_profile());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn replacing_a_value_never_panics(line in 0usize..16, v in 0usize..VALUES.len()) {
        let mut lines: Vec<String> = BASE.lines().map(String::from).collect();
        if let Some((k, _)) = lines[line].clone().split_once(" = ") {
            lines[line] = format!("{k} = {}", VALUES[v]);
        }
        run(lines.join("\n"));
    }

    #[test]
    fn byte_edits_never_panic(pos in 0usize..BASE.len(), byte in any::<u8>(), delete in any::<bool>()) {
        let mut b = BASE.as_bytes().to_vec();
        if delete { b.remove(pos); } else { b.insert(pos, byte); }
        run(String::from_utf8_lossy(&b).into_owned());
    }
}
