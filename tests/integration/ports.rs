//! Issue 20: a link never runs faster than the ports at its ends. An Ethernet fabric's rate is
//! its switch's; a node whose port is slower (the Framework Desktop's 5 GbE on a 10 GbE switch)
//! links at its own rate, and every link it is an end of runs at that rate
//! (`hw::FabricSpec::link_gbs`). Hand-checked transfer times, an invariant over the catalog's
//! nodes x Ethernet fabrics (at the link and end to end), and the sentence `run` prints.

use supernode::catalog::catalog;
use supernode::engine::Plan;
use supernode::estimate::microbench::all_sum_seconds;
use supernode::estimate::{Estimate, estimate};
use supernode::hw::{FabricSpec, NodeSpec, PortKind};
use supernode::profile::Profile;
use supernode::scenario::{Scenario, ScenarioBuilder};

use crate::{bin, scenario};

fn profile() -> Profile {
    let mut p = Profile::default_profile();
    p.misc.jitter_cv = 0.0;
    p
}

/// Two `node`s on `fabric` through a switch, llama.cpp RPC pipeline on a small model.
fn pair(node: &str, fabric: &str) -> Scenario {
    let mut b = ScenarioBuilder::new(format!("2x {node} over {fabric}"));
    b.nodes(&[node.to_string(), node.to_string()]).fabric(fabric).topology("switch");
    b.model("llama-3.2-3b").quant("q4_k_m").engine("llama-cpp-rpc").parallelism("pipeline").tokens(512, 8).seed(1);
    b.build().unwrap_or_else(|e| panic!("2x {node} over {fabric}: {e}"))
}

fn plan(s: &Scenario, p: &Profile) -> Plan {
    s.plan(520, p).expect("plan")
}

/// The Ethernet fabrics of the catalog, slowest line rate first.
fn ethernet_fabrics() -> Vec<&'static FabricSpec> {
    let mut f: Vec<_> = catalog().fabrics.iter().filter(|f| f.port == PortKind::Ethernet).collect();
    f.sort_by(|a, b| a.link_gbps.total_cmp(&b.link_gbps));
    assert!(f.len() >= 6, "eth-2.5g .. eth-100g");
    for x in &f {
        assert!(x.bandwidth_gbs * 8.0 <= x.link_gbps, "{}: TCP payload {} GB/s beats its {} Gb/s line", x.id, x.bandwidth_gbs, x.link_gbps);
    }
    f
}

/// The nodes with an Ethernet port.
fn wired_nodes() -> Vec<&'static NodeSpec> {
    catalog().nodes.iter().filter(|n| n.ethernet_gbps > 0.0).collect()
}

#[test]
fn a_5gbe_framework_pair_on_a_10gbe_switch_moves_a_payload_in_the_5_gbps_time() {
    let p = profile();
    let fw = pair("framework-desktop-ai-max-395", "eth-10g");
    assert_eq!(fw.nodes[0].ethernet_gbps, 5.0, "Realtek RTL8126 5 GbE (FACTS-2026 A3)");
    let plan = plan(&fw, &p);
    // eth-10g achieves 1.17 GB/s on a 10 Gb/s line; a 5 Gb/s port links at half: 0.585 GB/s.
    // 58.5 MB / 0.585 B/ns = 100,000,000 ns, plus one alpha: 50 us latency + one TCP message.
    let alpha = ((50.0 + p.comm.tcp_message_us) * 1e3).round() as u64;
    assert_eq!(plan.link_cost(0, 1).hop_ns(58_500_000), 100_000_000 + alpha);
    assert_eq!(plan.net_cost().hop_ns(58_500_000), 100_000_000 + alpha, "the slowest link is that link");
    // The same boxes with a 10 GbE port: 58.5 MB / 1.17 B/ns = 50,000,000 ns.
    let mut fast = plan.clone();
    fast.nodes.iter_mut().for_each(|n| n.ethernet_gbps = 10.0);
    assert_eq!(fast.link_cost(0, 1).hop_ns(58_500_000), 50_000_000 + alpha);
    // Through the event core: a 2-rank ring all-reduce of 117 MB sends two 58.5 MB chunks one
    // after the other (reduce-scatter, then all-gather), each 50 ms slower at 5 Gb/s: 0.1 s.
    let slow_s = all_sum_seconds(&plan, 117_000_000);
    let fast_s = all_sum_seconds(&fast, 117_000_000);
    assert!((slow_s - fast_s - 0.1).abs() < 1e-6, "{slow_s} - {fast_s}");
    // A mixed pair links at the slower end, both ways.
    let mut mixed = plan.clone();
    mixed.nodes[1].ethernet_gbps = 10.0;
    assert_eq!(mixed.link_cost(1, 0).hop_ns(58_500_000), 100_000_000 + alpha);
}

/// At the link: on a faster switch a node's link is never faster than its port (payload under
/// the port's line rate) and never slower than on the slower switch. Both fabrics carry TCP at
/// the same line rate then; the only difference is the share each fabric's figure leaves to TCP
/// (eth-5g's iperf 4.71 of 5 Gb/s vs eth-10g's inferred ~6%), so the comparison is per unit of
/// that share: a 5 GbE box on eth-10g moves 0.585 GB/s, on eth-5g 0.589 GB/s (0.7% apart).
#[test]
fn a_faster_switch_never_makes_a_link_faster_than_its_port_nor_slower_than_the_slower_switch() {
    let (mut checked, mut bad) = (0, Vec::new());
    let fabrics = ethernet_fabrics();
    for node in wired_nodes() {
        for (i, slow) in fabrics.iter().enumerate() {
            let line = |f: &FabricSpec| f.slower_port_gbps(node).unwrap_or(f.link_gbps);
            let share = |f: &FabricSpec| f.bandwidth_gbs * 8.0 / f.link_gbps;
            let (l_slow, g_slow) = (line(slow), slow.link_gbs(node, node));
            if g_slow * 8.0 > node.ethernet_gbps * (1.0 + 1e-12) {
                bad.push(format!("{} on {}: {g_slow} GB/s beats its {} GbE port", node.id, slow.id, node.ethernet_gbps));
            }
            for fast in &fabrics[i + 1..] {
                checked += 1;
                let (l_fast, g_fast) = (line(fast), fast.link_gbs(node, node));
                if l_fast < l_slow || l_fast > node.ethernet_gbps {
                    bad.push(format!("{} links at {l_fast} Gb/s on {} and {l_slow} on {}", node.id, fast.id, slow.id));
                }
                if g_fast / share(fast) < g_slow / share(slow) * (1.0 - 1e-12) {
                    bad.push(format!("{} slower on {} ({g_fast} GB/s) than on {} ({g_slow})", node.id, fast.id, slow.id));
                }
            }
        }
    }
    assert!(checked > 100, "{checked}");
    assert!(bad.is_empty(), "{} of {checked}:\n{}", bad.len(), bad.join("\n"));
}

/// End to end: a 2-node pipeline on an Ethernet fabric is never faster than the same boxes with
/// a port that keeps up with the switch, and where the port caps the link, equal to them when
/// the switch is no faster than the port.
#[test]
fn a_run_is_never_faster_than_its_ports_allow() {
    let p = profile();
    let rate = |s: &Scenario| -> (f64, f64) {
        let e: Estimate = estimate(s, &p).expect("runs");
        (e.decode_tokens_per_s, e.prefill_tokens_per_s)
    };
    let (mut checked, mut bad) = (0, Vec::new());
    for node in wired_nodes() {
        for f in ethernet_fabrics() {
            let s = pair(&node.id, &f.id);
            let mut twin = s.clone();
            twin.nodes.iter_mut().for_each(|n| n.ethernet_gbps = n.ethernet_gbps.max(f.link_gbps));
            let (capped, free) = (rate(&s), rate(&twin));
            checked += 1;
            let capped_link = f.slower_port_gbps(node).is_some();
            if capped.0 > free.0 * 1.0000001 || capped.1 > free.1 * 1.0000001 || (!capped_link && capped != free) {
                bad.push(format!("{} on {}: {capped:?} vs a port that keeps up {free:?}", node.id, f.id));
            }
            if capped_link && capped.1 >= free.1 {
                bad.push(format!("{} on {}: prefill not slowed by its {} GbE port ({capped:?})", node.id, f.id, node.ethernet_gbps));
            }
        }
    }
    assert!(checked > 50, "{checked}");
    assert!(bad.is_empty(), "{} of {checked}:\n{}", bad.len(), bad.join("\n"));
}

#[test]
fn run_names_the_slower_port_and_a_laptop_without_one_is_refused() {
    let f = scenario("framework-4x-llama-3.1-405b-llama-rpc.toml");
    let out = bin().arg("run").arg(&f).args(["--set", "cluster.fabric=eth-10g", "--no-write"]).assert().success().get_output().clone();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("framework-desktop-ai-max-395 has a 5 GbE port: its links on eth-10g (10 GbE) run at 5 Gb/s (0.585 of 1.170 GB/s)"),
        "{text}"
    );
    // On its own 5 GbE switch nothing is capped and nothing is said.
    let out = bin().arg("run").arg(&f).arg("--no-write").assert().success().get_output().clone();
    assert!(!String::from_utf8(out.stdout).unwrap().contains("GbE port"));
    // The JSON carries it in the envelope's reasons.
    let out = bin().arg("run").arg(&f).args(["--set", "cluster.fabric=eth-10g", "--json", "--no-write"]).assert().success();
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let reasons = v["calibration"]["reasons"].as_array().unwrap();
    assert!(reasons.iter().any(|r| r.as_str().unwrap().contains("has a 5 GbE port")), "{reasons:?}");
    // A MacBook has no Ethernet port: an Ethernet fabric is refused with a way out.
    let out = bin()
        .arg("run")
        .arg(&f)
        .args(["--set", "cluster.fabric=eth-10g", "--set", "cluster.node=macbook-pro-m4-max-40c-128gb", "--no-write"])
        .assert()
        .failure()
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("node `macbook-pro-m4-max-40c-128gb` has no Ethernet port for fabric `eth-10g`"), "{err}");
    assert!(err.contains("tb-eth-25g"), "{err}");
}

/// The ASUS GX10's second ConnectX-7 endpoint negotiates PCIe Gen5 x2 (FACTS-2026 A4): with
/// both x4 halves pinned it carries 92.57 + 97.28 / 2 = 141.2 Gb/s (FACTS-2026 B3), not the
/// Spark FE's 189.85. On `cx7-roce` every link a GX10 is an end of runs at that rate, as its
/// own fabric `cx7-roce-gx10` does; on one x4 half (`cx7-roce-x4`, 92.57 Gb/s) it keeps up.
#[test]
fn a_gx10_links_at_its_x2_endpoints_rate_on_connectx7() {
    let c = catalog();
    let (spark, gx10) = (c.node("dgx-spark").unwrap(), c.node("asus-ascent-gx10").unwrap());
    let (roce, roce_gx10, x4) = (c.fabric("cx7-roce").unwrap(), c.fabric("cx7-roce-gx10").unwrap(), c.fabric("cx7-roce-x4").unwrap());
    assert_eq!(roce.link_gbs(spark, spark), 23.73);
    assert!((roce.link_gbs(gx10, gx10) - 141.2 / 8.0).abs() < 1e-12, "{}", roce.link_gbs(gx10, gx10));
    assert!((roce.link_gbs(spark, gx10) - roce_gx10.bandwidth_gbs).abs() < 1e-12, "a mixed pair runs at the slower end");
    assert_eq!(x4.link_gbs(gx10, gx10), x4.bandwidth_gbs, "one x4 half: the GX10's x4 endpoint keeps up");
    // End to end: two GX10s on cx7-roce predict as on their own fabric, and slower than two Sparks.
    let p = profile();
    let run = |node: &str, fabric: &str| {
        let path = crate::root().join("scenarios/spark-2x-vllm-llama-3.3-70b-tp.toml");
        let sets = [format!("cluster.node={node}"), format!("cluster.fabric={fabric}")];
        estimate(&supernode::scenario::load(&path, &sets).unwrap(), &p).unwrap()
    };
    let (gx_roce, gx_own, sparks) =
        (run("asus-ascent-gx10", "cx7-roce"), run("asus-ascent-gx10", "cx7-roce-gx10"), run("dgx-spark", "cx7-roce"));
    assert_eq!(gx_roce.decode_tokens_per_s, gx_own.decode_tokens_per_s);
    assert_eq!(gx_roce.prefill_tokens_per_s, gx_own.prefill_tokens_per_s);
    assert!(
        gx_roce.prefill_tokens_per_s < sparks.prefill_tokens_per_s,
        "{} vs {}",
        gx_roce.prefill_tokens_per_s,
        sparks.prefill_tokens_per_s
    );
    assert!(
        gx_roce.calibration.reasons.iter().any(|r| r.contains("asus-ascent-gx10's ConnectX-7 reaches 141.2 Gb/s")),
        "{:?}",
        gx_roce.calibration.reasons
    );
}
