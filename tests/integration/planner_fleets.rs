//! Issue 13 item 2: the planner across fleets. Budget pruning is exact (the pruned search picks
//! the winner and ranking of the unpruned one), mixed-fleet candidates appear exactly where the
//! runtime allows them, and `sweep --set` / `plan --spec` work like the rest of the CLI.

use supernode::capacity::planner::{self, Goal, Objective, Outcome, PlanRequest, candidates};
use supernode::catalog::catalog;
use supernode::estimate::faults::load_fault_availability;
use supernode::estimate::{BOUND_MARGIN, estimate, nominal_bounds};
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
            // The unpruned search, constrained afterwards: same winner, same Pareto front, same
            // ranking less the candidates the bounds skipped.
            let unpruned = planner::plan(&small(goal, budget, false), &profile).unwrap();
            assert_eq!(unpruned.pruned() + unpruned.dominated(), 0);
            assert_eq!(pruned.winner, unpruned.winner, "{goal:?} ${budget}");
            // (A dominating candidate is no dearer: the front within the budget is the full
            // front's affordable part.)
            let affordable: Vec<usize> =
                unpruned.pareto.iter().copied().filter(|&i| unpruned.candidates[i].hardware_usd <= budget).collect();
            assert_eq!(pruned.pareto, affordable, "{goal:?} ${budget}");
            let kept: Vec<usize> =
                unpruned.ranked.iter().copied().filter(|&i| !matches!(pruned.candidates[i].outcome, Outcome::Dominated { .. })).collect();
            assert_eq!(pruned.ranked, kept, "{goal:?} ${budget}");
            check_dominated(&pruned, &unpruned);
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

/// Every candidate the bounds skipped really is dominated: the unpruned search's figures for it
/// lie within its bounds, and its dominator beats them. Shared runs (the memo) change nothing:
/// a candidate predicted by both searches has the same estimate and availability.
fn check_dominated(pruned: &planner::Plan, unpruned: &planner::Plan) {
    for c in &pruned.candidates {
        let full = &unpruned.candidates[c.id];
        if let (Some(a), Some(b)) = (c.estimate(), full.estimate()) {
            assert_eq!(a, b, "{}", c.describe());
            assert_eq!(c.availability, full.availability);
        }
        if let Outcome::Dominated { by, bounds } = &c.outcome {
            let e = full.estimate().expect("a dominated candidate runs");
            assert!(e.decode_tokens_per_s <= bounds.tokens_per_s_max, "{}: {} > {bounds:?}", c.describe(), e.decode_tokens_per_s);
            assert!(e.cluster_power_w >= bounds.power_w_min, "{}: {} W < {bounds:?}", c.describe(), e.cluster_power_w);
            assert!(full.availability <= bounds.availability_max, "{}: {} > {bounds:?}", c.describe(), full.availability);
            let d = pruned.candidates[*by].estimate().unwrap();
            assert!(d.decode_tokens_per_s >= e.decode_tokens_per_s && d.cost_usd <= e.cost_usd && d.cluster_power_w <= e.cluster_power_w);
            assert!(pruned.verdict(c.id).starts_with("dominated (pruned, not simulated): #"), "{}", pruned.verdict(c.id));
        }
    }
}

/// The bounds hold for every candidate that runs, not only the skipped ones: the decode rate
/// never beats its bound, power never falls under it, availability never exceeds it.
#[test]
fn nominal_bounds_hold_for_every_candidate_that_runs() {
    let profile = Profile::default_profile();
    let mut req = small(Goal::TokensPerDayPerDollar, 1e9, false);
    req.fabrics = vec!["tb5-tcp".into(), "tb5-rdma".into(), "eth-2.5g".into()];
    req.context = 2048;
    let full = planner::plan(&req, &profile).unwrap();
    let mut checked = 0;
    for c in &full.candidates {
        let Some(e) = c.estimate() else { continue };
        let s = c.scenario.build().unwrap();
        let plan = s.plan(s.workload.prompt_tokens + s.workload.generate_tokens, &profile).unwrap();
        let b = nominal_bounds(&s, &plan, &profile);
        assert!(e.decode_tokens_per_s <= b.tokens_per_s_max, "{}: {} vs {b:?}", c.describe(), e.decode_tokens_per_s);
        // Tight, too: within the margin and then some.
        assert!(
            e.decode_tokens_per_s >= b.tokens_per_s_max / (1.0 + BOUND_MARGIN) * 0.8,
            "{}: {} vs {b:?}",
            c.describe(),
            e.decode_tokens_per_s
        );
        assert!(e.cluster_power_w >= b.power_w_min, "{}: {} W vs {b:?}", c.describe(), e.cluster_power_w);
        assert!(c.availability <= b.availability_max && c.availability > 0.0, "{}: {} vs {b:?}", c.describe(), c.availability);
        checked += 1;
    }
    assert!(checked > 100, "{checked}");
}

/// Issue 13 item 2: availability comes from the profile's load-dependent fault model. A cluster
/// over Thunderbolt TCP (nodes crash under load, FACTS.md / Geerling) is less available than its
/// RDMA twin at the same link load, so at equal raw speed it ranks below it on tokens per day;
/// the planner's table, JSON and report carry availability.
#[test]
fn thunderbolt_tcp_ranks_below_its_rdma_twin_on_tokens_per_day() {
    let profile = Profile::default_profile();
    let twin = |fabric: &str| {
        let mut b = ScenarioBuilder::new("twin");
        b.nodes(&["m3-ultra-80c-512gb".into(), "m3-ultra-80c-512gb".into()]).fabric(fabric).topology("full-mesh");
        b.model("llama-3.2-3b").engine("exo").parallelism("tensor").tokens(128, 128);
        let s = b.build().unwrap();
        let plan = s.plan(256, &profile).unwrap();
        (s, plan)
    };
    let (tcp, tcp_plan) = twin("tb5-tcp");
    let (rdma, rdma_plan) = twin("tb5-rdma");
    let e = estimate(&rdma, &profile).unwrap();
    // The same run (equal raw speed and link load) under each fabric's fault model.
    for u in [0.05, 0.3, 1.0] {
        let a_tcp = load_fault_availability(&tcp, &tcp_plan, u, 1, &profile.faults);
        let a_rdma = load_fault_availability(&rdma, &rdma_plan, u, 1, &profile.faults);
        assert!(a_tcp < a_rdma && a_rdma <= 1.0, "u {u}: {a_tcp} vs {a_rdma}");
        let (s_tcp, s_rdma) = (Goal::TokensPerDayPerDollar.score(&e, a_tcp), Goal::TokensPerDayPerDollar.score(&e, a_rdma));
        assert!(s_tcp < s_rdma);
        assert_eq!(Goal::TokensPerSecondPerDollar.score(&e, a_tcp), Goal::TokensPerSecondPerDollar.score(&e, a_rdma));
    }
    // At full load: two Macs crash once a minute each and are out 2 minutes plus the reload
    // (no cable counted: the load faults alone).
    let reload = tcp_plan.memory.iter().map(|m| m.weights_gb).fold(0.0, f64::max) / 3.0;
    let want = 1.0 / (1.0 + 2.0 / 60.0 * (supernode::estimate::faults::ASSUMED_REBOOT_S + reload));
    assert!((load_fault_availability(&tcp, &tcp_plan, 1.0, 0, &profile.faults) - want).abs() < 1e-12);
    // In the planner: every TCP candidate's availability is below its RDMA twin's.
    let mut req = small(Goal::TokensPerDayPerDollar, 1e9, true);
    req.nodes = vec!["m3-ultra-80c-512gb".into()];
    req.fabrics = vec!["tb5-tcp".into(), "tb5-rdma".into()];
    req.vary_options = false;
    req.mixed_fleets = false;
    let p = planner::plan(&req, &profile).unwrap();
    let find = |c: &planner::Candidate, fabric: &str| {
        p.candidates.iter().find(|d| {
            d.fabric.as_deref() == Some(fabric)
                && d.nodes == c.nodes
                && d.topology == c.topology
                && d.engine == c.engine
                && d.parallelism == c.parallelism
        })
    };
    let mut pairs = 0;
    for c in p.candidates.iter().filter(|c| c.fabric.as_deref() == Some("tb5-tcp") && c.estimate().is_some()) {
        let Some(r) = find(c, "tb5-rdma").filter(|r| r.estimate().is_some()) else { continue };
        assert!(c.availability < r.availability, "{}: {} vs {}", c.describe(), c.availability, r.availability);
        pairs += 1;
    }
    assert!(pairs > 0);
    let text = p.report(5, false);
    assert!(text.contains(" avail %") && text.contains("(availability "), "{text}");
    let json = p.to_report_json();
    assert!(json["points"].as_array().unwrap().iter().all(|x| x["availability"].as_f64().is_some_and(|a| a > 0.0 && a <= 1.0)));
    assert!(json["points"].as_array().unwrap().iter().any(|x| x["availability"].as_f64().unwrap() < 1.0));
}

/// The closed form the planner uses is the long-run fraction the fault simulation converges
/// to: HPL over Thunderbolt TCP (full load, nothing to reload) on two Macs, 30 days.
#[test]
fn closed_form_availability_matches_the_fault_simulation() {
    let profile = Profile::default_profile();
    let text = std::fs::read_to_string(crate::scenario("geerling-2x-m3-ultra-hpl-tb5-tcp-faults.toml")).unwrap();
    let text = text.replace("horizon_days = 1", "horizon_days = 30");
    let s = supernode::scenario::parse(supernode::scenario::Source { path: "t.toml".into(), dir: ".".into(), text }).unwrap();
    let plan = s.plan(s.workload.prompt_tokens + s.workload.generate_tokens, &profile).unwrap();
    let f = estimate(&s, &profile).unwrap().faults.unwrap();
    // The simulated scenario loses no cable: the load faults alone.
    let want = load_fault_availability(&s, &plan, 1.0, 0, &profile.faults);
    let cycles = f.events["tcp-load-crash"] as f64;
    let sd = want * (1.0 - want) / cycles.sqrt();
    assert!(cycles > 1000.0 && (f.availability - want).abs() < 4.0 * sd, "{} vs {want} (sd {sd}, {cycles} crashes)", f.availability);
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
            "exo" | "mlx-lm" => assert!(all_macs, "{} across non-Macs: {}", c.engine, c.describe()),
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

/// Issue 13 item 4: a sweep whose scenario has `[faults]` gets availability and tokens/day
/// columns in `results.csv`; one without keeps the columns it had.
#[test]
fn sweep_csv_has_fault_columns_when_the_scenario_has_faults() {
    let dir = tempfile::tempdir().unwrap();
    let base = "name = \"f\"\n[cluster]\nnode = \"m3-ultra-80c-512gb\"\ncount = 1\n[model]\nname = \"llama-3.2-3b\"\n\
                [workload]\nprompt_tokens = 8\ngenerate_tokens = 4\n[sweep]\n\"workload.prompt_tokens\" = [8, 16]\n";
    let faults = format!("{base}[faults]\nhorizon_days = 2\n[faults.node]\nmtbf_hours = 5\nreboot_minutes = 30\n");
    for (name, text, want) in [("plain", base.to_string(), false), ("faults", faults, true)] {
        let file = write_text(dir.path(), &format!("{name}.toml"), &text);
        let out = dir.path().join(name);
        bin().arg("sweep").arg(&file).arg("--out").arg(&out).arg("--no-charts").assert().success();
        let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        assert_eq!(header.contains(&"availability") && header.contains(&"expected_tokens_per_day"), want, "{name}: {header:?}");
        if want {
            let a = header.iter().position(|h| *h == "availability").unwrap();
            let t = header.iter().position(|h| *h == "expected_tokens_per_day").unwrap();
            for line in lines {
                let row: Vec<&str> = line.split(',').collect();
                let avail: f64 = row[a].parse().unwrap();
                assert!(avail > 0.5 && avail < 1.0, "{line}");
                assert!(row[t].parse::<f64>().unwrap() > 0.0, "{line}");
            }
        }
    }
}

/// Exit code 2 with `text` on stderr.
fn fails_with(cmd: &mut assert_cmd::Command, text: &str) {
    let o = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(text), "{err}");
}
