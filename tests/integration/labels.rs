//! Systems and engines as published rows write them (issue 20 item 5): chip names and makers'
//! words in the system column, `llama.cpp` with a backend, LM Studio by its file; and a row the
//! twin refuses (a model that does not fit) listed with its reason while the other rows are
//! scored, never an error that stops `validate`.

use serde_json::Value;

use crate::{bin, write_text};

const HEADER: &str =
    "id,system,nodes,node_mix,model,quant,engine,parallelism,fabric,prompt_tokens,concurrency,metric,value,unit,source,notes\n";

/// `validate --json` over `csv` (a header is added): the report, with look-ups by row id.
struct Scored(Value);

impl Scored {
    fn of(csv_rows: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = write_text(dir.path(), "rows.csv", &format!("{HEADER}{csv_rows}"));
        let out = bin().args(["-q", "validate", "--json", "--against"]).arg(&path).assert().success().get_output().clone();
        Scored(serde_json::from_slice(&out.stdout).unwrap())
    }

    /// A scored row (panics naming it when it was skipped).
    fn get(&self, id: &str) -> Value {
        let rows = self.0["rows"].as_array().unwrap();
        rows.iter().find(|r| r["id"] == id).unwrap_or_else(|| panic!("{id} not scored: {}", self.0)).clone()
    }

    fn predicted(&self, id: &str) -> f64 {
        self.get(id)["predicted"].as_f64().unwrap()
    }

    /// Whether one of the row's assumptions contains `what`.
    fn said(&self, id: &str, what: &str) -> bool {
        self.get(id)["assumptions"].as_array().unwrap().iter().any(|a| a.as_str().unwrap().contains(what))
    }
}

/// A decode row of Llama 3.2 3B (`model` and `quant` as given).
fn row(id: &str, system: &str, mix: &str, quant: &str, engine: &str) -> String {
    format!("{id},{system},1,{mix},llama-3.2-3b,{quant},{engine},none,none,,1,decode_tokens_per_s,50,tok/s,test,\n")
}

#[test]
fn validate_reads_chip_names_engine_spellings_and_lists_a_row_that_does_not_fit() {
    let mut csv = String::from(HEADER);
    for line in [
        row("strix", "AMD Ryzen AI Max+ 395", "128gb", "Q4_K_M", "llama.cpp (Vulkan)"),
        row("framework", "framework-desktop-ai-max-395", "128gb", "q4_k_m", "llama-cpp"),
        row("gx10", "asus-gx10", "128gb", "Q4_K_M", "llama.cpp"),
        row("spark", "NVIDIA DGX Spark", "128gb", "q4_k_m", "llama-cpp"),
        row("m5", "m5-max", "128gb", "4bit", "mlx_lm"),
        row("lmstudio-mlx", "mac-studio-m3-ultra", "512gb", "4bit", "LM Studio"),
        row("lmstudio-gguf", "mac-studio-m3-ultra", "512gb", "Q4_K_M", "lm-studio"),
        row("mlx", "mac-studio-m3-ultra", "512gb", "mlx-4bit", "mlx-lm"),
        row("gguf", "mac-studio-m3-ultra", "512gb", "q4_k_m", "llama-cpp"),
        row("cpu", "framework-desktop-ai-max-395", "128gb", "q4_k_m", "llama.cpp (CPU)"),
        "no-fit,mac-studio-m3-ultra,1,512gb,kimi-k2-thinking,mlx-4bit,mlx-lm,none,none,,1,decode_tokens_per_s,10,tok/s,test,\n".into(),
    ] {
        csv.push_str(&line);
    }
    let scored = Scored::of(csv.strip_prefix(HEADER).unwrap());
    let v = &scored.0;
    let (get, predicted, said) = (|id| scored.get(id), |id| scored.predicted(id), |id, what| scored.said(id, what));
    // The chip's marketing name is the Framework Desktop (the first preset of that chip and
    // memory), said so; the Vulkan backend (the AI Max+ default) is said.
    assert_eq!(predicted("strix"), predicted("framework"));
    assert!(said("strix", "taken as framework-desktop-ai-max-395"), "{}", get("strix"));
    assert!(said("strix", "vulkan"), "{}", get("strix"));
    // One GB10 box alone decodes as another (same chip and memory).
    assert_eq!(predicted("gx10"), predicted("spark"));
    assert!(predicted("m5") > 0.0);
    // LM Studio runs MLX files with MLX, GGUF files with llama.cpp.
    assert_eq!(predicted("lmstudio-mlx"), predicted("mlx"));
    assert_eq!(predicted("lmstudio-gguf"), predicted("gguf"));
    assert!(said("lmstudio-mlx", "LM Studio running an MLX file"), "{}", get("lmstudio-mlx"));
    let why = |id: &str| crate::skip_reason(v, id);
    assert!(why("cpu").contains("CPU backend is not modelled"), "{v}");
    assert!(
        why("no-fit").starts_with("the twin refuses the row's scenario: kimi-k2-thinking (mlx-4bit) does not fit"),
        "{}",
        why("no-fit")
    );
    assert_eq!(v["rows"].as_array().unwrap().len(), 9, "{v}");
}

/// Memory in the system label (`Mac Studio M3 Ultra 512GB`, `(M3 Ultra, 256GB)`) picks the box;
/// a label with none takes the chip's fullest box and says so; fabrics are read from the words
/// people write (ConnectX-7 / QSFP, Thunderbolt 5 with or without RDMA, Ethernet by speed,
/// Wi-Fi), each reading said, and a catalog id as the first word stays as it is.
#[test]
fn validate_reads_memory_in_the_system_and_fabric_words() {
    let dir = tempfile::tempdir().unwrap();
    let line = |id: &str, system: &str, nodes: u32, mix: &str, model: &str, quant: &str, engine: &str, par: &str, fabric: &str| {
        format!("{id},\"{system}\",{nodes},{mix},{model},{quant},{engine},{par},\"{fabric}\",,1,decode_tokens_per_s,10,tok/s,test,\n")
    };
    let mut csv = String::from(HEADER);
    for l in [
        line("m512", "Mac Studio M3 Ultra 512GB", 1, "", "qwen3-235b-a22b", "4bit", "mlx-lm", "none", "none"),
        line("m256", "Mac Studio (M3 Ultra, 256 GB)", 1, "", "llama-3.2-3b", "4bit", "mlx-lm", "none", "none"),
        line("bare", "Mac Studio M3 Ultra", 1, "", "llama-3.2-3b", "4bit", "mlx-lm", "none", "none"),
        line("nosuch", "Mac Studio M3 Ultra 1024GB", 1, "", "llama-3.2-3b", "4bit", "mlx-lm", "none", "none"),
        line("cx7", "dgx-spark", 2, "2x128gb", "gpt-oss-120b", "mxfp4", "vllm", "tensor", "QSFP 200G"),
        line("tb5", "mac-studio-m3-ultra", 2, "2x512gb", "deepseek-v3.1", "mlx-4bit", "exo", "tensor", "Thunderbolt 5"),
        line("tb5tcp", "mac-studio-m3-ultra", 2, "2x512gb", "deepseek-v3.1", "mlx-4bit", "exo", "tensor", "TB5 (TCP bridge)"),
        line("eth", "framework-desktop-ai-max-395", 2, "2x128gb", "llama-3.3-70b", "q4_k_m", "llama-cpp-rpc", "pipeline", "2.5 GbE"),
        line("ten", "framework-desktop-ai-max-395", 2, "2x128gb", "llama-3.3-70b", "q4_k_m", "llama-cpp-rpc", "pipeline", "10GbE"),
        line("id", "mac-studio-m3-ultra", 2, "2x512gb", "deepseek-v3.1", "mlx-4bit", "exo", "pipeline", "tb5-tcp (or 2.5GbE; not stated)"),
    ] {
        csv.push_str(&l);
    }
    let path = write_text(dir.path(), "rows.csv", &csv);
    let out = bin().args(["-q", "validate", "--json", "--against"]).arg(&path).assert().success().get_output().clone();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let said = |id: &str| {
        let r = v["rows"].as_array().unwrap().iter().find(|r| r["id"] == id).unwrap_or_else(|| panic!("{id}: {v}"));
        r["assumptions"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect::<Vec<_>>().join(" | ")
    };
    assert!(said("m512").contains("is only m3-ultra-80c-512gb"), "{}", said("m512"));
    assert!(said("m256").contains("is only m3-ultra-80c-256gb"), "{}", said("m256"));
    assert!(said("bare").contains("names no memory size: assumed m3-ultra-80c-512gb (the chip's fullest box"), "{}", said("bare"));
    assert!(crate::skip_reason(&v, "nosuch").contains("no node preset of 1024 GB"), "{}", crate::skip_reason(&v, "nosuch"));
    for (id, fabric) in [("cx7", "cx7-roce"), ("tb5", "tb5-rdma"), ("tb5tcp", "tb5-tcp"), ("eth", "eth-2.5g"), ("ten", "eth-10g")] {
        assert!(said(id).contains(&format!("read as {fabric}")), "{id}: {}", said(id));
    }
    assert!(!said("id").contains("read as"), "a catalog id stays as written: {}", said("id"));
    let rate = |id: &str| v["rows"].as_array().unwrap().iter().find(|r| r["id"] == id).unwrap()["predicted"].as_f64().unwrap();
    assert!(rate("tb5") > rate("tb5tcp"), "RDMA beats TCP on the same cables: {} vs {}", rate("tb5"), rate("tb5tcp"));
}

/// Clusters as published rows write them, end to end: a system that counts its machines, a
/// node mix of two different machines, the splits people write, llama.cpp across machines, and
/// fine-tunes and ollama tags of a preset's shapes: each predicted as its plain spelling is.
#[test]
fn validate_reads_clusters_splits_and_fine_tunes_as_their_plain_spellings() {
    let lines = [
        "tp-plain,dgx-spark,2,,gpt-oss-120b,mxfp4,vllm,tensor,cx7-roce,,1,decode_tokens_per_s,70,tok/s,test,",
        "tp-counted,2x DGX Spark,,,gpt-oss-120b,mxfp4,vLLM,TP2,ConnectX-7,,1,decode_tokens_per_s,70,tok/s,test,",
        "tp-unstated,DGX Spark x2,2,,gpt-oss-120b,mxfp4,vllm,,cx7-roce,,1,decode_tokens_per_s,70,tok/s,test,",
        "mix-plain,m4-max-40c-128gb,2,,gpt-oss-120b,mxfp4,exo,pipeline,tb5-tcp,,1,decode_tokens_per_s,68,tok/s,test,",
        "mix-named,macbook pro,2,M4 Max 128GB + M4 Max 128GB,gpt-oss-120b,mxfp4,exo,PP,tb5-tcp,,1,decode_tokens_per_s,68,tok/s,test,",
        "rpc-plain,framework-desktop-ai-max-395,2,128gb,llama-3.3-70b,q4_k_m,llama-cpp-rpc,pipeline,eth-5g,,1,decode_tokens_per_s,5,tok/s,test,",
        "rpc-llama,2x Framework Desktop,2,128gb,llama-3.3-70b,Q4_K_M,llama.cpp,rpc,5GbE,,1,decode_tokens_per_s,5,tok/s,test,",
        "distill,mac-studio-m3-ultra,1,512gb,deepseek-r1:70b,q4_k_m,ollama,none,none,,1,decode_tokens_per_s,14,tok/s,test,",
        "llama70,mac-studio-m3-ultra,1,512gb,llama-3.3-70b,q4_k_m,ollama,none,none,,1,decode_tokens_per_s,14,tok/s,test,",
    ];
    let scored = Scored::of(&format!("{}\n", lines.join("\n")));
    let (get, predicted, said) = (|id| scored.get(id), |id| scored.predicted(id), |id, what| scored.said(id, what));
    assert_eq!(predicted("tp-counted"), predicted("tp-plain"));
    assert_eq!(predicted("tp-unstated"), predicted("tp-plain"));
    assert!(said("tp-counted", "node count not stated: 2"), "{}", get("tp-counted"));
    assert!(said("tp-unstated", "parallelism not stated: vllm's default on 2 nodes, tensor"), "{}", get("tp-unstated"));
    assert_eq!(predicted("mix-named"), predicted("mix-plain"));
    assert!(said("mix-named", "read as m4-max-40c-128gb + m4-max-40c-128gb"), "{}", get("mix-named"));
    assert_eq!(predicted("rpc-llama"), predicted("rpc-plain"));
    assert!(said("rpc-llama", "its RPC backend"), "{}", get("rpc-llama"));
    assert_eq!(predicted("distill"), predicted("llama70"));
}

/// The lines `vllm bench serve` prints, written as the metric (issue 22): median and P99 TTFT
/// and TPOT, request and output token throughput, read from a serving run of the row's
/// concurrency. One request's P99 TTFT is its TTFT, exactly as the single-request row predicts
/// it; percentiles are ordered; the request rate times the tokens of a request is the output
/// rate.
#[test]
fn validate_reads_the_serving_benchmarks_percentiles_and_request_rate() {
    let line = |id: &str, c: &str, metric: &str, unit: &str| {
        format!(
            "{id},DGX Spark,1,128gb,gpt-oss-120b,mxfp4,vllm,none,none,1024,{c},{metric},1,{unit},test,vllm bench serve; 128 generated tokens\n"
        )
    };
    let csv: String = [
        line("p50-ttft", "8", "Median TTFT (ms)", "ms"),
        line("p99-ttft", "8", "P99 TTFT (ms)", "ms"),
        line("mean-ttft", "8", "Mean TTFT (ms)", "ms"),
        line("p50-tpot", "8", "Median TPOT (ms)", "ms"),
        line("p99-tpot", "8", "P99 TPOT (ms)", "ms"),
        line("req", "8", "Request throughput (req/s)", "req/s"),
        line("out", "8", "Output token throughput (tok/s)", "tok/s"),
        line("one-p99", "", "p99_ttft_ms", "ms"),
        line("one", "1", "ttft_s", "s"),
    ]
    .concat();
    let s = Scored::of(&csv);
    for (id, metric) in [
        ("p50-ttft", "ttft_p50_s"),
        ("p99-ttft", "ttft_p99_s"),
        ("mean-ttft", "ttft_s"),
        ("p50-tpot", "tpot_p50_ms"),
        ("p99-tpot", "tpot_p99_ms"),
        ("req", "requests_per_s"),
        ("out", "aggregate_decode_tokens_per_s"),
    ] {
        assert_eq!(s.get(id)["metric"], metric, "{id}");
        assert!(s.said(id, "read as"), "{id} says how its metric was read");
    }
    assert!(s.said("p99-ttft", "of 8 concurrent requests sent at once"));
    assert!(s.said("one-p99", "of one request"));
    assert_eq!(s.predicted("one-p99"), s.predicted("one"), "one request's P99 TTFT is its TTFT");
    assert!(s.predicted("p50-ttft") <= s.predicted("p99-ttft") && s.predicted("p50-tpot") <= s.predicted("p99-tpot"));
    // Eight requests at once wait for prefills: their TTFT exceeds one request's.
    assert!(s.predicted("p99-ttft") > s.predicted("one"));
    let per_request = s.predicted("out") / s.predicted("req");
    assert!((per_request / 128.0 - 1.0).abs() < 0.02, "{per_request} tokens a request");
}

/// A serving row's command line sets how many requests the server runs at once (llama-server
/// `-np 8`, `OLLAMA_NUM_PARALLEL=2`, vLLM `--max-num-seqs=4`, an engine option), and the twin
/// serves them so; where the line is silent and the users outnumber the runtime's default, the
/// assumption says so. Eight users on 8 slots decode more than on llama-server's default 4,
/// which queues half.
#[test]
fn validate_serves_as_many_requests_at_once_as_the_command_line_says() {
    let serving = |id: &str, engine: &str, model: &str, quant: &str, c: u32, notes: &str| {
        format!(
            "{id},framework-desktop-ai-max-395,1,128gb,{model},{quant},{engine},none,none,128,{c},aggregate_decode_tokens_per_s,50,tok/s,test,\"{notes}\"\n"
        )
    };
    // One source per row: rows of one benchmark run share its server's flags.
    let spark = |id: &str, c: u32, notes: &str| {
        format!(
            "{id},dgx-spark,1,128gb,gpt-oss-120b,mxfp4,vllm,none,none,128,{c},aggregate_decode_tokens_per_s,50,tok/s,run {id},\"{notes}\"\n"
        )
    };
    let s = Scored::of(
        &[
            serving("np8", "llama.cpp", "llama-3.2-3b", "Q4_K_M", 8, "llama-server -np 8, 8 concurrent requests"),
            serving("silent", "llama.cpp", "llama-3.2-3b", "Q4_K_M", 8, "llama-server, 8 concurrent requests"),
            serving("ollama", "ollama", "llama-3.2-3b", "Q4_K_M", 4, "OLLAMA_NUM_PARALLEL=2"),
            serving("four", "llama.cpp", "llama-3.2-3b", "Q4_K_M", 4, "llama-server, 4 concurrent requests"),
            spark("seqs", 8, "vllm serve --max-num-seqs=4"),
            spark("vllm", 8, "vllm serve"),
        ]
        .concat(),
    );
    assert!(s.said("np8", "workload.max_batch = 8, as the row says (`-np 8`)"), "{}", s.get("np8"));
    assert!(s.said("silent", "llama.cpp's default of 4 requests at once (`-np 4`"), "{}", s.get("silent"));
    assert!(s.predicted("np8") > 1.2 * s.predicted("silent"), "8 slots {} vs 4 {}", s.predicted("np8"), s.predicted("silent"));
    assert!(s.said("ollama", "workload.max_batch = 2, as the row says (`OLLAMA_NUM_PARALLEL 2`)"), "{}", s.get("ollama"));
    assert!(s.predicted("ollama") < s.predicted("four"));
    // Four users on four slots: nothing to say.
    assert!(!s.said("four", "at once"), "{}", s.get("four"));
    assert!(s.said("seqs", "engine.max_num_seqs = 4, as the row says"), "{}", s.get("seqs"));
    assert!(s.predicted("seqs") < s.predicted("vllm"));
    // vLLM's cap is its engine option (1,024 sequences on a GB10): no default to state.
    assert!(!s.said("vllm", "at once"), "{}", s.get("vllm"));
}

/// A cluster row whose parallelism column is empty takes its split from the command line
/// (`--pipeline-parallel-size 2`, `-tp 2 -pp 2`, `--data-parallel-size 2
/// --enable-expert-parallel`), said in its assumptions; a size of 1 is no split. A batch-1
/// pipeline of two Sparks decodes slower than tensor parallel over them, as the engine's
/// default would have had it.
#[test]
fn validate_reads_an_unstated_split_from_the_command_line() {
    let row = |id: &str, n: u32, model: &str, quant: &str, notes: &str| {
        format!("{id},dgx-spark,{n},128gb,{model},{quant},vllm,,cx7,,1,decode_tokens_per_s,5,tok/s,run {id},\"{notes}\"\n")
    };
    let s = Scored::of(
        &[
            row("pp", 2, "llama-3.3-70b", "fp8", "vllm serve --tensor-parallel-size 1 --pipeline-parallel-size 2"),
            row("silent", 2, "llama-3.3-70b", "fp8", "vllm serve"),
            row("tp-pp", 4, "llama-3.3-70b", "fp8", "vllm serve -tp 2 -pp 2"),
            row("dp-ep", 2, "gpt-oss-120b", "mxfp4", "vllm serve --data-parallel-size=2 --enable-expert-parallel"),
        ]
        .concat(),
    );
    assert!(s.said("pp", "parallelism not stated: `PP2`, as the command line says (`--pipeline-parallel-size 2`)"), "{}", s.get("pp"));
    assert!(s.said("silent", "parallelism not stated: vllm's default on 2 nodes, tensor"), "{}", s.get("silent"));
    assert!(s.predicted("pp") < s.predicted("silent"), "pipeline {} vs tensor {}", s.predicted("pp"), s.predicted("silent"));
    assert!(s.said("tp-pp", "read as 2 pipeline stages of 2 tensor-parallel ranks"), "{}", s.get("tp-pp"));
    assert!(s.said("dp-ep", "`DP2 + EP`, as the command line says"), "{}", s.get("dp-ep"));
    assert!(s.said("dp-ep", "(`data+expert`)"), "{}", s.get("dp-ep"));
}
