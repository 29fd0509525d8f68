"""Statistics and the merge of rounds (pure: these tests do not import MLX)."""

from __future__ import annotations

import math

from supernode_harness.stats import badness, case_key, merge_rounds, percentile, rnd, stats


def test_percentile_interpolates_linearly_like_numpy():
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert math.isclose(percentile([0.0, 10.0], 10), 1.0)
    assert percentile([0.0, 10.0, 20.0], 0) == 0.0 and percentile([0.0, 10.0, 20.0], 100) == 20.0
    assert math.isclose(percentile([0.0, 10.0, 20.0], 90), 18.0)
    assert percentile([7.0], 10) == 7.0
    assert math.isnan(percentile([], 50))


def test_stats_keeps_samples_in_order_and_summarises_them():
    st = stats([3.0, 1.0, 2.0])
    assert (st["median_s"], st["p10_s"], st["p90_s"], st["samples_s"]) == (2.0, 1.2, 2.8, [3.0, 1.0, 2.0])
    assert (st["min_s"], st["mean_s"], st["n"]) == (1.0, 2.0, 3)
    assert list(st) == ["samples_s", "median_s", "p10_s", "p90_s", "min_s", "mean_s", "n"]


def test_rnd_keeps_nine_significant_digits():
    assert rnd(0.1234567891234) == 0.123456789
    assert rnd(1.5e-7) == 1.5e-7
    assert math.isnan(rnd(float("nan")))


def rec(kind, rnd_, samples, params=None, **extra):
    e = {"kind": kind, "params": dict(params or {"M": 1}), "bytes": 8, "flops": 2.0, "round": rnd_}
    e.update(stats(samples))
    e.update(extra)
    return e


def test_merge_rounds_keeps_every_round_and_reports_the_best():
    results = [
        rec("pace", 0, [1.0], {"at": "before qmm"}),
        rec("qmm", 0, [3.0, 3.2], {"M": 1, "inner": 4}, per_rank_median_s=[3.1, 2.0]),
        rec("qmm", 0, [5.0], {"M": 8, "inner": 1}),
        rec("pace", 1, [1.5], {"at": "before qmm"}),
        # round 1 is faster on rank 0 but its slowest rank is slower: round 0 is the best
        rec("qmm", 1, [2.0, 2.2], {"M": 1, "inner": 6}, per_rank_median_s=[2.1, 3.5]),
        rec("qmm", 1, [4.0], {"M": 8, "inner": 1}),
        rec("e2e_decode", 0, [0.2, 0.2], {"gen_tokens": 2}, tokens_per_s=5.0),
        rec("e2e_decode", 1, [0.1, 0.1], {"gen_tokens": 2}, tokens_per_s=10.0),
    ]
    out = merge_rounds(results)
    assert [b["kind"] for b in out] == ["pace", "qmm", "qmm", "pace", "e2e_decode"]
    m1, m8, dec = out[1], out[2], out[4]
    assert m1["best_round"] == 0 and m1["median_s"] == 3.1 and m1["params"]["inner"] == 4
    assert [r["round"] for r in m1["rounds"]] == [0, 1] and m1["rounds"][1]["samples_s"] == [2.0, 2.2]
    assert m1["all_rounds"]["n"] == 4 and "round" not in m1
    assert m8["best_round"] == 1 and m8["median_s"] == 4.0
    assert dec["best_round"] == 1 and dec["tokens_per_s"] == 10.0
    assert math.isclose(dec["all_rounds"]["tokens_per_s_mean"], 4 / 0.6)
    # one round: the records pass through
    assert merge_rounds(results[:3]) == results[:3]


def test_merge_rounds_picks_the_fastest_slowest_rank_and_pools_statistics():
    # single rank (no per_rank_median_s): the lowest median wins, wherever it is
    es = [rec("sdpa", r, s, {"q_len": 1}) for r, s in enumerate([[4.0, 6.0], [1.0, 9.0, 2.0], [3.0]])]
    (m,) = merge_rounds(es)
    assert m["best_round"] == 1 and m["median_s"] == 2.0 and m["samples_s"] == [1.0, 9.0, 2.0]
    assert m["all_rounds"] == {k: v for k, v in stats([4.0, 6.0, 1.0, 9.0, 2.0, 3.0]).items() if k != "samples_s"}
    # a round's record keeps its statistics but not the case's description
    assert set(m["rounds"][0]) == {"round", "samples_s", "median_s", "p10_s", "p90_s", "min_s", "mean_s", "n"}
    # NaN medians of ranks that did not time the case are ignored
    a = rec("all_sum", 0, [2.0], {"message_bytes": 1024}, per_rank_median_s=[2.0, float("nan")])
    b = rec("all_sum", 1, [1.0], {"message_bytes": 1024}, per_rank_median_s=[1.0, 5.0])
    assert badness(a) == 2.0 and badness(b) == 5.0
    assert merge_rounds([a, b])[0]["best_round"] == 0


def test_merge_rounds_tells_cases_apart_by_params_but_inner():
    a = rec("qmm", 0, [1.0], {"M": 1, "N": 2, "inner": 3})
    b = rec("qmm", 1, [1.0], {"N": 2, "M": 1, "inner": 9})
    c = rec("qmm", 1, [1.0], {"M": 2, "N": 2, "inner": 3})
    assert case_key(a) == case_key(b) != case_key(c)
    assert [m["params"]["M"] for m in merge_rounds([a, c, b])] == [1, 2]
    # e2e records: the highest tokens/s wins
    assert badness(rec("e2e_prefill", 0, [1.0], tokens_per_s=30.0)) == -30.0


def test_e2e_windows_of_a_round_are_pooled_before_the_best_round_is_picked():
    # three prefill windows per round, one sample each: round 1 has the single fastest window
    # (40 tok/s) but round 0 the faster pooled median, and round 0 is the one reported
    def pre(r, s):
        return rec("e2e_prefill", r, [s], {"prompt_tokens": 32}, tokens_per_s=32 / s)
    results = [pre(0, 1.0), pre(0, 1.1), pre(0, 1.2), pre(1, 0.8), pre(1, 1.6), pre(1, 1.7)]
    (m,) = merge_rounds(results)
    assert m["best_round"] == 0 and math.isclose(m["tokens_per_s"], 32 / 1.1, rel_tol=1e-8) and m["windows"] == 3
    assert [r["n"] for r in m["rounds"]] == [3, 3] and m["all_rounds"]["n"] == 6
    # decode: a sample per token; the round's rate is 1 / its pooled median step
    dec = [rec("e2e_decode", 0, [0.1, 0.3], {"gen_tokens": 2}, tokens_per_s=5.0, host_build_s=0.01),
           rec("e2e_decode", 0, [0.2, 0.2], {"gen_tokens": 2}, tokens_per_s=5.0, host_build_s=0.03)]
    (d,) = merge_rounds(dec)
    assert math.isclose(d["tokens_per_s"], 5.0) and math.isclose(d["tokens_per_s_mean"], 4 / 0.8)
    assert d["host_build_s"] == 0.02 and d["n"] == 4
