# SPDX-License-Identifier: LGPL-2.1-or-later
"""gst-train, the application, end to end: Ctrl-C in the middle of training
ends the run cleanly with a checkpoint that torchvision loads (strict=True)
and a closing line that names its step and file; with a deep queue in front
of the sink, Ctrl-C stops within a few steps (once cudatrainsink has its
"stop" action signal); SIGTERM does what Ctrl-C does; a line says that the
pipeline plays before the first progress line (not with --quiet);
--dot-dir writes dot files that graphviz parses, one at EOS that shows
the properties set or changed, in two rows, and its full form every one;
--summary; the exit statuses (0, 1 with the error on stderr, 2 for bad
usage, a property value out of its range included, before anything
runs); Ctrl-C then --resume is bitwise the run that was not interrupted,
and the resumed run says from which step of which file; a second Ctrl-C
aborts with exit status 130; a run with fewer images than one batch trains
nothing and says why, exit status 1, no checkpoint claimed; a run that
wrote no checkpoint does not close with "checkpoint written" (issue 43).

Usage: gst_train_app.py GST-TRAIN DATASET-TOOL SOURCE-DIR
"""
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading

app, tool, source = sys.argv[1:4]
sys.path.insert(0, os.path.join(source, "tests", "trainer"))
import torch_reference  # noqa: E402  (Debian's torch, the oracle)

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message)


def training_line(data, checkpoint, extra="", size=16, before_sink=""):
    return (f"datasetsrc location={data}/train num-epochs=-1 seed=1 ! imagedec ! "
            f"augment width={size} height={size} seed=1 ! batcher batch-size=32 ! "
            f"{before_sink}cudatrainsink model=resnet20 device=cpu stats-interval=1 "
            f"checkpoint-location={checkpoint} {extra}")


# The longest any gst-train run here may take: reading its output line by
# line has no timeout of its own, so a watchdog kills a run that hangs (its
# exit status then fails the checks) instead of the test hanging.
RUN_SECONDS = 300


def watched(command):
    """Popen(COMMAND) with pipes, killed after RUN_SECONDS."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    watchdog = threading.Timer(RUN_SECONDS, process.kill)
    watchdog.daemon = True
    watchdog.start()
    return process


def interrupted_run(line, after_step, sig=signal.SIGINT):
    """Runs gst-train on LINE, sends SIG once progress reached AFTER_STEP;
    returns (process, stdout lines, the last step seen before, stderr)."""
    process = watched([app, line])
    lines, last_step = [], 0
    for output in process.stdout:
        lines.append(output)
        if output.startswith("step "):
            last_step = int(output.split()[1])
            if last_step >= after_step:
                process.send_signal(sig)
                break
    out, err = process.communicate(timeout=RUN_SECONDS)
    return process, lines + out.splitlines(keepends=True), last_step, err


def closing_step(lines, checkpoint):
    """The step of the closing line naming CHECKPOINT, or None."""
    pattern = re.compile(r"^gst-train: stopped at step (\d+); checkpoint written to "
                         + re.escape(checkpoint) + "$")
    for output in lines:
        match = pattern.match(output.rstrip("\n"))
        if match:
            return int(match.group(1))
    return None


def sink_has_stop_signal():
    """Whether gst-inspect-1.0 lists cudatrainsink's "stop" action signal."""
    inspect = subprocess.run(["gst-inspect-1.0", "cudatrainsink"], capture_output=True,
                             text=True, timeout=RUN_SECONDS)
    actions = inspect.stdout.split("Element Actions", 1)
    return inspect.returncode == 0 and len(actions) == 2 and '"stop"' in actions[1]


with tempfile.TemporaryDirectory() as work:
    if not os.path.exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"):
        print("SKIP: Debian's dataset-fashion-mnist is not installed")
        sys.exit(77)
    subprocess.run([tool, "fashion-mnist", "--output", f"{work}/fm", "--limit-train", "300",
                    "--limit-test", "10"], check=True, stdout=subprocess.DEVNULL,
                   timeout=RUN_SECONDS)

    # Ctrl-C after a few steps: EOS, the final checkpoint, exit status 0, a
    # closing line with the step of the checkpoint.
    checkpoint = f"{work}/interrupted.safetensors"
    process, lines, steps_seen, err = interrupted_run(
        training_line(f"{work}/fm", checkpoint), 3)
    check(steps_seen >= 3, f"no progress lines before the interrupt: {err}")
    check(process.returncode == 0, f"Ctrl-C: exit status {process.returncode}: {err}")
    check("interrupt" in err, f"Ctrl-C was not acknowledged: {err}")
    playing = "gst-train: playing; the first progress line comes after stats-interval steps (1)\n"
    check(playing in lines and lines.index(playing) < min(
        [i for i, output in enumerate(lines) if output.startswith("step ")] or [0]),
        f"no playing line before the first progress line: {lines[:3]}")
    closing = closing_step(lines, checkpoint)
    check(closing is not None and closing >= steps_seen,
          f"Ctrl-C: no closing line naming the checkpoint: {lines[-3:]}")
    check(os.path.exists(checkpoint), "Ctrl-C left no checkpoint")
    if os.path.exists(checkpoint):
        tensors, metadata = torch_reference.load_safetensors(checkpoint)
        step = int(metadata["gst_train.step"])
        check(step >= steps_seen, f"checkpoint at step {step}, saw {steps_seen}")
        check(closing == step, f"closing line says step {closing}, checkpoint {step}")
        state = {k: v for k, v in tensors.items() if not k.startswith("optimizer.")}
        model = torch_reference.build_model("resnet20", 10)
        try:
            model.load_state_dict(state, strict=True)
            print(f"ok: interrupted at step {step}; torchvision loads the checkpoint")
        except RuntimeError as error:
            check(False, f"torchvision does not load the checkpoint: {error}")

    # Ctrl-C, then --resume with the same line: bitwise the run that was
    # never interrupted (the schedule's length fixed by total-steps), the
    # source starting where the checkpoint stopped.
    first = f"{work}/first.safetensors"
    process, lines, steps_seen, err = interrupted_run(
        training_line(f"{work}/fm", first, "total-steps=40"), 2)
    stopped = closing_step(lines, first)
    check(process.returncode == 0 and stopped is not None,
          f"Ctrl-C before --resume: {process.returncode} {lines[-3:]} {err}")
    if stopped is not None:
        resumed, straight = f"{work}/resumed.safetensors", f"{work}/straight.safetensors"
        until = f"total-steps=40 max-steps={stopped + 3}"
        run = subprocess.run([app, "-q", "--resume", first,
                              training_line(f"{work}/fm", resumed, until)],
                             capture_output=True, text=True,
                             env=dict(os.environ, GST_DEBUG="datasetsrc:4",
                                      GST_DEBUG_NO_COLOR="1"), timeout=RUN_SECONDS)
        check(run.returncode == 0, f"--resume: exit status {run.returncode}: {run.stderr}")
        check(f"downstream resumes: starting at sample {stopped * 32} " in run.stderr,
              "--resume: the source did not start where the checkpoint stopped")
        check(f"info from cudatrainsink0: Resumed from step {stopped} of {first}: the "
              f"source goes on after the {stopped * 32} samples it trained on.\n"
              in run.stderr, f"--resume: the run does not say it resumed: {run.stderr}")
        run = subprocess.run([app, "-q", training_line(f"{work}/fm", straight, until)],
                             capture_output=True, text=True, timeout=RUN_SECONDS)
        check(run.returncode == 0, f"straight: exit status {run.returncode}: {run.stderr}")
        a, meta_a = torch_reference.load_safetensors(resumed)
        b, meta_b = torch_reference.load_safetensors(straight)
        same = (meta_a["gst_train.step"] == meta_b["gst_train.step"] == str(stopped + 3)
                and a.keys() == b.keys() and all(a[k].equal(b[k]) for k in a))
        check(same, f"--resume at step {stopped} to {stopped + 3} differs from the "
              "uninterrupted run")
        if same:
            print(f"ok: Ctrl-C at step {stopped}, --resume to step {stopped + 3}: bitwise "
                  "the uninterrupted run")
        # resumed at max-steps: nothing to train, nothing written, and the
        # closing line does not say otherwise
        untouched = f"{work}/untouched.safetensors"
        run = subprocess.run([app, "--resume", first, training_line(
            f"{work}/fm", untouched, f"total-steps=40 max-steps={stopped}")],
            capture_output=True, text=True, timeout=RUN_SECONDS)
        check(run.returncode == 0 and "gst-train: stopped before training a step; no "
              f"checkpoint written to {untouched}\n" in run.stdout
              and "checkpoint written to" not in run.stdout.replace(
                  "no checkpoint written to", "")
              and not os.path.exists(untouched),
              f"resumed at max-steps: {run.returncode} {run.stdout!r} {run.stderr!r}")
    bad = subprocess.run([app, "--resume", first, "fakesrc num-buffers=1 ! fakesink"],
                         capture_output=True, text=True, timeout=RUN_SECONDS)
    check(bad.returncode == 2 and "--resume: the pipeline has no cudatrainsink" in bad.stderr,
          f"--resume without a sink: {bad.returncode} {bad.stderr}")

    # A deep queue before a slow sink (32x32): Ctrl-C stops after the step in
    # flight, not behind the queued batches, once the sink has "stop"
    # (max-steps bounds the run where it has not).
    checkpoint = f"{work}/queued.safetensors"
    process, lines, steps_seen, err = interrupted_run(
        training_line(f"{work}/fm", checkpoint, "max-steps=60", size=32,
                      before_sink="queue max-size-buffers=200 ! "), 5)
    closing = closing_step(lines, checkpoint)
    check(process.returncode == 0 and closing is not None,
          f"queued Ctrl-C: exit status {process.returncode}, no closing line: "
          f"{lines[-3:]} {err}")
    if sink_has_stop_signal():
        check(closing is not None and closing <= steps_seen + 3,
              f"queued Ctrl-C: stopped at step {closing}, {steps_seen} before it")
        check("stopping after the step in flight" in err,
              f"queued Ctrl-C: the sink was not asked to stop: {err}")
        print(f"ok: Ctrl-C at step {steps_seen} behind a full queue stopped at step {closing}")
    else:
        print(f"ok: Ctrl-C at step {steps_seen} behind a full queue closed at step {closing} "
              "(cudatrainsink has no \"stop\" signal yet: the queue was trained on)")

    # SIGTERM does what Ctrl-C does: the sink stops after the step in
    # flight, the final checkpoint at the step the closing line names.
    checkpoint = f"{work}/terminated.safetensors"
    process, lines, steps_seen, err = interrupted_run(
        training_line(f"{work}/fm", checkpoint), 2, signal.SIGTERM)
    closing = closing_step(lines, checkpoint)
    check(process.returncode == 0 and closing is not None and closing >= steps_seen
          and "stopping after the step in flight" in err,
          f"SIGTERM: exit status {process.returncode}: {lines[-3:]} {err}")
    check(os.path.exists(checkpoint), "SIGTERM left no checkpoint")
    if closing is not None and os.path.exists(checkpoint):
        step = int(torch_reference.load_safetensors(checkpoint)[1]["gst_train.step"])
        check(step == closing, f"SIGTERM: closing line says step {closing}, checkpoint {step}")
        print(f"ok: SIGTERM at step {steps_seen}: stopped at step {closing}, checkpoint there")

    # A second Ctrl-C aborts: exit status 130 without waiting for EOS. A
    # second branch keeps the pipeline from reaching EOS after the first:
    # fakesink (sync) holds fakesrc's second buffer until 1000 s of running
    # time, and fakesrc's EOS waits behind it in the queue. (Without the
    # queue fakesrc's own thread is stuck in the push: the case after this
    # one.) stderr is read
    # for the acknowledgement of the first Ctrl-C before the second is
    # sent, so that GLib cannot fold the two signals into one.
    checkpoint = f"{work}/aborted.safetensors"
    stuck = (" fakesrc num-buffers=2 datarate=1 sizetype=fixed sizemax=1000 ! queue"
             " ! fakesink sync=true")
    process = watched([app, "--summary", f"{work}/aborted.json",
                       training_line(f"{work}/fm", checkpoint) + stuck])
    lines, steps_seen, acknowledged = [], 0, ""
    for output in process.stdout:
        lines.append(output)
        if output.startswith("step "):
            steps_seen = int(output.split()[1])
            if steps_seen >= 2:
                process.send_signal(signal.SIGINT)
                break
    for output in process.stderr:
        acknowledged += output
        if "interrupt: stopping after the step in flight" in output:
            process.send_signal(signal.SIGINT)
            break
    out, err = process.communicate(timeout=RUN_SECONDS)
    err = acknowledged + err
    lines += out.splitlines(keepends=True)
    aborted = [output for output in lines if output.startswith("gst-train: aborted; ")]
    check(process.returncode == 130, f"second Ctrl-C: exit status {process.returncode}: {err}")
    check("interrupt: aborting" in err, f"second Ctrl-C not acknowledged: {err}")
    check(len(aborted) == 1 and re.match(
        r"gst-train: aborted; the last step reported was (\d+); the final checkpoint was "
        r"not waited for\n", aborted[0])
        and int(aborted[0].split()[7].rstrip(";")) >= steps_seen,
        f"second Ctrl-C: closing line {aborted} {lines[-3:]}")
    check(closing_step(lines, checkpoint) is None, f"second Ctrl-C: closed as a clean stop")
    with open(f"{work}/aborted.json") as f:
        data = json.load(f)
    check(data["exit-status"] == 130, f"second Ctrl-C: summary {data}")
    # gst-train did not wait for it, but the sink writes its final
    # checkpoint when it stops (after the first Ctrl-C, or at the state
    # change to NULL at the latest), whole: a complete temporary file
    # renamed into place
    check(os.path.exists(checkpoint), "second Ctrl-C: no checkpoint")
    if os.path.exists(checkpoint):
        step = int(torch_reference.load_safetensors(checkpoint)[1]["gst_train.step"])
        check(step >= steps_seen, f"second Ctrl-C: checkpoint at step {step}")
    check(not glob.glob(f"{work}/aborted.safetensors?*"),
          f"second Ctrl-C left temporary files: {glob.glob(f'{work}/aborted*')}")
    if process.returncode == 130:
        print(f"ok: a second Ctrl-C aborts with exit status 130 ({aborted[0].strip()})")

    # The same without the queue: fakesrc's own thread is stuck pushing
    # into the sync'd fakesink, so sending EOS to the sources blocks until
    # it is free (1000 s). gst-train sends it from another thread, and the
    # second Ctrl-C still aborts (before, the main loop blocked in the send
    # and only kill -9 ended the process).
    stuck = " fakesrc datarate=1 sizetype=fixed sizemax=1000 ! fakesink sync=true"
    process = watched([app, training_line(f"{work}/fm", f"{work}/stuck.safetensors")
                       + stuck])
    for output in process.stdout:
        if output.startswith("step ") and int(output.split()[1]) >= 2:
            process.send_signal(signal.SIGINT)
            break
    acknowledged = ""
    for output in process.stderr:
        acknowledged += output
        if "interrupt: stopping after the step in flight" in output:
            process.send_signal(signal.SIGINT)
            break
    try:
        out, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        check(False, "second Ctrl-C with a source stuck in a push: still running after 60 s")
    err = acknowledged + err
    check(process.returncode == 130,
          f"second Ctrl-C, source stuck: exit status {process.returncode}: {err}")
    check("the pipeline is stuck" in err, f"second Ctrl-C, source stuck: not said: {err}")
    if process.returncode == 130:
        print("ok: a second Ctrl-C aborts with 130 while a source's thread is stuck in a push")

    # --dot-dir and --summary on a short run.
    dots = f"{work}/dots"
    summary = f"{work}/summary.json"
    result = subprocess.run([app, "-q", "--dot-dir", dots, "--summary", summary,
                             training_line(f"{work}/fm", f"{work}/short.safetensors",
                                           "max-steps=2")],
                            capture_output=True, text=True, timeout=300)
    check(result.returncode == 0, f"short run: {result.returncode}: {result.stderr}")
    files = sorted(glob.glob(f"{dots}/*.dot"))
    check(len(files) >= 3, f"dot files: {files}")
    for path in files:
        rendered = subprocess.run(["dot", "-Tsvg", path], capture_output=True, timeout=RUN_SECONDS)
        check(rendered.returncode == 0 and b"<svg" in rendered.stdout,
              f"graphviz cannot read {path}: {rendered.stderr[:200]}")
    if files:
        print(f"ok: {len(files)} dot files, graphviz reads them all")
    eos_dots = [path for path in files if path.endswith("-eos.dot")]
    check(len(eos_dots) == 1, f"no dot file at EOS: {files}")
    if eos_dots:
        with open(eos_dots[0]) as f:
            eos_dot = f.read()
        with open(eos_dots[0][:-len(".dot")] + ".full.dot") as f:
            full_dot = f.read()
        # shuffle is at its default in training_line, model and max-steps
        # are set; sync=FALSE is the sink's own default
        check("\\nmodel=resnet20" in eos_dot and "\\nmax-steps=2" in eos_dot
              and "\\nshuffle=" not in eos_dot and "\\nsync=" not in eos_dot,
              "the EOS dot file shows other properties than those set or changed")
        # a chain of five elements, in two rows
        check("constraint=false" in eos_dot, "the EOS dot file is not folded")
        check("\\nshuffle=TRUE" in full_dot and "\\nmodel=resnet20" in full_dot
              and "\\nmax-steps=2" in full_dot,
              "the full EOS dot file does not show default-valued properties")
    check("playing" not in result.stdout, f"--quiet printed: {result.stdout}")
    with open(summary) as f:
        data = json.load(f)
    check(data["exit-status"] == 0 and data["last-train-stats"]["step"] == 2,
          f"summary: {data}")

    # Fewer images than one batch (300, in batches of 512): batcher drops
    # them all (drop-remainder), the sink trains nothing; both say so, the
    # exit status is 1 and no checkpoint is claimed or written (issue 43:
    # "stopped before training a step; checkpoint written to X", status 0).
    checkpoint = f"{work}/never.safetensors"
    run = subprocess.run([app, training_line(f"{work}/fm", checkpoint).replace(
        "num-epochs=-1", "num-epochs=1").replace("batch-size=32", "batch-size=512")],
        capture_output=True, text=True, timeout=RUN_SECONDS)
    check(run.returncode == 1
          and "warning from batcher0: Dropped all 300 images of the stream at its end: "
          "fewer than batch-size=512 arrived, and drop-remainder=true (the default) "
          "drops a last partial batch" in run.stderr
          and "error from cudatrainsink0: End of stream before the first batch: nothing "
          "was trained, and no checkpoint was written. The source's epoch holds 300 "
          "images, fewer than one batch of 512" in run.stderr
          and "checkpoint written" not in run.stdout and not os.path.exists(checkpoint),
          f"fewer images than a batch: {run.returncode} {run.stdout!r} {run.stderr!r}")
    if run.returncode == 1:
        print("ok: fewer images than a batch: said, exit status 1, no checkpoint claimed")

    # Exit statuses.
    usage = subprocess.run([app], capture_output=True, text=True, timeout=RUN_SECONDS)
    check(usage.returncode == 2 and "no pipeline" in usage.stderr,
          f"no arguments: {usage.returncode} {usage.stderr}")
    bad = subprocess.run([app, "nosuchelement ! fakesink"], capture_output=True, text=True,
                         timeout=RUN_SECONDS)
    check(bad.returncode == 1 and "nosuchelement" in bad.stderr,
          f"bad launch line: {bad.returncode} {bad.stderr}")
    missing = subprocess.run([app, "--summary", f"{work}/failed.json",
                              training_line(f"{work}/nowhere", f"{work}/x.safetensors")],
                             capture_output=True, text=True, timeout=120)
    check(missing.returncode == 1 and f"{work}/nowhere" in missing.stderr,
          f"missing dataset: {missing.returncode} {missing.stderr}")
    with open(f"{work}/failed.json") as f:
        failed = json.load(f)
    check(failed["exit-status"] == 1 and "nowhere" in (failed["error"] or ""),
          f"summary of a failed run: {failed}")
    print("ok: exit statuses 2 (usage), 1 (bad line), 1 (runtime error)")

    # A value out of a property's range: GLib only warns and keeps the
    # default; gst-train refuses the line, names the value, the property and
    # its range, exit status 2, and nothing runs.
    for name, element, setting, allowed in [
            ("echo", "echo factor=-1 ! ", "factor=-1", "1 to "),
            ("batcher", "", "batch-size=0", "1 to "),
            ("augment", "", "width=0", "1 to "),
            ("cudatrainsink", "", "lr=-0.1", "0 to ")]:
        line = training_line(f"{work}/fm", f"{work}/refused.safetensors", "max-steps=1")
        if name == "echo":
            line = line.replace("imagedec ! ", "imagedec ! " + element)
        elif name == "batcher":
            line = line.replace("batch-size=32", setting)
        elif name == "augment":
            line = line.replace("width=16", setting)
        else:
            line += " " + setting
        refused = subprocess.run([app, line], capture_output=True, text=True, timeout=120)
        prop = setting.split("=")[0]
        check(refused.returncode == 2 and re.search(
            re.escape(f"{name}0: {setting} is out of range: {prop} takes {allowed}")
            + r"[0-9e+.]+\n", refused.stderr)
            and not os.path.exists(f"{work}/refused.safetensors")
            and not refused.stdout,
            f"{setting}: {refused.returncode} {refused.stderr!r} {refused.stdout!r}")
    print("ok: out-of-range values refused with exit status 2")

sys.exit(1 if failures else 0)
