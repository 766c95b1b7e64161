#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Checks a folder of TensorBoard event files that cudatrainsink wrote
(tensorboard-logdir) with TensorBoard's own reader, against the metrics
files (metrics-location) of the runs that wrote it.

  tensorboard_events.py LOGDIR --run METRICS@RESTART ... --eval METRICS@STEP
      [--files N] [--steps 2,4,...] [--require-tag TAG ...] [--prefix]

Every event file's records are read and checked as TensorBoard reads them
(length and data CRC-32C, nothing cut short), the first being the
file_version event. EventAccumulator then reads the folder, as TensorBoard
does, and its scalars must be the metrics files' numbers: the runs in the
order given (a training run with the step it restarts from, which drops
what an earlier run wrote from there on; an evaluation with the step of the
checkpoint it evaluated), each train-stats field under its tag (below), the
echo factor once echo repeated an image, the data-parallel fields in a job
of more than one rank, each step once. Equal means equal to the six
significant digits metrics.jsonl keeps (TensorBoard's scalars are floats).
--prefix: the event file stopped taking data during the run (a full disk):
the scalars are the first reports' only, at least one. --steps: train/loss's
steps, exactly."""
import argparse
import json
import math
import os
import re
import socket
import sys

# train-stats field -> tag, as gstcudatrainsink-report.c writes them
TRAIN_TAGS = {
    "loss": "train/loss",
    "lr": "train/lr",
    "top1": "train/top1",
    "top5": "train/top5",
    "epoch": "train/epoch",
    "images-per-second": "speed/images_per_second",
    "fresh-images-per-second": "speed/fresh_images_per_second",
    "step-time": "time/step_time",
    "busy-time": "time/busy_time",
    "data-wait-fraction": "time/data_wait_fraction",
}
ECHO_TAGS = {"echo-factor": "echo/factor"}
JOB_TAGS = {"comm-time": "dist/comm_time", "slowest-rank": "dist/slowest_rank"}
EVAL_TAGS = {"loss": "eval/loss", "top1": "eval/top1", "top5": "eval/top5"}

NAME = re.compile(r"^events\.out\.tfevents\.(\d{10})\.(.+)\.(\d+)$")


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


try:
    from tensorboard.backend.event_processing.event_accumulator import (
        EventAccumulator)
    from tensorboard.compat.proto import event_pb2
    from tensorboard.compat.tensorflow_stub import errors, pywrap_tensorflow
except ImportError as e:
    fail("TensorBoard's reader is missing (%s): scripts/install-deps.sh "
         "installs it (pip: tensorboard)" % e)


def read_records(path):
    """The events of the file at PATH; fails on a record TensorBoard's
    reader would stop at (a bad CRC, a record cut short)."""
    reader = pywrap_tensorflow.PyRecordReader_New(path)
    events = []
    while True:
        try:
            reader.GetNext()
        except errors.OutOfRangeError:
            return events
        except errors.DataLossError as e:
            fail("%s: record %d: %s" % (path, len(events) + 1, e))
        events.append(event_pb2.Event.FromString(reader.record()))


def metrics_lines(path, kind):
    with open(path) as f:
        return [line for line in map(json.loads, f) if line["type"] == kind]


def expected_scalars(runs):
    """{tag: {step: value}} as TensorBoard should show RUNS, a list of
    ("run", path, restart step) and ("eval", path, step)."""
    expected = {}
    for kind, path, step in runs:
        if kind == "run":
            # SessionLog START: what earlier files hold from here on goes
            for series in expected.values():
                for old in [s for s in series if s >= step]:
                    del series[old]
            for line in metrics_lines(path, "train-stats"):
                tags = dict(TRAIN_TAGS)
                if line["images"] > line["fresh-images"]:
                    tags.update(ECHO_TAGS)
                if line["world-size"] > 1:
                    tags.update(JOB_TAGS)
                for field, tag in tags.items():
                    expected.setdefault(tag, {})[line["step"]] = line[field]
        else:
            for line in metrics_lines(path, "eval-result"):
                for field, tag in EVAL_TAGS.items():
                    expected.setdefault(tag, {})[step] = line[field]
    return {tag: series for tag, series in expected.items() if series}


def run_spec(kind):
    def parse(text):
        path, _, step = text.rpartition("@")
        if not path or not step.isdigit():
            raise argparse.ArgumentTypeError("METRICS@STEP, not " + text)
        return (kind, path, int(step))
    return parse


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("logdir")
    parser.add_argument("--run", type=run_spec("run"), action="append",
                        dest="runs", default=[])
    parser.add_argument("--eval", type=run_spec("eval"), action="append",
                        dest="runs")
    parser.add_argument("--files", type=int)
    parser.add_argument("--steps")
    parser.add_argument("--require-tag", action="append", default=[])
    parser.add_argument("--prefix", action="store_true")
    args = parser.parse_args()

    names = sorted(n for n in os.listdir(args.logdir) if "tfevents" in n)
    if args.files is not None and len(names) != args.files:
        fail("%d event files in %s, expected %d: %s"
             % (len(names), args.logdir, args.files, names))
    for name in names:
        match = NAME.match(name)
        if not match or match.group(2) != socket.gethostname():
            fail("%s is not events.out.tfevents.TIME.%s.PID"
                 % (name, socket.gethostname()))
        events = read_records(os.path.join(args.logdir, name))
        if not events or events[0].file_version != "brain.Event:2":
            fail("%s does not start with the file_version event" % name)

    accumulator = EventAccumulator(args.logdir, size_guidance={"scalars": 0})
    accumulator.Reload()
    shown = {tag: [(e.step, e.value) for e in accumulator.Scalars(tag)]
             for tag in accumulator.Tags()["scalars"]}
    expected = expected_scalars(args.runs)
    if set(shown) != set(expected):
        fail("tags %s, expected %s" % (sorted(shown), sorted(expected)))
    for tag in args.require_tag:
        if tag not in shown:
            fail("no %s in %s" % (tag, sorted(shown)))
    reports = None
    for tag, points in shown.items():
        steps = [step for step, _ in points]
        if steps != sorted(set(steps)):
            fail("%s: steps %s, not one series with each step once"
                 % (tag, steps))
        want = expected[tag]
        if args.prefix:
            want = {s: v for s, v in want.items() if s <= steps[-1]}
            if reports is None:
                reports = steps
            elif steps != reports:
                fail("%s: steps %s, the other tags' %s" % (tag, steps, reports))
        if steps != sorted(want):
            fail("%s: steps %s, expected %s" % (tag, steps, sorted(want)))
        for step, value in points:
            if not math.isclose(value, want[step], rel_tol=1e-5,
                                abs_tol=1e-9):
                fail("%s at step %d: %r in TensorBoard, %r in the metrics"
                     % (tag, step, value, want[step]))
    if args.prefix:
        every = sorted(expected["train/loss"])
        if not reports or len(reports) >= len(every):
            fail("expected the first reports only, got steps %s of %s"
                 % (reports, every))
    if args.steps is not None:
        steps = [step for step, _ in shown["train/loss"]]
        if steps != [int(s) for s in args.steps.split(",")]:
            fail("train/loss at steps %s, expected %s" % (steps, args.steps))
    print("ok: %d event file(s), %d tags, %d scalars"
          % (len(names), len(shown), sum(map(len, shown.values()))))


main()
