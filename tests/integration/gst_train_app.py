"""gst-train, the application, end to end: Ctrl-C in the middle of training
ends the run cleanly with a checkpoint that torchvision loads (strict=True),
--dot-dir writes dot files that graphviz parses, --summary, and the exit
statuses (0, 1 with the error on stderr, 2 for bad usage).

Usage: gst_train_app.py GST-TRAIN DATASET-TOOL SOURCE-DIR
"""
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile

app, tool, source = sys.argv[1:4]
sys.path.insert(0, os.path.join(source, "tests", "trainer"))
import torch_reference  # noqa: E402  (Debian's torch, the oracle)

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message)


def training_line(data, checkpoint, extra=""):
    return (f"datasetsrc location={data}/train num-epochs=-1 seed=1 ! imagedec ! "
            f"augment width=16 height=16 seed=1 ! batcher batch-size=32 ! "
            f"cudatrainsink model=resnet20 device=cpu stats-interval=1 "
            f"checkpoint-location={checkpoint} {extra}")


with tempfile.TemporaryDirectory() as work:
    if not os.path.exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"):
        print("SKIP: Debian's dataset-fashion-mnist is not installed")
        sys.exit(77)
    subprocess.run([tool, "fashion-mnist", "--output", f"{work}/fm", "--limit-train", "300",
                    "--limit-test", "10"], check=True, stdout=subprocess.DEVNULL)

    # Ctrl-C after a few steps: EOS, the final checkpoint, exit status 0.
    checkpoint = f"{work}/interrupted.safetensors"
    process = subprocess.Popen([app, training_line(f"{work}/fm", checkpoint)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    steps_seen = 0
    for line in process.stdout:
        if line.startswith("step "):
            steps_seen = int(line.split()[1])
            if steps_seen >= 3:
                process.send_signal(signal.SIGINT)
                break
    out, err = process.communicate(timeout=300)
    check(steps_seen >= 3, f"no progress lines before the interrupt: {err}")
    check(process.returncode == 0, f"Ctrl-C: exit status {process.returncode}: {err}")
    check("interrupt" in err, f"Ctrl-C was not acknowledged: {err}")
    check(os.path.exists(checkpoint), "Ctrl-C left no checkpoint")
    if os.path.exists(checkpoint):
        tensors, metadata = torch_reference.load_safetensors(checkpoint)
        step = int(metadata["gst_train.step"])
        check(step >= steps_seen, f"checkpoint at step {step}, saw {steps_seen}")
        state = {k: v for k, v in tensors.items() if not k.startswith("optimizer.")}
        model = torch_reference.build_model("resnet20", 10)
        try:
            model.load_state_dict(state, strict=True)
            print(f"ok: interrupted at step {step}; torchvision loads the checkpoint")
        except RuntimeError as error:
            check(False, f"torchvision does not load the checkpoint: {error}")

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
        rendered = subprocess.run(["dot", "-Tsvg", path], capture_output=True)
        check(rendered.returncode == 0 and b"<svg" in rendered.stdout,
              f"graphviz cannot read {path}: {rendered.stderr[:200]}")
    if files:
        print(f"ok: {len(files)} dot files, graphviz reads them all")
    with open(summary) as f:
        data = json.load(f)
    check(data["exit-status"] == 0 and data["last-train-stats"]["step"] == 2,
          f"summary: {data}")

    # Exit statuses.
    usage = subprocess.run([app], capture_output=True, text=True)
    check(usage.returncode == 2 and "no pipeline" in usage.stderr,
          f"no arguments: {usage.returncode} {usage.stderr}")
    bad = subprocess.run([app, "nosuchelement ! fakesink"], capture_output=True, text=True)
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

sys.exit(1 if failures else 0)
