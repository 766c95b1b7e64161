#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""pipelines/plot-metrics.py on metrics files: one run, a resumed run (the
step goes on: still one curve), two runs appended to one file (the step goes
back: two curves, said so), a run with its learning rate, training accuracy
and an evaluation after it (its top-1 said), and a file without train-stats
(an error)."""
import json
import os
import subprocess
import sys
import tempfile

script = os.path.join(sys.argv[1], "pipelines", "plot-metrics.py")


def stats(step):
    return {"type": "train-stats", "step": step, "loss": 2.0 / step,
            "data-wait-fraction": 0.1, "echo-factor": 1.5}


def plot(records):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "run.jsonl")
        with open(path, "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
        png = os.path.join(tmp, "run.png")
        done = subprocess.run([script, path, png], capture_output=True, text=True)
        drawn = os.path.exists(png) and os.path.getsize(png) > 1000
        return done.returncode, done.stdout + done.stderr, drawn


failures = 0


def check(condition, what):
    global failures
    print(("ok: " if condition else "FAIL: ") + what)
    failures += not condition


code, out, drawn = plot([stats(s) for s in (10, 20, 30)])
check(code == 0 and drawn and "runs in one file" not in out, "one run: one curve")
code, out, drawn = plot([stats(s) for s in (10, 20, 30, 40, 50)]
                        + [{"type": "snapshot", "mark": 1}])
check(code == 0 and drawn and "runs in one file" not in out,
      "a resumed run (steps go on) stays one curve")
code, out, drawn = plot([stats(s) for s in (10, 20, 30, 10, 20)])
check(code == 0 and drawn and "2 runs in one file" in out,
      "two runs in one file: two curves, said so (%s)" % out.strip().splitlines()[0])
code, out, drawn = plot([dict(stats(s), lr=0.1 / s, top1=0.5) for s in (10, 20)]
                        + [{"type": "eval-result", "loss": 1.0, "top1": 0.8, "images": 10}])
check(code == 0 and drawn and "eval top-1 80.0%" in out,
      "an eval-result after training: drawn at the last step (%s)" % out.strip())
code, out, drawn = plot([{"type": "eval-result", "loss": 1.0}])
check(code == 1 and not drawn and "no train-stats" in out, "no train-stats: an error")
sys.exit(1 if failures else 0)
