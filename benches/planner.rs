//! The planner's ~10,000-candidate search (issue 13): `supernode plan --model kimi-k2-thinking
//! --budget-usd 40000` over every node, fabric, engine and split up to 8 nodes (9,432
//! candidates), without pruning (every candidate built and, if it can run, simulated, as the
//! planner did before pruning) and with it (candidates over the budget skipped before they are
//! built; the rest bounded by a jitter-free step and skipped when a simulated candidate
//! dominates the bound; runs shared between candidates that plan to the same step). The
//! target: pruned at least 5x faster. The same search at $20,000 shows how the saving grows as
//! the budget tightens.

use criterion::{Criterion, criterion_group, criterion_main};
use supernode::capacity::planner::{self, Goal, Objective, PlanRequest};
use supernode::profile::Profile;

fn request(budget: f64, prune: bool) -> PlanRequest {
    let mut r = PlanRequest::new("kimi-k2-thinking", Objective::new(None, Some(budget), None, Goal::Speed).expect("objective"));
    r.prune = prune;
    r
}

fn bench(c: &mut Criterion) {
    let p = Profile::default_profile();
    let mut group = c.benchmark_group("plan_kimi_k2_10k_candidates");
    group.sample_size(10);
    for (name, budget, prune) in [
        ("budget_40k_unpruned", 40_000.0, false),
        ("budget_40k_pruned", 40_000.0, true),
        ("budget_20k_unpruned", 20_000.0, false),
        ("budget_20k_pruned", 20_000.0, true),
    ] {
        let req = request(budget, prune);
        group.bench_function(name, |b| b.iter(|| planner::plan(&req, &p).expect("plan").winner));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
