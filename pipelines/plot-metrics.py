#!/usr/bin/python3
"""Draws the training curves of a cudatrainsink metrics file (JSON lines,
metrics-location=...) to a PNG: the loss against the step, and below it the
share of time the trainer waited for data and the effective echo factor.

Usage: plot-metrics.py METRICS.jsonl OUTPUT.png [TITLE]

The sink appends to its metrics file, so that a resumed run continues its
curve. Where the step goes back (several runs written to one file), each run
is drawn as a curve of its own, and the count is said.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    path, output = sys.argv[1], sys.argv[2]
    title = sys.argv[3] if len(sys.argv) == 4 else path
    stats = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                print(f"{path}:{number}: not JSON: {error}", file=sys.stderr)
                return 1
            if record.get("type") == "train-stats":
                stats.append(record)
    if not stats:
        print(f"{path}: no train-stats lines", file=sys.stderr)
        return 1

    runs = [[]]
    for record in stats:
        if runs[-1] and record["step"] <= runs[-1][-1]["step"]:
            runs.append([])
        runs[-1].append(record)
    if len(runs) > 1:
        print(f"{path}: {len(runs)} runs in one file (the step goes back "
              f"{len(runs) - 1} times): one curve each")

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True,
                                      gridspec_kw={"height_ratios": [2, 1]})
    echo = bottom.twinx()
    for number, run in enumerate(runs, 1):
        steps = [r["step"] for r in run]
        suffix = f" (run {number})" if len(runs) > 1 else ""
        top.plot(steps, [r["loss"] for r in run], label=f"loss{suffix}")
        bottom.plot(steps, [100 * r["data-wait-fraction"] for r in run],
                    color="tab:red", alpha=1.0 / number,
                    label=f"data wait (%){suffix}")
        echo.plot(steps, [r["echo-factor"] for r in run], color="tab:green",
                  alpha=1.0 / number, label=f"echo factor{suffix}")
    top.set_ylabel("training loss")
    top.set_title(title)
    top.grid(alpha=0.3)
    if len(runs) > 1:
        top.legend(loc="upper right")
    bottom.set_ylabel("data wait (%)")
    bottom.set_xlabel("step")
    bottom.grid(alpha=0.3)
    echo.set_ylabel("echo factor")
    lines = bottom.get_lines() + echo.get_lines()
    bottom.legend(lines, [line.get_label() for line in lines], loc="upper right")
    fig.tight_layout()
    fig.savefig(output, dpi=100)
    print(f"{output}: {len(stats)} points, loss {stats[0]['loss']:.3f} -> "
          f"{stats[-1]['loss']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
