//! The twin against published measurements, out of sample: every bar here is on held-out
//! predictions (leave-one-out cross-validation: each row predicted by a fit that never saw it),
//! never on the rows a profile was fitted to.

use supernode::calibrate::cv::{self, CvInput, FoldMethod, Grouping};
use supernode::calibrate::{self, Dataset};
use supernode::profile::Profile;

/// Leave-one-out cross-validation of the published rows under the shipped profile.
fn loo() -> cv::CvReport {
    loo_with(|paths| paths)
}

/// [`loo`] with the fitted parameters `edit` makes of the defaults.
fn loo_with(edit: impl Fn(Vec<String>) -> Vec<String>) -> cv::CvReport {
    let profile = Profile::default_profile();
    let mut d = Dataset::default();
    d.add_csv(&crate::measurements_csv(), &profile).unwrap();
    let selected: Vec<usize> = (0..d.targets.len()).collect();
    let input = CvInput {
        profile: &profile,
        paths: edit(calibrate::default_params(&d)),
        prior_weight: calibrate::PRIOR_WEIGHT,
        grouping: Grouping::Row,
        selected: &selected,
        method: FoldMethod::Fast(cv::FOLD_STEPS),
    };
    cv::run(&d, &input, &|| {}).unwrap()
}

#[test]
fn held_out_errors_of_the_published_rows_stay_within_their_bars() {
    let r = loo();
    let mape = |f: &dyn Fn(&str) -> bool| {
        let rows: Vec<_> = r.report.rows.iter().filter(|x| f(&x.id)).collect();
        (rows.len(), rows.iter().map(|x| x.error_percent.abs()).sum::<f64>() / rows.len().max(1) as f64)
    };
    let (n_g, g) = mape(&|id| id.starts_with("g-"));
    let (n_all, all) = mape(&|_| true);
    eprintln!("held-out MAPE: Geerling {g:.1}% over {n_g}, all {all:.1}% over {n_all}, decode {:.1}%", r.report.decode_mape_percent);
    // Bars measured on this commit's profile (see the commit message), with a margin: a physics
    // change that worsens held-out error beyond them must say why.
    assert!(n_g >= 6, "Geerling rows scored: {n_g}");
    assert!(g <= GEERLING_BAR, "Geerling held-out MAPE {g:.2}%");
    assert!(all <= ALL_BAR, "held-out MAPE {all:.2}%");
    assert!(r.report.decode_mape_percent <= DECODE_BAR, "decode held-out MAPE {:.2}%", r.report.decode_mape_percent);
    // The intervals are honest: most held-out measurements fall inside their own 90% interval.
    assert!(r.coverage_percent >= COVERAGE_FLOOR, "coverage {:.1}%", r.coverage_percent);
    // The DeepSeek R1 pp512 row set the prior of the expert compute efficiency
    // (hand-set.toml `from_rows`). Since the MiniMax M2.1 30k-token TTFT row is scored (issue
    // 21), two rows besides it move that parameter (R1 pp4096 and the TTFT row), so the
    // parameter is fitted without it and the row is scored, not graded by its own prior; the
    // power rows that set `pj_per_flop` still are excluded.
    assert!(r.report.rows.iter().any(|x| x.id == "b17-r1-671b-pp"), "b17-r1-671b-pp is scored");
    let power = r.excluded.iter().find(|e| e.id == "b17-r1-671b-power").expect("b17-r1-671b-power is excluded");
    assert_eq!(power.params, ["chips.m3-ultra.pj_per_flop"]);
    // The parameter budget counts what the folds fit.
    assert_eq!(r.budget.parameters, r.fitted.len());
    assert_eq!(r.budget.warning.is_some(), r.budget.rows_per_parameter < 2.0);
    // A row whose prior was read from itself is never scored.
    for e in &r.excluded {
        assert!(!r.report.rows.iter().any(|x| x.id == e.id), "{} both excluded and scored", e.id);
    }
}

/// A tied parameter carries its members' priors: the M3 Ultra's energy per FLOP, read from the
/// two power rows (hand-set.toml `from_rows`), still keeps them out of the score when it is
/// fitted as one value with the M2 Ultra's.
#[test]
fn a_tied_parameter_keeps_the_rows_its_members_priors_were_read_from_out_of_the_score() {
    let tied = "chips.{m3-ultra,m2-ultra}.pj_per_flop";
    let r = loo_with(|paths| paths.into_iter().map(|p| if p == "chips.m3-ultra.pj_per_flop" { tied.to_string() } else { p }).collect());
    assert!(r.fitted.iter().any(|p| p.name == tied), "{:?}", r.fitted);
    for id in ["b17-llama33-70b-power", "b17-r1-671b-power"] {
        let e = r.excluded.iter().find(|e| e.id == id).unwrap_or_else(|| panic!("{id} is excluded"));
        assert_eq!(e.params, ["chips.m3-ultra.pj_per_flop"]);
        assert!(!r.report.rows.iter().any(|x| x.id == id), "{id} scored");
    }
}

#[test]
fn the_twin_has_the_published_shape_across_node_counts() {
    // The shape of the Geerling series under the shipped profile (a physics check, not a bar on
    // fitted rows): exo tensor parallel speeds decode up with nodes, llama.cpp RPC slows it down.
    let rows = supernode::calibrate::validate::read_csv(&crate::measurements_csv()).unwrap();
    let report = supernode::calibrate::validate::validate(&rows, &Profile::default_profile());
    let p = |id: &str| report.rows.iter().find(|r| r.id == id).unwrap().predicted;
    for m in ["qwen3", "dsv31"] {
        assert!(
            p(&format!("g-{m}-exo-1")) < p(&format!("g-{m}-exo-2")) && p(&format!("g-{m}-exo-2")) < p(&format!("g-{m}-exo-4")),
            "exo speeds up with nodes"
        );
        assert!(p(&format!("g-{m}-llama-2")) > p(&format!("g-{m}-llama-4")), "llama.cpp RPC slows down from 2 to 4 nodes");
    }
    assert!(p("g-qwen3-llama-1") > p("g-qwen3-llama-2"));
}

#[test]
fn memory_fit_arithmetic_matches_facts() {
    let c = supernode::catalog::catalog();
    let dsv = &c.model("deepseek-v3.1").unwrap().1;
    let gb = dsv.weight_bytes(c.quant("mlx-4bit").unwrap()) / 1e9;
    assert!((gb - 378.0).abs() < 3.0, "{gb}");
    // KV per token: DeepSeek MLA 68.6 KiB, Qwen3-235B 188 KiB, Llama 70B 320 KiB (FACTS.md).
    assert_eq!(dsv.kv_bytes(1), 70_272);
    assert_eq!(c.model("qwen3-235b-a22b").unwrap().1.kv_bytes(1), 188 * 1024);
    assert_eq!(c.model("llama-3.3-70b").unwrap().1.kv_bytes(1), 320 * 1024);
}

// Measured on 2026-12-07 (default profile with the Apple streams tied, --cv row): Geerling
// 6.4% over 11 rows, all scored rows 7.5% over 56, decode 6.9%, coverage 96%; the bars leave
// about a point of margin and hold issue 20's targets (decode <= 8%, all <= 12%, coverage
// >= 85%). Before: Geerling 10.9%, all 23.3% over 43, decode 17.5%, coverage 86%.

/// Held-out (leave-one-out) MAPE bar of the Geerling cluster rows, percent.
const GEERLING_BAR: f64 = 7.5;
/// Held-out MAPE bar of every scored row, percent.
const ALL_BAR: f64 = 8.5;
/// Held-out MAPE bar of the decode rows, percent.
const DECODE_BAR: f64 = 8.0;
/// Least share of held-out rows inside their own 90% interval, percent.
const COVERAGE_FLOOR: f64 = 85.0;

/// A FACTS.md figure no calibration row carries, as an out-of-sample check of MoE prefill on a
/// chip whose expert GEMM rate is a prior: exo's profiled pipeline of Qwen3.5-397B-A17B 4-bit
/// over two M4 Max Mac Studios on TB5 RDMA (exo PR 1929 trace) prefilled a 16,010-token prompt
/// at 467 tok/s. The shipped profile gives 453 (502 before MLX's sorted expert GEMM paid its
/// 16-row tiles, 2026-12-06; with the M4 Max's expert prior at 0.38, the M3 Ultra's untiled
/// value, it gave 305: 35% slow).
#[test]
fn an_exo_pipeline_of_two_m4_max_prefills_qwen3_5_397b_as_exos_trace_shows() {
    let mut b = supernode::scenario::ScenarioBuilder::new("exo PR 1929: 2x M4 Max, Qwen3.5-397B-A17B 4-bit, 16k prompt");
    b.nodes(&["m4-max-40c-128gb".to_string(), "m4-max-40c-128gb".to_string()])
        .fabric("tb5-rdma")
        .model("qwen3.5-397b-a17b")
        .quant("mlx-4bit")
        .engine("exo")
        .parallelism("pipeline")
        .tokens(16_010, 16)
        .seed(1);
    let e = supernode::estimate::estimate(&b.build().unwrap(), &Profile::default_profile()).unwrap();
    let prefill = e.prefill_tokens_per_s;
    assert!((prefill / 467.0 - 1.0).abs() < 0.10, "{prefill} tok/s vs exo's trace 467");
}
