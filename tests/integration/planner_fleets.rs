//! Issue 13 item 2: the planner across fleets. Budget pruning is exact (the pruned search picks
//! the winner and ranking of the unpruned one), mixed-fleet candidates appear exactly where the
//! runtime allows them, and `sweep --set` / `plan --spec` work like the rest of the CLI.

use supernode::capacity::planner::{self, Goal, Objective, Outcome, PlanRequest, candidates};
use supernode::catalog::catalog;
use supernode::profile::Profile;
use supernode::scenario::{ErrorKind, ScenarioBuilder};

use crate::{bin, write_text};

/// A small space: a small model (every cluster fits, the budget decides), four node types of
/// three chip families, up to 3 nodes, two fabrics, mixed fleets and option variants on.
fn small(goal: Goal, budget: f64, prune: bool) -> PlanRequest {
    let mut r = PlanRequest::new("llama-3.2-3b", Objective::new(None, Some(budget), None, goal).unwrap());
    r.nodes = ["m3-ultra-80c-256gb", "m4-max-40c-128gb", "dell-pro-max-gb10", "framework-desktop-ai-max-395"].map(String::from).to_vec();
    r.max_nodes = 3;
    r.fabrics = vec!["eth-10g".into(), "tb5-rdma".into()];
    r.mixed_fleets = true;
    r.vary_options = true;
    r.context = 64;
    r.prune = prune;
    r
}

#[test]
fn budget_pruning_never_drops_a_candidate_that_would_have_won() {
    let profile = Profile::default_profile();
    for goal in [Goal::Speed, Goal::TokensPerDayPerDollar] {
        let full = planner::plan(&small(goal, 1e9, false), &profile).unwrap();
        // Every predicted candidate's up-front cost is the estimate's cost, to the cent.
        for c in &full.candidates {
            if let Some(e) = c.estimate() {
                assert!((c.hardware_usd - e.cost_usd).abs() < 0.01, "{}: {} vs {}", c.describe(), c.hardware_usd, e.cost_usd);
            }
        }
        for budget in [6_000.0, 9_000.0, 20_000.0] {
            let pruned = planner::plan(&small(goal, budget, true), &profile).unwrap();
            assert!(pruned.pruned() > 0, "{goal:?} ${budget}: nothing pruned");
            // The unpruned search, constrained afterwards: same winner, same ranking.
            let unpruned = planner::plan(&small(goal, budget, false), &profile).unwrap();
            assert_eq!(unpruned.pruned(), 0);
            assert_eq!(pruned.winner, unpruned.winner, "{goal:?} ${budget}");
            assert_eq!(pruned.ranked, unpruned.ranked, "{goal:?} ${budget}");
            // The winner of the unconstrained search, if affordable, is still ranked.
            let w = full.winner.unwrap();
            if full.candidates[w].hardware_usd <= budget {
                assert_eq!(pruned.winner, Some(w));
            }
            for c in &pruned.candidates {
                if let Outcome::Pruned { cost_usd } = c.outcome {
                    assert!(cost_usd > budget);
                    assert!(pruned.verdict(c.id).starts_with("over budget (pruned"), "{}", pruned.verdict(c.id));
                } else if let Some(e) = c.estimate() {
                    assert!(e.cost_usd <= budget, "{} ran over budget", c.describe());
                }
            }
        }
    }
}

#[test]
fn mixed_fleet_candidates_appear_where_legal_and_never_where_the_runtime_forbids_them() {
    let cat = catalog();
    let chip = |id: &str| cat.node(id).unwrap().chip.clone();
    let is_mac = |id: &str| cat.node(id).unwrap().os == supernode::hw::Os::Macos;
    let mut req = small(Goal::Speed, 1e9, false);
    req.max_nodes = 4;
    req.fabrics.clear();
    let all = candidates(&req).unwrap();
    let mixed: Vec<_> = all.iter().filter(|c| c.is_mixed_fleet()).collect();
    assert!(!mixed.is_empty());
    for c in &mixed {
        let all_macs = c.nodes.iter().all(|n| is_mac(n));
        match c.engine.as_str() {
            "llama-cpp-rpc" => {}
            "exo" => assert!(all_macs, "exo across non-Macs: {}", c.describe()),
            other => panic!("engine {other} on a mixed fleet: {}", c.describe()),
        }
    }
    // Mac + GB10 + Framework under llama.cpp RPC is there; exo mixes Macs of two chips.
    let chips_of = |c: &&&planner::Candidate| {
        let mut v: Vec<String> = c.nodes.iter().map(|n| chip(n)).collect();
        v.sort();
        v.dedup();
        v
    };
    assert!(mixed.iter().any(|c| c.engine == "llama-cpp-rpc" && chips_of(&c).len() == 3 && !c.nodes.iter().all(|n| is_mac(n))));
    assert!(mixed.iter().any(|c| c.engine == "exo" && chips_of(&c) == ["m3-ultra", "m4-max"]));
    assert!(!mixed.iter().any(|c| c.engine == "exo" && c.nodes.iter().any(|n| !is_mac(n))));
    // Without mixed fleets, every candidate is one chip family.
    req.mixed_fleets = false;
    assert!(candidates(&req).unwrap().iter().all(|c| !c.is_mixed_fleet()));
    // The rule is the scenario's too: exo over a Mac and a GB10 is an illegal split with a fix.
    let mut b = ScenarioBuilder::new("test");
    b.nodes(&["m3-ultra-80c-256gb".into(), "dell-pro-max-gb10".into()]).fabric("eth-10g").model("llama-3.2-3b").engine("exo");
    let e = b.build().unwrap_err();
    assert_eq!(e.kind, ErrorKind::IllegalSplit);
    assert!(e.message.contains("cannot mix chip families"), "{}", e.message);
    assert!(e.help.as_deref().unwrap_or("").contains("llama-cpp-rpc"));
    b.engine("llama-cpp-rpc").parallelism("pipeline");
    assert!(b.build().is_ok());
}

#[test]
fn plan_spec_file_and_flags() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_text(
        dir.path(),
        "q.toml",
        "question = \"small mixed fleet\"\nmodel = \"llama-3.2-3b\"\ngoal = \"tokens-per-s-per-dollar\"\nbudget_usd = 7000\n\
         nodes = [\"m4-max-40c-128gb\", \"framework-desktop-ai-max-395\"]\nmax_nodes = 2\nfabrics = [\"eth-10g\"]\nmixed_fleets = true\n",
    );
    let out = dir.path().join("plan.json");
    let o = bin().args(["plan", "--spec"]).arg(&spec).arg("--out").arg(&out).arg("--json").assert().success().get_output().clone();
    let p: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(p["objective"]["goal"], "tokens-per-s-per-dollar");
    assert!(p["question"].as_str().unwrap().starts_with("small mixed fleet"));
    assert!(p["pruned"].as_u64().unwrap() > 0);
    let saved: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(saved["format"], "supernode-plan-1");
    assert!(saved["points"].as_array().unwrap().iter().any(|x| x["mixed_fleet"] == true));
    // A flag wins over the file; an unknown key is located.
    let o = bin().args(["plan", "--spec"]).arg(&spec).args(["--goal", "speed", "--json"]).assert().success().get_output().clone();
    let p: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(p["objective"]["goal"], "speed");
    let bad = write_text(dir.path(), "bad.toml", "model = \"llama-3.2-3b\"\nbudget = 1\n");
    fails_with(bin().args(["plan", "--spec"]).arg(&bad), "bad.toml:2:1: unknown field `budget`");
    fails_with(bin().args(["plan", "--model", "llama-3.2-3b", "--goal", "fastest"]), "unknown goal");
}

#[test]
fn sweep_set_overrides_the_base_and_refuses_an_axis() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_text(
        dir.path(),
        "s.toml",
        "name = \"set\"\n[cluster]\nnode = \"m3-ultra-80c-512gb\"\ncount = 1\n[model]\nname = \"llama-3.2-3b\"\n\
         [workload]\nprompt_tokens = 8\ngenerate_tokens = 4\n[sweep]\n\"cluster.count\" = [1]\n",
    );
    let out = dir.path().join("out");
    bin().arg("sweep").arg(&file).arg("--out").arg(&out).args(["--no-charts", "--set", "workload.prompt_tokens=64"]).assert().success();
    let line = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    let row: serde_json::Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    assert_eq!(row["estimate"]["prompt_tokens"], 64);
    fails_with(
        bin().arg("sweep").arg(&file).arg("--out").arg(dir.path().join("o2")).args(["--set", "cluster.count=2"]),
        "`cluster.count` is a sweep axis",
    );
}

/// Exit code 2 with `text` on stderr.
fn fails_with(cmd: &mut assert_cmd::Command, text: &str) {
    let o = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(text), "{err}");
}
