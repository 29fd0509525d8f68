//! Replicas (`engine.replicas`): identical copies of one cluster, each running its own engine
//! on its own share of the requests behind a load balancer, the way people put two DGX Sparks
//! or four Mac Studios to work on a model one of them holds. Nothing crosses between replicas
//! during a forward, so each is the one-replica cluster's physics, and the cluster's figures are
//! theirs added up: a single request (`generate`) runs on the first replica while the others
//! idle at their idle power; a serving workload is split, each share simulated on one replica,
//! and the statistics merged (rates add, latency distributions pool).
//!
//! The load balancer is assumed, not simulated: closed-loop users are spread evenly (the first
//! `users mod replicas` replicas take one more, as a least-outstanding-requests balancer keeps
//! them), a Poisson stream is thinned evenly (random routing: each replica sees a Poisson stream
//! of `rate / replicas`), a trace is dealt round-robin in arrival order, and a request budget
//! (`workload.requests`) is split like the users. Replicas whose shares are equal are simulated
//! once and counted as many times (for a Poisson share that is one draw of the same
//! distribution, not independent streams).

use crate::engine::Plan;
use crate::scenario::{Arrival, Scenario, Serve, Stop};
use crate::sim::Time;

use super::serve::{ServeRun, simulate_serve};

/// Each replica's share of a serving workload, in replica order; `None` for a replica that gets
/// no request (fewer users, or trace requests, than replicas). A request budget is split over
/// the replicas that get requests.
pub fn shares(serve: &Serve, replicas: usize) -> Vec<Option<Serve>> {
    let split = |n: u64, i: usize, over: usize| n / over as u64 + u64::from((i as u64) < n % over as u64);
    let arrivals: Vec<Arrival> = (0..replicas)
        .map(|i| match &serve.arrival {
            Arrival::Closed { users, think_s, think } => {
                Arrival::Closed { users: split(*users, i, replicas), think_s: *think_s, think: *think }
            }
            Arrival::Poisson { rate_per_s } => Arrival::Poisson { rate_per_s: rate_per_s / replicas as f64 },
            Arrival::Trace(requests) => Arrival::Trace(requests.iter().skip(i).step_by(replicas).cloned().collect()),
        })
        .collect();
    let gets_requests = |a: &Arrival| match a {
        Arrival::Closed { users, .. } => *users > 0,
        Arrival::Trace(t) => !t.is_empty(),
        Arrival::Poisson { .. } => true,
    };
    // The replicas with requests are the first ones (the remainder goes to the front).
    let active = arrivals.iter().filter(|a| gets_requests(a)).count();
    arrivals
        .into_iter()
        .enumerate()
        .map(|(i, arrival)| {
            let stop = match serve.stop {
                Stop::Requests(n) => Stop::Requests(split(n, i, active.max(1))),
                d @ Stop::Duration(_) => d,
            };
            (gets_requests(&arrival) && stop != Stop::Requests(0)).then(|| Serve { arrival, stop, ..serve.clone() })
        })
        .collect()
}

/// The serving run of scenario `s` (its workload `serve`) on one replica's `plan`: the plain run
/// for one replica, else [`simulate_replicated_serve`]. What `estimate` and `plan --slo` run.
pub fn simulate_scenario_serve(s: &Scenario, plan: &Plan, serve: &Serve) -> ServeRun {
    if s.replicas > 1 { simulate_replicated_serve(s, plan, serve) } else { simulate_serve(plan, serve, &s.slo, s.seed) }
}

/// Simulates a replicated serving workload on one replica's `plan`: each distinct share once
/// (in replica order), merged into one run over every node of the cluster (replica by replica;
/// an idle replica's nodes never busy). The merged window is the longest replica's.
pub fn simulate_replicated_serve(s: &Scenario, plan: &Plan, serve: &Serve) -> ServeRun {
    let shares = shares(serve, s.replicas);
    let mut distinct: Vec<(Serve, ServeRun)> = Vec::new();
    let mut of_replica: Vec<Option<usize>> = Vec::with_capacity(shares.len());
    for share in &shares {
        of_replica.push(share.as_ref().map(|sv| match distinct.iter().position(|(d, _)| d == sv) {
            Some(k) => k,
            None => {
                distinct.push((sv.clone(), simulate_serve(plan, sv, &s.slo, s.seed)));
                distinct.len() - 1
            }
        }));
    }
    let runs: Vec<&ServeRun> = distinct.iter().map(|(_, r)| r).collect();
    merge(&runs, &of_replica, plan.n())
}

/// One run of the whole cluster from the runs of its replicas (`of_replica[i]`: the run replica
/// `i` had, `None` when idle); `nodes` per replica.
fn merge(runs: &[&ServeRun], of_replica: &[Option<usize>], nodes: usize) -> ServeRun {
    let first = runs.first().expect("the first replica always serves");
    let mut out = ServeRun {
        stats: Default::default(),
        window_ns: 0,
        end_ns: 0,
        busy_gpu: Vec::new(),
        busy_cpu: Vec::new(),
        work: Vec::new(),
        events: runs.iter().map(|r| r.events).sum(),
        forwards: 0,
        log: None,
        truncated: false,
        reused_forwards: runs.iter().map(|r| r.reused_forwards).sum(),
    };
    for k in of_replica {
        match k.map(|k| runs[k]) {
            Some(r) => {
                out.stats.absorb(&r.stats);
                out.window_ns = out.window_ns.max(r.window_ns);
                out.end_ns = out.end_ns.max(r.end_ns);
                out.busy_gpu.extend(&r.busy_gpu);
                out.busy_cpu.extend(&r.busy_cpu);
                out.work.extend(&r.work);
                out.forwards += r.forwards;
                out.truncated |= r.truncated;
            }
            None => {
                out.busy_gpu.extend(std::iter::repeat_n(0 as Time, nodes));
                out.busy_cpu.extend(std::iter::repeat_n(0 as Time, nodes));
                out.work.extend(std::iter::repeat_n(crate::engine::Work::default(), nodes));
            }
        }
    }
    debug_assert_eq!(out.busy_gpu.len(), of_replica.len() * first.busy_gpu.len());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{KvFull, Length, Think};

    fn serve(arrival: Arrival, stop: Stop) -> Serve {
        Serve {
            arrival,
            prompt: Length::Fixed(128),
            generate: Length::Fixed(64),
            stop,
            warmup_s: 0.0,
            max_batch: None,
            kv_full: KvFull::Queue,
        }
    }

    /// Users and a request budget split as evenly as whole numbers allow, the first replicas
    /// taking the remainder; a replica left without users is idle; a Poisson rate divides.
    #[test]
    fn shares_split_users_requests_and_rates_evenly() {
        let closed = |users| Arrival::Closed { users, think_s: 0.0, think: Think::Exponential };
        let s = shares(&serve(closed(5), Stop::Requests(7)), 2);
        assert_eq!(s[0].as_ref().map(|x| (&x.arrival, x.stop)), Some((&closed(3), Stop::Requests(4))));
        assert_eq!(s[1].as_ref().map(|x| (&x.arrival, x.stop)), Some((&closed(2), Stop::Requests(3))));
        let s = shares(&serve(closed(1), Stop::Duration(10.0)), 3);
        assert!(s[0].is_some() && s[1].is_none() && s[2].is_none());
        // A request budget goes to the replicas that have users.
        let s = shares(&serve(closed(2), Stop::Requests(9)), 3);
        let stops: Vec<Option<Stop>> = s.iter().map(|x| x.as_ref().map(|x| x.stop)).collect();
        assert_eq!(stops, vec![Some(Stop::Requests(5)), Some(Stop::Requests(4)), None]);
        let s = shares(&serve(Arrival::Poisson { rate_per_s: 6.0 }, Stop::Duration(10.0)), 4);
        assert!(s.iter().all(|x| x.as_ref().unwrap().arrival == Arrival::Poisson { rate_per_s: 1.5 }));
    }
}
