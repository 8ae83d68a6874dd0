#!/usr/bin/env python3
"""Summary of bench/sandbox_ab.sh: per side (base, head) every round's figures and their medians, and per
figure this tree's figure relative to the base's: the ratio of the medians, and the median of the
per-round ratios (each round runs base and head back to back, in alternating order, so a round's ratio
cancels the machine's drift) with a 95% percentile-bootstrap interval over rounds (10,000 resamples,
seed 0).

  sandbox_ab_summary.py collect DIR ROUNDS BASE HEAD BENCH_ARGS   DIR holds {base,head}.{0..ROUNDS-1}.json
  sandbox_ab_summary.py pool SUMMARY.json...                      rounds of earlier summaries, pooled
"""
import datetime
import json
import random
import statistics
import sys

# (figure, path in `spade bench sandbox`'s JSON)
FIGURES = [
    ("startup_ms_p50_continuous_demand", "results.1_busy.sandbox.startup_ms_p50"),
    ("startup_ms_p50_ready_spare", "sandbox_paced_1_busy.startup_ms_p50"),
    ("startup_ms_p50_without_spares", "sandbox_without_spares_1_busy.startup_ms_p50"),
    ("episode_steps_per_s", "results.1_busy.sandbox.episode_steps_per_s"),
    ("episode_ratio_vs_python3_per_env", "ratios.1_busy.episode_steps_vs_subprocess"),
    ("live_trivial_steps_per_s", "results.1_busy.sandbox.trivial_steps_per_s"),
    ("live_seed_steps_per_s", "results.1_busy.sandbox.seed_steps_per_s"),
    ("startup_ms_p50_2_busy", "results.2_busy.sandbox.startup_ms_p50"),
    ("episode_steps_per_s_2_busy", "results.2_busy.sandbox.episode_steps_per_s"),
    ("live_pool_cgroup_mib", "live.pool_cgroup_bytes"),
    ("python3_fork_exit_wait_ms", "python3_fork_exit_wait_ms"),
]


def figure(bench, name, path):
    for key in path.split("."):
        bench = bench[key]
    return bench / 2**20 if name == "live_pool_cgroup_mib" else bench


def paired(base, head, resamples=10000):
    ratios = [h / b for h, b in zip(head, base)]
    rng = random.Random(0)
    boot = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(resamples))
    return {"median": round(statistics.median(ratios), 3),
            "ci95": [round(boot[int(0.025 * resamples)], 3), round(boot[int(0.975 * resamples) - 1], 3)]}


def summarize(rounds, meta):
    out = dict(meta, rounds=len(rounds["base"]["episode_steps_per_s"]), sides={}, head_over_base={})
    for side in ("base", "head"):
        out["sides"][side] = {name: {"median": round(statistics.median(xs), 3), "rounds": [round(x, 3) for x in xs]}
                              for name, xs in rounds[side].items()}
    for name, _ in FIGURES:
        base, head = rounds["base"][name], rounds["head"][name]
        out["head_over_base"][name] = {"of_medians": round(statistics.median(head) / statistics.median(base), 3),
                                       "paired": paired(base, head)}
    return out


def collect(directory, count, base, head, args):
    rounds = {side: {name: [] for name, _ in FIGURES} for side in ("base", "head")}
    machine = environments = None
    for r in range(count):
        for side in ("base", "head"):
            with open(f"{directory}/{side}.{r}.json") as f:
                bench = json.load(f)
            machine, environments = bench.get("machine"), bench["live"]["environments"]
            for name, path in FIGURES:
                rounds[side][name].append(figure(bench, name, path))
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")
    return summarize(rounds, {"date": date, "base": base, "head": head, "bench_args": args, "machine": machine,
                              "live_environments": environments})


def pool(paths):
    runs = [json.load(open(p)) for p in paths]
    rounds = {side: {name: [x for run in runs for x in run["sides"][side][name]["rounds"]] for name, _ in FIGURES}
              for side in ("base", "head")}
    return summarize(rounds, {"pooled": [{k: run[k] for k in ("date", "base", "head", "bench_args")} for run in runs],
                              "machine": runs[0]["machine"]})


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "collect":
        result = collect(sys.argv[2], int(sys.argv[3]), *sys.argv[4:7])
    elif len(sys.argv) >= 3 and sys.argv[1] == "pool":
        result = pool(sys.argv[2:])
    else:
        sys.exit(__doc__)
    print(json.dumps(result, indent=1))
