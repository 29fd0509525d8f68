//! Golden outputs: the run table and JSON of every shipped scenario and the validation report on
//! the in-repo copy of the published rows. Any change of a prediction shows up here in review
//! (`cargo insta review`, or delete the `.snap` file and re-run to accept a new value).

use crate::{bin, root};

/// Every shipped single-run scenario (sweep files are covered by their own tests).
fn shipped_scenarios() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    names.sort();
    names
}

fn stdout(args: &[&str]) -> String {
    let o = bin().current_dir(root()).args(args).output().unwrap();
    let mut text = String::from_utf8(o.stdout).unwrap();
    text.push_str(&format!("[exit {}]\n", o.status.code().unwrap_or(-1)));
    text
}

#[test]
fn run_json_and_table_of_every_shipped_scenario() {
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        for name in shipped_scenarios() {
            let path = format!("scenarios/{name}");
            let stem = name.trim_end_matches(".toml");
            insta::assert_snapshot!(format!("run-json-{stem}"), stdout(&["run", &path, "--json", "--no-write"]));
            insta::assert_snapshot!(format!("run-table-{stem}"), stdout(&["run", &path, "--no-write"]));
        }
    });
}

#[test]
fn validate_report_on_the_published_rows() {
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        let csv = "calibration/data/measurements.csv";
        insta::assert_snapshot!("validate-json", stdout(&["validate", "--against", csv, "--json"]));
        insta::assert_snapshot!("validate-table", stdout(&["validate", "--against", csv]));
        let harness = "calibration/measurements/harness-quick-example.json";
        insta::assert_snapshot!("validate-harness-json", stdout(&["validate", "--against", harness, "--json"]));
    });
}

#[test]
fn sweep_results_of_the_small_shipped_sweeps() {
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        for name in ["sweep-geerling", "sweep-context", "sweep-equal-budget"] {
            let out = tempfile::tempdir().unwrap();
            let path = format!("scenarios/{name}.toml");
            bin().current_dir(root()).args(["sweep", &path, "--no-charts", "--out"]).arg(out.path()).assert().success();
            let jsonl = std::fs::read_to_string(out.path().join("results.jsonl")).unwrap();
            let mut lines: Vec<&str> = jsonl.lines().collect();
            lines.sort();
            insta::assert_snapshot!(format!("sweep-jsonl-{name}"), lines.join("\n"));
            let csv = std::fs::read_to_string(out.path().join("results.csv")).unwrap();
            insta::assert_snapshot!(format!("sweep-csv-{name}"), csv);
        }
    });
}

#[test]
fn plan_json_on_a_small_search() {
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        let args = [
            "plan",
            "--model",
            "deepseek-v3.1",
            "--target-tokens-per-s",
            "20",
            "--nodes",
            "m3-ultra-80c-512gb,m3-ultra-80c-256gb",
            "--max-nodes",
            "4",
            "--fabrics",
            "tb5-rdma,tb5-tcp",
        ];
        let mut json_args = args.to_vec();
        json_args.push("--json");
        insta::assert_snapshot!("plan-json", stdout(&json_args));
        json_args.pop();
        json_args.push("--all");
        let table = stdout(&json_args);
        // The report says how long the search took; that is the one line that may differ.
        let table: String = table.lines().filter(|l| !l.contains(" candidates in ")).map(|l| format!("{l}\n")).collect();
        insta::assert_snapshot!("plan-table", table);
    });
}
