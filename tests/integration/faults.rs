//! Faults over long horizons (`[faults]`): neutrality of an empty table, availability against
//! renewal theory, what each runtime does with a lost path (re-place, stop, fail, LAN), degraded
//! time, the planner's availability with cable loss, determinism, the shipped fault scenarios.

use std::path::PathBuf;

use supernode::engine::lower_step;
use supernode::estimate::{Estimate, FaultReport, estimate};
use supernode::profile::Profile;
use supernode::scenario::{Source, parse};

use crate::{bin, root, scenario, write_text};

fn run(text: &str) -> Estimate {
    let s = parse(Source { path: "t.toml".into(), dir: PathBuf::new(), text: text.into() }).unwrap();
    estimate(&s, &Profile::default_profile()).unwrap()
}

fn faults(text: &str) -> FaultReport {
    run(text).faults.expect("a [faults] table that enables something reports availability")
}

fn stdout(args: &[&std::ffi::OsStr]) -> String {
    let o = bin().current_dir(root()).args(args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

const ONE_NODE: &str = "name = \"one node\"\nseed = 7\n[cluster]\nnode = \"m3-ultra-80c-512gb\"\n[model]\nname = \"llama-3.2-3b\"\n";
const MESH4: &str = "name = \"mesh\"\nseed = 3\n[cluster]\nnode = \"m3-ultra-80c-512gb\"\ncount = 4\nfabric = \"tb5-rdma\"\ntopology = \"full-mesh\"\n[model]\nname = \"llama-3.2-3b\"\n[engine]\nname = \"exo\"\nparallelism = \"tensor\"\n";

/// An empty `[faults]` (or one that enables nothing) changes no byte of `run`'s output.
#[test]
fn an_empty_faults_table_equals_the_fault_free_run_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::read_to_string(scenario("geerling-2x-m3-ultra-deepseek-v3.1-exo-rdma.toml")).unwrap();
    let plain = write_text(dir.path(), "plain.toml", &base);
    let empty = write_text(dir.path(), "empty.toml", &format!("{base}\n[faults]\n"));
    let idle = write_text(dir.path(), "idle.toml", &format!("{base}\n[faults]\nhorizon_days = 90\nretry = false\n"));
    for json in [true, false] {
        let args = |p: &PathBuf| {
            let mut a: Vec<std::ffi::OsString> = vec!["run".into(), p.into(), "--no-write".into()];
            if json {
                a.push("--json".into());
            }
            stdout(&a.iter().map(|x| x.as_os_str()).collect::<Vec<_>>())
        };
        let want = args(&plain);
        assert!(!want.contains("availability"));
        assert_eq!(args(&empty), want);
        assert_eq!(args(&idle), want);
    }
}

/// One node that crashes every 10 h on average (exponential) and is out for a fixed 30 min
/// reboot plus its reload: over ten years (~8,300 cycles) the share of time up is
/// MTBF / (MTBF + MTTR) within sampling error (sd = A(1-A)/sqrt(cycles) ~ 0.0005).
#[test]
fn availability_of_a_long_run_matches_mtbf_over_mtbf_plus_mttr() {
    let e =
        run(&format!("{ONE_NODE}[faults]\nhorizon_days = 3650\n[faults.node]\nmtbf_hours = 10\nreboot_minutes = 30\ndisk_read_gbs = 2\n"));
    let f = e.faults.unwrap();
    let mtbf = 10.0 * 3600.0;
    let reload = e.memory[0].weights_gb / 2.0;
    let mttr = 30.0 * 60.0 + reload;
    let want = mtbf / (mtbf + mttr);
    let cycles = f.events["node-crash"] as f64;
    assert!((cycles - 3650.0 * 86400.0 / (mtbf + mttr)).abs() < 4.0 * cycles.sqrt(), "{cycles} crashes");
    let sd = want * (1.0 - want) / cycles.sqrt();
    assert!((f.availability - want).abs() < 4.0 * sd, "availability {} vs {want} (sd {sd})", f.availability);
    // Every crash interrupts the request in flight (retried by default); lost time adds up.
    assert_eq!(f.requests_retried, f.events["node-crash"]);
    let down = f.time_lost_s["node-crash"];
    assert!((down / (3650.0 * 86400.0) - (1.0 - f.availability)).abs() < 1e-6);
    let per_day = f.expected_tokens_per_day.unwrap();
    let free = f.fault_free_tokens_per_day.unwrap();
    assert!(per_day < free * f.availability * 1.0001 && per_day > free * f.availability * 0.99, "{per_day} vs {free}");
}

fn transfers_per_link(plan: &supernode::engine::Plan) -> std::collections::BTreeMap<String, usize> {
    let low = lower_step(plan, 1);
    let mut out = std::collections::BTreeMap::new();
    for t in low.graph.tasks().iter().filter(|t| t.bytes() > 0) {
        *out.entry(low.graph.resource(t.resource()).name().to_string()).or_insert(0) += 1;
    }
    out
}

/// The what-if detour (no backend forwards through a peer, so the fault simulation never
/// plans one; see `engine::network`): a 4-node mesh with cable 0-1 lost: 0->1 goes 0->2->1 and 1->0 goes 1->2->0 (the lowest
/// peer with both cables), so in a fully connected all-reduce links 0->2, 2->1, 1->2 and 2->0
/// carry twice their messages, the others as before, and 0->1 / 1->0 no longer exist.
#[test]
fn a_lost_cable_on_a_four_node_mesh_detours_through_the_lowest_peer() {
    let s = parse(Source { path: "t.toml".into(), dir: PathBuf::new(), text: MESH4.into() }).unwrap();
    let profile = Profile::default_profile();
    let mut plan = s.plan(256, &profile).unwrap();
    let before = transfers_per_link(&plan);
    plan.lost_links = vec![(1, 0)];
    let after = transfers_per_link(&plan);
    assert!(!after.contains_key("link 0->1") && !after.contains_key("link 1->0"), "{after:?}");
    for (link, k) in &before {
        let want = match link.as_str() {
            "link 0->1" | "link 1->0" => 0,
            "link 0->2" | "link 2->1" | "link 1->2" | "link 2->0" => 2 * k,
            _ => *k,
        };
        assert_eq!(after.get(link).copied().unwrap_or(0), want, "{link}: {before:?} -> {after:?}");
    }
}

const RING8: &str = "name = \"ring\"\nseed = 5\n[cluster]\nnode = \"m3-ultra-80c-512gb\"\ncount = 8\nfabric = \"tb5-rdma\"\ntopology = \"ring\"\n[model]\nname = \"llama-3.2-3b\"\n[engine]\nname = \"exo\"\nparallelism = \"tensor\"\n";

/// Cables lost every ~100 h per cable, back after 10 h, over 30 days.
const CUTS: &str = "[faults]\nhorizon_days = 30\n[faults.link]\nmtbf_hours = 100\nrepair_minutes = 600\n";

/// Issue 23 item 4: cuts of an 8-node JACCL ring under exo tensor parallel. JACCL cannot
/// forward through a peer, so a cut is a lost path: exo re-places the instance on the largest
/// set of nodes still cabled pair by pair (two neighbours) and never runs tensor parallel over
/// Wi-Fi (0.23 tok/s in the issue). A 3B model fits on two nodes, and two Macs decode it faster
/// than eight (the 8-way all-reduce costs more than it saves), so nothing is lost to speed.
#[test]
fn a_lost_path_is_not_wifi_tensor_parallel_exo_re_places_the_instance() {
    let f = faults(&format!("{RING8}{CUTS}"));
    assert!(f.events["link-loss"] > 10 && f.events["re-placed"] > 0, "{:?}", f.events);
    assert!(!f.events.contains_key("lan-fallback") && !f.time_lost_s.contains_key("fallback"), "{f:?}");
    assert!(!f.degraded_s.contains_key("fallback"), "{:?}", f.degraded_s);
    let replaced = f.log.iter().find(|l| l.effect.contains("re-placed on node(s)")).expect("a re-placement in the log");
    assert!(replaced.event.contains("lost"), "{replaced:?}");
    // Every re-placement and every move back is a restart that retries the request in flight.
    assert_eq!(f.events["re-placed"] + f.events.get("placed-whole").copied().unwrap_or(0), f.requests_retried, "{:?}", f.events);
    assert!(f.availability > 0.999, "{}", f.availability);
    let (got, free) = (f.expected_tokens_per_day.unwrap(), f.fault_free_tokens_per_day.unwrap());
    assert!(got > 0.99 * free * f.availability, "{got} vs {free}: a lost path ran at a crawl");
}

/// The same cuts when no set of neighbours holds the model (Kimi K2 Thinking, ~600 GB, on
/// 256 GB nodes): exo stops the instance until a repair gives it back its ring. The stopped
/// time is down time (no tokens, not available), never a Wi-Fi crawl.
#[test]
fn a_lost_path_stops_exo_when_no_fully_cabled_set_holds_the_model() {
    let text = RING8.replace("m3-ultra-80c-512gb", "m3-ultra-80c-256gb").replace("llama-3.2-3b", "kimi-k2-thinking");
    let f = faults(&format!("{text}{CUTS}"));
    assert!(f.events["stopped"] > 0 && !f.events.contains_key("re-placed"), "{:?}", f.events);
    assert!(f.log.iter().any(|l| l.effect.contains("stopped until a repair")), "{:?}", f.log);
    let stopped = f.time_lost_s["stopped"];
    // A cut lasts 10 h; each stop lasts until the cluster has its ring back.
    assert!(stopped >= f.events["stopped"] as f64 * 36_000.0 * 0.5, "{stopped} s for {:?}", f.events);
    let h = 30.0 * 86400.0;
    assert!(f.availability <= 1.0 - stopped / h + 1e-6, "{} vs {stopped} s stopped", f.availability);
    let (got, free) = (f.expected_tokens_per_day.unwrap(), f.fault_free_tokens_per_day.unwrap());
    assert!(got <= free * f.availability * 1.0001, "{got} vs {free}");
    assert!(f.degraded_s.is_empty(), "stopped is down, not degraded: {:?}", f.degraded_s);
}

/// llama.cpp RPC cannot serve while a stage is unreachable: requests fail until the repair.
/// An exo pipeline is placed again over the LAN (exo issue 2295: a 4-node pipeline fell back to
/// Wi-Fi): served, but under half the cables' rate, so degraded time and not available.
#[test]
fn rpc_fails_until_repair_and_an_exo_pipeline_crawls_over_wifi_as_degraded_time() {
    let mesh4_tcp = MESH4.replace("tb5-rdma", "tb5-tcp");
    let rpc = mesh4_tcp.replace("name = \"exo\"\nparallelism = \"tensor\"", "name = \"llama-cpp-rpc\"\nparallelism = \"pipeline\"");
    let f = faults(&format!("{rpc}{CUTS}"));
    assert!(f.events["lost-path"] > 0 && f.time_lost_s["lost-path"] > 0.0, "{f:?}");
    assert!(f.availability < 1.0 - f.time_lost_s["lost-path"] / (30.0 * 86400.0) + 1e-6);
    assert!(f.log.iter().any(|l| l.effect.contains("requests fail until the cable is repaired")), "{:?}", f.log);
    let pipe = MESH4.replace("parallelism = \"tensor\"", "parallelism = \"pipeline\"");
    let f = faults(&format!("{pipe}{CUTS}"));
    assert!(f.events["lan-fallback"] > 0, "{:?}", f.events);
    assert!(f.log.iter().any(|l| l.effect.contains("now over wifi")), "{:?}", f.log);
    let crawl = f.degraded_s["fallback"];
    assert!(crawl > 0.0 && f.availability <= 1.0 - crawl / (30.0 * 86400.0) + 1e-6, "{crawl} s, availability {}", f.availability);
}

/// A cable the runtime's step does not cross changes nothing: the TCP ring all-reduce of a
/// 4-node mesh uses 0-1, 1-2, 2-3 and 0-3, never the chords 0-2 and 1-3.
#[test]
fn a_lost_cable_the_step_does_not_cross_changes_nothing() {
    let tcp = MESH4.replace("tb5-rdma", "tb5-tcp");
    let s = parse(Source { path: "t.toml".into(), dir: PathBuf::new(), text: tcp.clone() }).unwrap();
    let plan = s.plan(256, &Profile::default_profile()).unwrap();
    assert_eq!(lower_step(&plan, 1).cables_crossed, [(0, 1), (0, 3), (1, 2), (2, 3)]);
    let s = parse(Source { path: "t.toml".into(), dir: PathBuf::new(), text: MESH4.into() }).unwrap();
    let plan = s.plan(256, &Profile::default_profile()).unwrap();
    assert_eq!(lower_step(&plan, 1).cables_crossed.len(), 6, "JACCL's fully connected all-reduce uses every cable");
    let f = faults(&format!("{tcp}{CUTS}"));
    assert!(f.log.iter().any(|l| l.effect.contains("does not use it")), "{:?}", f.log);
}

/// Issue 23 item 4: the planner's availability counts cable loss. With no load faults (link
/// utilisation 0) it is (1 - q)^cables needed, q = repair / (MTBF + repair) from the profile:
/// an 8-node ring's all-reduce needs its 8 cables, a 4-node JACCL mesh its 6, so the fragile
/// ring scores below the mesh; one node needs none.
#[test]
fn planner_availability_counts_cable_loss_a_ring_of_eight_below_a_mesh_of_four() {
    use supernode::estimate::faults::load_fault_availability;
    use supernode::estimate::{RunMemo, estimate_memo};
    let profile = Profile::default_profile();
    let p = &profile.faults;
    let q = p.cable_repair_hours / (p.cable_mtbf_hours + p.cable_repair_hours);
    let at_rest = |text: &str, cables: usize| {
        let s = parse(Source { path: "t.toml".into(), dir: PathBuf::new(), text: text.into() }).unwrap();
        let plan = s.plan(256, &profile).unwrap();
        assert_eq!(lower_step(&plan, 1).cables_crossed.len(), cables);
        let a = load_fault_availability(&s, &plan, 0.0, cables, p);
        let (_, candidate) = estimate_memo(&s, &profile, &RunMemo::default()).unwrap();
        assert!(candidate <= a, "load faults only lower it: {candidate} vs {a}");
        (a, candidate)
    };
    let (ring, ring_candidate) = at_rest(RING8, 8);
    let (mesh, mesh_candidate) = at_rest(MESH4, 6);
    assert!((ring - (1.0 - q).powi(8)).abs() < 1e-12 && (mesh - (1.0 - q).powi(6)).abs() < 1e-12);
    assert!(ring < mesh && ring_candidate < mesh_candidate, "ring {ring_candidate} vs mesh {mesh_candidate}");
    let (one, _) = at_rest(ONE_NODE, 0);
    assert_eq!(one, 1.0);
}

/// Two nodes under exo tensor parallel with their only cable lost: exo re-places the instance
/// on one node (the 3B model fits), not on Wi-Fi.
#[test]
fn a_two_node_cluster_without_its_cable_runs_on_one_node() {
    let text = MESH4.replace("count = 4", "count = 2");
    let f = faults(&format!("{text}[faults]\nhorizon_days = 10\n[faults.link]\nmtbf_hours = 24\nrepair_minutes = 240\n"));
    assert!(f.log.iter().any(|l| l.effect.contains("re-placed on node(s) 0")), "{:?}", f.log);
    assert!(!f.time_lost_s.contains_key("fallback"), "{:?}", f.time_lost_s);
}

/// A straggler and thermal throttling slow the cluster; their lost throughput is counted.
#[test]
fn stragglers_and_heat_cost_tokens() {
    let free = faults(&format!("{MESH4}[faults]\nhorizon_days = 1\n[faults.straggler]\nnode = 2\nslowdown = 1.0\n"));
    let slow = faults(&format!("{MESH4}[faults]\nhorizon_days = 1\n[faults.straggler]\nnode = 2\nslowdown = 2.0\n"));
    let hot = faults(&format!("{MESH4}[faults]\nhorizon_days = 1\n[faults.thermal]\nafter_minutes = 60\nslowdown = 1.5\n"));
    let per_day = |f: &FaultReport| f.expected_tokens_per_day.unwrap();
    assert_eq!(free.availability, 1.0);
    assert!(per_day(&slow) < per_day(&free) && per_day(&hot) < per_day(&free));
    assert!(slow.time_lost_s["straggler"] > 0.0 && hot.time_lost_s["thermal"] > 0.0);
    // Degraded time is wall time at a reduced rate: the straggler's whole day, the heat's 23
    // hours; both still serve over half the fault-free rate, so they count as available.
    assert!(free.degraded_s.is_empty(), "{:?}", free.degraded_s);
    assert!((slow.degraded_s["straggler"] - 86400.0).abs() < 1e-6, "{:?}", slow.degraded_s);
    assert!((hot.degraded_s["thermal"] - 23.0 * 3600.0).abs() < 1.0, "{:?}", hot.degraded_s);
    assert_eq!((slow.availability, hot.availability), (1.0, 1.0));
    // Throttled after the first hour: 23 of 24 hours lose part of the rate, at most the third
    // a 1.5x slower kernel would (this small model's step is mostly syncs and collectives).
    let lost = hot.time_lost_s["thermal"] / 3600.0;
    assert!(lost > 0.0 && lost < 23.0 / 3.0, "{lost} h");
}

/// The same seed gives the same bytes; another seed other fault times.
#[test]
fn fault_runs_are_deterministic() {
    for name in ["geerling-2x-m3-ultra-hpl-tb5-tcp-faults.toml", "geerling-4x-m3-ultra-deepseek-v3.1-exo-rdma-node-lost.toml"] {
        let p = scenario(name);
        let args = [std::ffi::OsStr::new("run"), p.as_os_str(), "--json".as_ref(), "--no-write".as_ref()];
        let a = stdout(&args);
        assert!(a.contains("\"availability\""), "{name}");
        assert_eq!(a, stdout(&args), "{name}");
    }
    let text = format!("{ONE_NODE}[faults]\nhorizon_days = 30\n[faults.node]\nmtbf_hours = 24\nreboot_minutes = 5\n");
    assert_eq!(faults(&text), faults(&text));
    assert_ne!(faults(&text).log, faults(&text.replace("seed = 7", "seed = 8")).log);
}

/// The shipped stories: HPL over Thunderbolt TCP never finishes a run (the Macs crash about
/// every minute); a node lost mid-run stops exo for its reboot plus a reload of every shard.
#[test]
fn the_shipped_fault_scenarios_tell_their_story() {
    let text = std::fs::read_to_string(scenario("geerling-2x-m3-ultra-hpl-tb5-tcp-faults.toml")).unwrap();
    let f = faults(&text);
    assert_eq!(f.requests_completed, 0);
    assert_eq!(f.hpl_goodput_gflops, Some(0.0));
    let crashes = f.events["tcp-load-crash"] as f64;
    // Two nodes at full load, 60 s mean each, 2 min reboots: ~1 crash per 150 s.
    assert!((crashes - 86400.0 / 150.0).abs() < 4.0 * crashes.sqrt(), "{crashes}");
    let text = std::fs::read_to_string(scenario("geerling-4x-m3-ultra-deepseek-v3.1-exo-rdma-node-lost.toml")).unwrap();
    let e = run(&text);
    let f = e.faults.unwrap();
    assert_eq!(f.events["node-crash"], 1);
    assert_eq!(f.log[0].t_s, 43200.0);
    assert!(f.log[0].effect.starts_with("exo stops the instance and reloads every node"), "{}", f.log[0].effect);
    let reload = e.memory.iter().map(|m| m.weights_gb).fold(0.0, f64::max) / 3.0;
    assert!((f.time_lost_s["node-crash"] - (120.0 + reload)).abs() < 0.01, "{:?}", f.time_lost_s);
}

/// Errors in `[faults]` point at the key and say what to add.
#[test]
fn fault_errors_point_at_the_key() {
    let err = |extra: &str| parse(Source { path: "t.toml".into(), dir: PathBuf::new(), text: format!("{MESH4}{extra}") }).unwrap_err();
    let e = err("[faults]\n[faults.node]\nmtbf_hours = 10\n");
    assert!(e.message.contains("reboot_minutes") && e.line >= 13, "{e}");
    let e = err("[faults]\nhorizon = 3\n");
    assert!(e.message.contains("unknown field") && e.line >= 13, "{e}");
    let e = err("[faults.straggler]\nnode = 4\nslowdown = 2\n");
    assert!(e.message.contains("not a node") && e.line >= 13, "{e}");
    let e = err("[faults.node]\ntcp_load_crash = true\nreboot_minutes = 1\n");
    assert!(e.message.contains("not") && e.line >= 13, "{e}");
    let e = err("[faults.link]\nfallback = \"wfi\"\n");
    assert!(e.help.unwrap_or_default().contains("wifi"), "{}", e.message);
}

/// Issue 13 item 3: exo model loads that fail until the cluster is rebooted. Every reload (here
/// after each node crash) fails with probability p, again and again, each failure costing a
/// cluster reboot and another load: over 30 days the failures per reload average p / (1 - p)
/// within sampling error, their time is booked as `load-failure`, and availability drops.
#[test]
fn exo_load_failures_cost_a_reboot_each_until_a_load_succeeds() {
    let base = format!("{MESH4}[faults]\nhorizon_days = 30\n[faults.node]\nmtbf_hours = 4\nreboot_minutes = 2\n");
    let plain = run(&base);
    let e = run(&format!("{base}[faults.runtime]\nload_failure_probability = 0.5\n"));
    let (f, g) = (e.faults.as_ref().unwrap(), plain.faults.unwrap());
    let reloads = f.events["node-crash"] as f64;
    let fails = f.events["load-failure"] as f64;
    // Failures per reload: geometric, mean p/(1-p) = 1, variance p/(1-p)^2 = 2.
    assert!(reloads > 500.0 && (fails - reloads).abs() < 4.0 * (2.0 * reloads).sqrt(), "{fails} failures over {reloads} reloads");
    let reload = e.memory.iter().map(|m| m.weights_gb).fold(0.0, f64::max) / 3.0;
    let lost = f.time_lost_s["load-failure"];
    assert!((lost - fails * (120.0 + reload)).abs() < 120.0 + reload + 0.01, "{lost} s for {fails} failures");
    assert!(f.availability < g.availability, "{} vs {}", f.availability, g.availability);
    // Same seed, same failures.
    let again = run(&format!("{base}[faults.runtime]\nload_failure_probability = 0.5\n"));
    assert_eq!(again.faults.unwrap().events, f.events);
}

/// Issue 13 item 3: tensor parallel output corrupt past a prompt length on JACCL (exo issue
/// 2270, "above ~4k prompt tokens"): past the threshold every request fails and no token
/// counts; under it the option changes nothing.
#[test]
fn tensor_parallel_prompts_past_the_threshold_fail_as_corrupt() {
    let w = |prompt: u64| {
        format!(
            "{MESH4}[workload]\nprompt_tokens = {prompt}\ngenerate_tokens = 32\n[faults]\nhorizon_days = 1\n[faults.runtime]\ntp_corrupt_above_prompt_tokens = 4096\n"
        )
    };
    let f = faults(&w(8192));
    assert_eq!(f.requests_completed, 0);
    assert!(f.requests_failed > 0 && f.events["tp-corruption"] == f.requests_failed);
    assert_eq!(f.expected_tokens_per_day, Some(0.0));
    assert_eq!(f.availability, 1.0);
    assert!((f.time_lost_s["tp-corruption"] - 86400.0).abs() < 1e-6);
    assert!(f.log.iter().any(|l| l.event == "corrupt output"));
    let ok = faults(&w(2048));
    assert!(ok.requests_completed > 0 && ok.requests_failed == 0);
    let (got, free) = (ok.expected_tokens_per_day.unwrap(), ok.fault_free_tokens_per_day.unwrap());
    assert!(got > 0.999 * free && got <= free * 1.0001, "{got} vs {free}");
}

/// The runtime faults are refused where the sources do not put them, at the key.
#[test]
fn runtime_fault_errors_point_at_the_key() {
    let err = |text: String| parse(Source { path: "t.toml".into(), dir: PathBuf::new(), text }).unwrap_err();
    let e = err(format!("{MESH4}[faults.runtime]\nload_failure_probability = 0.2\n"));
    assert!(e.message.contains("reboot") && e.line >= 13, "{e}");
    let rpc = MESH4.replace("name = \"exo\"\nparallelism = \"tensor\"", "name = \"llama-cpp-rpc\"\nparallelism = \"pipeline\"");
    let e = err(format!("{rpc}[faults.node]\nreboot_minutes = 2\n[faults.runtime]\nload_failure_probability = 0.2\n"));
    assert!(e.message.contains("exo") && e.line >= 13, "{e}");
    let e = err(format!("{rpc}[faults.runtime]\ntp_corrupt_above_prompt_tokens = 4096\n"));
    assert!(e.message.contains("JACCL") && e.line >= 13, "{e}");
    let e = err(format!("{MESH4}[faults.node]\nreboot_minutes = 2\n[faults.runtime]\nload_failure_probability = 1.0\n"));
    assert!(e.message.contains("out of range"), "{e}");
}
