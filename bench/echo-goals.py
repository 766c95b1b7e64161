#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Issue 41's goals, checked on the recorded runs: prints the ratios and
whether each goal holds, exits 1 when one does not (or has no runs yet).

    bench/echo-goals.py [--network docs/echo/network.json]
                        [--wallclock docs/echo/wallclock.json]

For every point (a network case: http-3, http-5, on-off, ...; a ratio of
the decode-bound sweep), from the median time to 80% over the seeds:

- adaptive echo (setting "adaptive") at most the best fixed factor's
  (the fastest of B2-B6 or C2-C6 there: a point has one position);
- with echo before augmentation (B<f>, adaptive-B: where docs/echo.md
  puts it, every repeat cropped anew), in the network case nearest a ratio
  of 5, adaptive at least 2.5x faster than no echo; the same for echo after
  augmentation (C<f>, measured first) is printed beside the goals;
- under the on/off link, the trainer's data wait with adaptive echo at most
  5% (the median of its runs' medians);
- http-3, http-5 and on-off each measured with three seeds.

A run that did not reach 80% counts as not faster than anything. Both
files are written by bench/echo-experiment (--http-ratio with --http-case,
and --sweep)."""
import argparse
import json
import math
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXED = {f"{pos}{f}" for pos in "BC" for f in range(2, 7)}  # a point has one position
SEEDS = 3  # each network case the issue names: http-3, http-5, on-off


def median_time(runs):
    """The median time to target, a run that never got there counting as
    slower than any that did; None when that median is such a run."""
    times = [math.inf if r["seconds_to_target"] is None else r["seconds_to_target"]
             for r in runs]
    middle = statistics.median(times) if times else math.inf
    return None if math.isinf(middle) else middle


def points(path):
    with open(path) as f:
        sweep = json.load(f)
    by_point = {}
    for run in sweep["runs"]:
        by_point.setdefault(run["scale"], []).append(run)
    return sweep, by_point


def check(path):
    """Prints the rows of one file; returns its goal results (what, held)
    and its points, each a dict of case, ratio, speedup, wait, seeds."""
    sweep, by_point = points(path)
    results, cases = [], []
    print(f"{os.path.relpath(path, ROOT)}:")
    print("| point | ratio | seeds | none | best fixed | adaptive | adaptive / best fixed "
          "| speedup over none | adaptive's data wait |")
    print("|---|---|---|---|---|---|---|---|---|")
    for scale, runs in sorted(by_point.items()):
        setting = {}
        for r in runs:
            setting.setdefault(r["setting"], []).append(r)
        ratios = [r.get("input_ratio") for r in runs if r.get("input_ratio")]
        ratio = statistics.median(ratios) if ratios else None
        none = median_time(setting.get("none", []))
        fixed = {s: median_time(rs) for s, rs in setting.items() if s in FIXED}
        reached = {s: t for s, t in fixed.items() if t is not None}
        best = min(reached, key=reached.get) if reached else None
        adaptive = median_time(setting.get("adaptive", []))
        waits = [r["data_wait"] for r in setting.get("adaptive", [])
                 if r.get("data_wait") is not None]
        wait = statistics.median(waits) if waits else None
        seeds = len({r["seed"] for r in setting.get("adaptive", [])})
        case = runs[0].get("case") or scale
        vs_best = adaptive / reached[best] if adaptive and best else None
        speedup = none / adaptive if none and adaptive else None
        def cell(value, fmt):
            return "-" if value is None else format(value, fmt)

        print(f"| {case} | {cell(ratio, '.2f')} | {seeds} | {cell(none, '.0f')} s | "
              f"{best or '-'} {cell(reached.get(best), '.0f')} s | {cell(adaptive, '.0f')} s | "
              f"{cell(vs_best, '.2f')} | {cell(speedup, '.2f')}x | {cell(wait, '.3f')} |")
        results.append((f"{case}: adaptive at most the best fixed factor",
                        vs_best is not None and vs_best <= 1.0))
        position = "B" if any(s in FIXED and s[0] == "B" for s in setting) else "C"
        cases.append({"case": case, "ratio": ratio, "speedup": speedup,
                      "wait": wait, "seeds": seeds, "position": position})
    return results, cases


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--network", default=os.path.join(ROOT, "docs", "echo", "network.json"))
    parser.add_argument("--wallclock",
                        default=os.path.join(ROOT, "docs", "echo", "wallclock.json"))
    args = parser.parse_args()
    goals, cases = check(args.network)
    info = []
    for position, where in (("B", "before augmentation"), ("C", "after augmentation")):
        near5 = min((c for c in cases if c["ratio"] and c["position"] == position),
                    key=lambda c: abs(c["ratio"] - 5), default=None)
        what = (f"echo {where}, the network case nearest ratio 5 "
                f"({near5['case'] if near5 else 'none'}): adaptive at least 2.5x faster than "
                f"no echo ({near5['speedup'] or 0:.2f}x)" if near5 else
                f"echo {where}: no network case")
        held = bool(near5 and near5["speedup"] and near5["speedup"] >= 2.5)
        if position == "B":
            goals.append((what, held))
        else:  # measured first, reported beside the goal
            info.append(f"{'held' if held else 'did not hold'}: {what}")
    onoff = [c for c in cases if c["case"] == "on-off"]
    goals.append(("on-off: adaptive's data wait at most 5%",
                  bool(onoff and onoff[0]["wait"] is not None and onoff[0]["wait"] <= 0.05)))
    needed = {"http-3", "http-5", "on-off"}
    seeds = {c["case"]: c["seeds"] for c in cases}
    missing = sorted(f"{n} ({seeds.get(n, 0)} of {SEEDS} seeds)" for n in needed
                     if seeds.get(n, 0) < SEEDS)
    goals.append((f"every network case measured with {SEEDS} seeds "
                  f"(short: {', '.join(missing) or 'none'})", not missing))
    print()
    goals += check(args.wallclock)[0]
    print()
    for what, ok in goals:
        print(f"{'met' if ok else 'NOT MET'}: {what}")
    for line in info:
        print(f"(reported, not a goal) {line}")
    return 0 if all(ok for _, ok in goals) else 1


if __name__ == "__main__":
    sys.exit(main())
