//! The planner answers the two questions of issue 4 with a winner, reasons and a cabling plan.
//! (Restricted to M3 Ultra nodes and Thunderbolt fabrics to keep the test fast; the unrestricted
//! answers are the same clusters.)

use crate::bin;

fn plan(args: &[&str]) -> serde_json::Value {
    let o = bin()
        .arg("plan")
        .args(args)
        .args(["--nodes", "m3-ultra-80c-512gb,m3-ultra-80c-256gb", "--max-nodes", "4", "--fabrics", "tb5-rdma,tb5-tcp", "--json"])
        .assert()
        .success()
        .get_output()
        .clone();
    serde_json::from_slice(&o.stdout).unwrap()
}

fn plan_code(args: &[&str]) -> (i32, serde_json::Value) {
    let o = bin()
        .arg("plan")
        .args(args)
        .args(["--nodes", "m3-ultra-80c-512gb,m3-ultra-80c-256gb", "--max-nodes", "4", "--fabrics", "tb5-rdma,tb5-tcp", "--json"])
        .output()
        .unwrap();
    (o.status.code().unwrap(), serde_json::from_slice(&o.stdout).unwrap())
}

fn check_winner(p: &serde_json::Value, target: f64) {
    let w = &p["winner"];
    assert!(w["decode_tokens_per_s"].as_f64().unwrap() >= target, "{w}");
    assert_eq!(w["verdict"], "winner");
    // Nothing that meets the target is cheaper.
    let cost = w["cost_usd"].as_f64().unwrap();
    for b in p["best"].as_array().unwrap() {
        assert!(b["cost_usd"].as_f64().unwrap() >= cost, "{b}");
    }
    let cables = w["cables"].as_u64().unwrap();
    assert_eq!(w["cabling"].as_array().unwrap().len() as u64, cables);
    if cables > 0 {
        assert!(w["cabling"][0].as_str().unwrap().contains("port"), "{w}");
    }
}

#[test]
fn cheapest_cluster_for_kimi_k2_at_25_tokens_per_second() {
    // The answer depends on the calibrated profile: a winner at >= 25 tok/s, or an explicit
    // "no cluster" with the closest candidates and exit code 2. Either way, with reasons.
    let (code, p) = plan_code(&["--model", "kimi-k2-thinking", "--target-tokens-per-s", "25"]);
    if code == 0 {
        check_winner(&p, 25.0);
    } else {
        assert_eq!(code, 2);
        assert!(p["winner"].is_null());
        assert!(p["predicted"].as_u64().unwrap() > 0);
        let pareto = p["pareto"].as_array().unwrap();
        assert!(pareto.iter().all(|c| c["verdict"].as_str().unwrap().starts_with("too slow")), "{pareto:?}");
    }
    let causes: Vec<&str> = p["could_not_run"].as_array().unwrap().iter().map(|c| c["cause"].as_str().unwrap()).collect();
    assert!(causes.contains(&"does not fit in memory"), "{causes:?}");
    // A rate some M3 Ultra cluster reaches: the cheapest of them wins, with its cabling.
    let p = plan(&["--model", "kimi-k2-thinking", "--target-tokens-per-s", "15"]);
    check_winner(&p, 15.0);
    assert!(p["winner"]["nodes"].as_array().unwrap().len() >= 2, "Kimi needs more than one 512 GB node");
}

#[test]
fn fastest_under_20000_dollars_for_deepseek_v3_1() {
    let p = plan(&["--model", "deepseek-v3.1", "--budget-usd", "20000"]);
    let w = &p["winner"];
    assert!(w["cost_usd"].as_f64().unwrap() <= 20000.0, "{w}");
    let speed = w["decode_tokens_per_s"].as_f64().unwrap();
    for b in p["best"].as_array().unwrap() {
        assert!(b["decode_tokens_per_s"].as_f64().unwrap() <= speed, "{b}");
    }
    assert!(!p["pareto"].as_array().unwrap().is_empty());
}

#[test]
fn report_names_winner_pareto_losers_and_cabling() {
    let o = bin()
        .args(["plan", "--model", "deepseek-v3.1", "--budget-usd", "20000", "--nodes", "m3-ultra-80c-256gb", "--max-nodes", "3"])
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8(o.stdout).unwrap();
    for needle in ["WINNER", "BEST", "PARETO FRONT", "WHY THE OTHERS LOST", "CABLING FOR THE WINNER", "illegal split", "<->"] {
        assert!(text.contains(needle), "missing `{needle}` in\n{text}");
    }
}

#[test]
fn bad_requests_are_input_errors() {
    bin().args(["plan", "--model", "deepseek-v3.1"]).assert().code(2);
    bin().args(["plan", "--model", "deepsek-v3.1", "--budget-usd", "1"]).assert().code(2);
    bin().args(["plan", "--model", "deepseek-v3.1", "--budget-usd", "-5"]).assert().code(2);
    // Nothing meets the objective: the report says so and exits 2.
    let o = bin()
        .args(["plan", "--model", "kimi-k2-thinking", "--budget-usd", "5000", "--max-nodes", "2"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(String::from_utf8(o.stdout).unwrap().contains("NO CLUSTER meets the objective"));
}
