"""Statistics of timed samples and the merge of a case's rounds (pure: no MLX)."""

from __future__ import annotations

import json
import math

from .kinds import E2E_KINDS


def percentile(sorted_vals: list[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default), q in [0, 100]."""
    if not sorted_vals:
        return float("nan")
    if len(sorted_vals) == 1:
        return sorted_vals[0]
    pos = (len(sorted_vals) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = math.ceil(pos)
    frac = pos - lo
    return sorted_vals[lo] * (1.0 - frac) + sorted_vals[hi] * frac


def rnd(x: float) -> float:
    """Round seconds to the nanosecond to keep the JSON small."""
    return float(f"{x:.9g}") if x == x else x


def stats(samples: list[float]) -> dict:
    """The statistics a record carries: every sample, median, p10, p90, min, mean, n."""
    s = sorted(samples)
    return {
        "samples_s": [rnd(v) for v in samples],
        "median_s": rnd(percentile(s, 50)),
        "p10_s": rnd(percentile(s, 10)),
        "p90_s": rnd(percentile(s, 90)),
        "min_s": rnd(s[0]),
        "mean_s": rnd(sum(s) / len(s)),
        "n": len(s),
    }


def case_key(e: dict) -> tuple[str, str]:
    """What makes records the same case in every round: kind and params but `inner` (the calls
    per sample, sized afresh each round)."""
    return e["kind"], json.dumps({k: v for k, v in e["params"].items() if k != "inner"}, sort_keys=True)


def badness(e: dict) -> float:
    """What the best round minimises: the slowest rank's median (minus tokens/s for e2e)."""
    if e["kind"] in E2E_KINDS:
        return -e.get("tokens_per_s", 0.0)
    meds = [m for m in e.get("per_rank_median_s") or [] if m == m] or [e["median_s"]]
    return max(meds + [e["median_s"]])


def merge_case(es: list[dict]) -> dict:
    """One record from a case's records of several rounds: the best round's, with `best_round`,
    `rounds` (every round's own statistics and samples) and `all_rounds` (pooled)."""
    best = min(es, key=badness)
    merged = {k: v for k, v in best.items()}
    pooled = [v for e in es for v in e["samples_s"]]
    merged["best_round"] = best["round"]
    merged.pop("round", None)
    merged["all_rounds"] = {k: v for k, v in stats(pooled).items() if k != "samples_s"}
    if best["kind"] in ("e2e_decode", "e2e_decode_batch"):
        # a sample per step, of `batch` tokens in a batched decode
        merged["all_rounds"]["tokens_per_s_mean"] = rnd(best["params"].get("batch", 1) * len(pooled) / sum(pooled))
    merged["rounds"] = [{k: v for k, v in e.items() if k not in ("kind", "params", "bytes", "flops", "model")}
                        for e in es]
    return merged


def pool_window_records(es: list[dict]) -> dict:
    """One record from the e2e windows of one round (the e2e case runs three times per round):
    their samples pooled, the median and tokens/s recomputed from the pool.

    The pooled round is the e2e counterpart of a microbenchmark's round (the median of its
    samples in that round), so the best round of the e2e target and of the microbenchmarks
    the profile is fitted to are the same statistic. Taking the best single window instead
    (9 draws of a ~1 s sample against 3 round medians per microbenchmark) read the e2e run
    faster than the kernels it is made of on a contended machine: the prediction came out
    10-15% slow."""
    if len(es) == 1:
        return es[0]
    first = es[0]
    pooled = [v for e in es for v in e["samples_s"]]
    out = {k: v for k, v in first.items() if k not in ("samples_s", "median_s", "p10_s", "p90_s", "min_s", "mean_s", "n")}
    out.update(stats(pooled))
    med = out["median_s"]
    if first["kind"] == "e2e_prefill":
        out["tokens_per_s"] = rnd(first["params"]["prompt_tokens"] / med)
    else:
        batch = first["params"].get("batch", 1)  # tokens per step of a batched decode
        out["tokens_per_s"] = rnd(batch / med)
        out["tokens_per_s_mean"] = rnd(batch * len(pooled) / sum(pooled))
        if "per_sequence_tokens_per_s" in first:
            out["per_sequence_tokens_per_s"] = rnd(1.0 / med)
        builds = sorted(e["host_build_s"] for e in es if "host_build_s" in e)
        if builds:
            out["host_build_s"] = rnd(percentile(builds, 50))
    ranks = [e["per_rank_median_s"] for e in es if e.get("per_rank_median_s")]
    if ranks and all(len(r) == len(ranks[0]) for r in ranks):
        out["per_rank_median_s"] = [rnd(percentile(sorted(col), 50)) for col in zip(*ranks)]
    out["windows"] = len(es)
    return out


def pool_e2e_windows(results: list[dict]) -> list[dict]:
    """The records with each round's e2e windows of one case pooled into one record (at the
    place of the round's first window); every other record as it was."""
    out: list = []
    slots: dict = {}
    for e in results:
        if e["kind"] not in E2E_KINDS:
            out.append(e)
            continue
        key = (e.get("round"), case_key(e))
        if key not in slots:
            slots[key] = len(out)
            out.append([])
        out[slots[key]].append(e)
    return [pool_window_records(x) if isinstance(x, list) else x for x in out]


def merge_rounds(results: list[dict]) -> list[dict]:
    """One record per case from the records of every round (pace probes stay as taken).

    A shared machine's speed changes for seconds to minutes at a time (measured on a 2-vCPU
    VM: the same work took 68 ms of CPU time in one second and 100-110 ms in the next, with
    nothing else runnable in the guest -- the host's other tenants). Every case, the e2e run
    included, is therefore timed in several rounds spread over the run, and a case's headline
    statistics are those of its best round: the round whose slowest rank was fastest (the
    highest tokens/s for the e2e records, each round's windows pooled first: see
    `pool_window_records`). Microbenchmarks and the e2e target get the same
    treatment, so a profile fitted to the first predicts the second at the same machine
    speed. `rounds` keeps every round's own statistics and samples; `all_rounds` pools them.
    A case timed once passes through unchanged. Cases keep the order of their first round."""
    order: list = []
    groups: dict = {}
    for e in pool_e2e_windows(results):
        if e["kind"] == "pace":
            order.append(e)
            continue
        key = case_key(e)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(e)
    out = []
    for item in order:
        if isinstance(item, dict):
            out.append(item)
        elif len(groups[item]) == 1:
            out.append(groups[item][0])
        else:
            out.append(merge_case(groups[item]))
    return out
