#!/usr/bin/python3
"""Draws the training curves of a cudatrainsink metrics file (JSON lines,
metrics-location=...) to a PNG, in three panels over the step:

- the training loss, with the training top-1 accuracy where the file has
  it, and the accuracy of an evaluation (an eval-result line, written by a
  mode=eval run given the same metrics-location) at the step it followed;
- the learning rate;
- the share of time the trainer waited for data, on a fixed scale (0 to
  at least 10%), and the effective echo factor; a note says when the wait
  stayed so low that the input stage was never the bottleneck.

Usage: plot-metrics.py METRICS.jsonl OUTPUT.png [TITLE]

Without TITLE the title names the run from the file's name, its steps, what
it trained on and its echo factor. The sink appends to its metrics file, so
that a resumed run continues its curve. Where the step goes back (several
runs written to one file), each run is drawn as a curve of its own, and the
count is said.
"""
# SPDX-License-Identifier: LGPL-2.1-or-later
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt  # noqa: E402

# Below this data wait (as a share of wall time) at every point, the input
# stage never held the trainer up: there was nothing for echo to hide.
NEVER_WAITED = 0.05


def read(path):
    """(train-stats records, [(step, eval-result record)]) of PATH; an eval
    result goes with the step of the train-stats line before it."""
    stats, evals = [], []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{number}: not JSON: {error}")
            if record.get("type") == "train-stats":
                stats.append(record)
            elif record.get("type") == "eval-result" and stats:
                evals.append((stats[-1]["step"], record))
    return stats, evals


def default_title(path, stats):
    """'no-echo: 1000 steps on CPU: OpenBLAS ..., echo x1.00'."""
    name = os.path.splitext(os.path.basename(path))[0]
    compute = next((r["compute"] for r in stats if r.get("compute")), None)
    title = f"{name}: {stats[-1]['step']} steps"
    if compute:
        title += " on " + compute.split(";")[0]
    return title + f", echo x{stats[-1].get('echo-factor', 1.0):.2f}"


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    path, output = sys.argv[1], sys.argv[2]
    try:
        stats, evals = read(path)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 1
    if not stats:
        print(f"{path}: no train-stats lines", file=sys.stderr)
        return 1
    title = sys.argv[3] if len(sys.argv) == 4 else default_title(path, stats)

    runs = [[]]
    for record in stats:
        if runs[-1] and record["step"] <= runs[-1][-1]["step"]:
            runs.append([])
        runs[-1].append(record)
    if len(runs) > 1:
        print(f"{path}: {len(runs)} runs in one file (the step goes back "
              f"{len(runs) - 1} times): one curve each")

    fig, (top, middle, bottom) = plt.subplots(
        3, 1, figsize=(9, 7.5), sharex=True,
        gridspec_kw={"height_ratios": [2.2, 1, 1.3]})
    accuracy = top.twinx()
    echo = bottom.twinx()
    for number, run in enumerate(runs, 1):
        steps = [r["step"] for r in run]
        suffix = f" (run {number})" if len(runs) > 1 else ""
        alpha = 1.0 / number
        top.plot(steps, [r["loss"] for r in run], color="tab:blue", alpha=alpha,
                 label=f"training loss{suffix}")
        if all("top1" in r for r in run):
            accuracy.plot(steps, [100 * r["top1"] for r in run],
                          color="tab:orange", alpha=0.8 * alpha,
                          label=f"training top-1{suffix}")
        if all("lr" in r for r in run):
            middle.plot(steps, [r["lr"] for r in run], color="tab:purple",
                        alpha=alpha, label=f"learning rate{suffix}")
        bottom.plot(steps, [100 * r.get("data-wait-fraction", 0) for r in run],
                    color="tab:red", alpha=alpha, label=f"data wait{suffix}")
        echo.plot(steps, [r.get("echo-factor", 1.0) for r in run],
                  color="tab:green", alpha=alpha, label=f"echo factor{suffix}")
    for step, result in evals:
        top1 = 100 * result.get("top1", 0)
        accuracy.plot([step], [top1], marker="*", markersize=14, color="tab:red",
                      linestyle="none", label="eval top-1")
        accuracy.annotate(f"eval top-1 {top1:.1f}%\n"
                          f"({result.get('images', 0)} images)",
                          (step, top1), textcoords="offset points",
                          xytext=(-10, -28), ha="right", fontsize=9,
                          color="tab:red")

    top.set_title(title)
    top.set_ylabel("training loss")
    top.set_ylim(bottom=0)
    top.grid(alpha=0.3)
    if accuracy.get_lines():
        accuracy.set_ylabel("top-1 accuracy (%)")
        accuracy.set_ylim(0, 100)
    else:
        accuracy.set_axis_off()
    lines = top.get_lines() + accuracy.get_lines()
    top.legend(lines, [line.get_label() for line in lines], loc="lower right",
               fontsize=9)

    middle.set_ylabel("learning rate")
    middle.set_ylim(bottom=0)
    middle.grid(alpha=0.3)

    # a fixed scale: a wait of 0.2% to 0.5% is not a swing
    waits = [100 * r.get("data-wait-fraction", 0) for r in stats]
    factors = [r.get("echo-factor", 1.0) for r in stats]
    bottom.set_ylim(0, max(10, 1.15 * max(waits)))
    echo.set_ylim(1, max(2, 1.15 * max(factors)))
    bottom.set_ylabel("data wait (%)")
    bottom.set_xlabel("step")
    bottom.grid(alpha=0.3)
    echo.set_ylabel("echo factor")
    lines = bottom.get_lines() + echo.get_lines()
    bottom.legend(lines, [line.get_label() for line in lines], loc="upper right",
                  fontsize=9)
    if max(waits) < 100 * NEVER_WAITED:
        note = (f"data wait at most {max(waits):.1f}%: the input stage kept up,\n"
                "the trainer was the bottleneck: echo had little to hide")
        bottom.text(0.01, 0.93, note, transform=bottom.transAxes, va="top",
                    fontsize=9)

    fig.tight_layout()
    fig.savefig(output, dpi=100)
    said = f"{output}: {len(stats)} points, loss {stats[0]['loss']:.3f} -> " \
           f"{stats[-1]['loss']:.3f}"
    if evals:
        said += f", eval top-1 {100 * evals[-1][1].get('top1', 0):.1f}%"
    print(said)
    return 0


if __name__ == "__main__":
    sys.exit(main())
