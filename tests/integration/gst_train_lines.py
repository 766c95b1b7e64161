# SPDX-License-Identifier: LGPL-2.1-or-later
"""What a newcomer reads from gst-train, line by line (issue 32):

- a misspelt property or element gets "did you mean ...?", a value an enum
  does not take gets the values it takes, exit status 2 (1 for an element);
  a value that is part of one the enum takes (crop=random) gets it as the
  "did you mean" (issue 43);
- the classes trained on are said at start, with their count and names, and
  a dataset whose classes are named like splits (location one folder too
  high: data/fashion-mnist, not data/fashion-mnist/train) gets a warning;
- a start that fails says why in one error line (no second line from the
  base class saying that no element said why), from gst-train and from
  gst-launch-1.0;
- after a resume the progress lines fall on multiples of stats-interval;
- the README's snippet that loads a checkpoint into PyTorch runs;
- cudatrainsink's description is whole sentences.

Usage: gst_train_lines.py GST-TRAIN DATASET-TOOL SOURCE-DIR
"""
import os
import re
import subprocess
import sys
import tempfile

app, tool, source = sys.argv[1:4]
SECONDS = 300
failures = []


def check(condition, message):
    print(("ok: " if condition else "FAIL: ") + message)
    if not condition:
        failures.append(message)


def run(*args, launcher=None):
    """gst-train ARGS (or LAUNCHER's command line): the CompletedProcess."""
    command = launcher or [app, *args]
    env = dict(os.environ)
    if launcher:
        # gst-launch-1.0 is not instrumented: under ASan the runtime comes
        # first for our plugins to load into it
        env["LD_PRELOAD"] = os.environ.get("GST_TRAIN_TEST_PRELOAD", "")
    return subprocess.run(command, capture_output=True, text=True, env=env,
                          timeout=SECONDS)


def training(data, extra="", size=16):
    return (f"datasetsrc location={data} num-epochs=-1 seed=1 ! imagedec ! "
            f"augment width={size} height={size} seed=1 ! batcher batch-size=16 ! "
            f"cudatrainsink model=resnet20 device=cpu {extra}")


if not os.path.exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"):
    print("SKIP: Debian's dataset-fashion-mnist is not installed")
    sys.exit(77)

with tempfile.TemporaryDirectory() as work:
    fm = f"{work}/fm"
    subprocess.run([tool, "fashion-mnist", "--output", fm, "--limit-train", "200",
                    "--limit-test", "40"], check=True, stdout=subprocess.DEVNULL,
                   timeout=SECONDS)

    # Misspellings: the nearest names, the values an enum takes; nothing runs.
    done = run(training(f"{fm}/train", "max-step=2"))
    check(done.returncode == 2 and "cudatrainsink has no property max-step; did you "
          "mean max-steps?" in done.stderr and not done.stdout,
          f"max-step: 'did you mean max-steps?' ({done.returncode}, {done.stderr!r})")
    done = run(training(f"{fm}/train").replace("model=resnet20", "model=resnet-20"))
    check(done.returncode == 2 and "model=resnet-20 is not a value model takes; did you "
          "mean resnet20? model takes resnet18, resnet34, resnet50, resnet101, resnet20, "
          "resnet32" in done.stderr,
          f"model=resnet-20: the values model takes ({done.returncode}, {done.stderr!r})")
    done = run(training(f"{fm}/train").replace("device=cpu", "device=gpu"))
    check(done.returncode == 2 and "device takes auto, cuda, cpu" in done.stderr
          and "did you mean" not in done.stderr,
          f"device=gpu: the values, and no 'did you mean cpu' ({done.stderr!r})")
    # part of a value, which no edit distance finds: the value it is part of
    done = run(training(f"{fm}/train").replace("augment ", "augment crop=random "))
    check(done.returncode == 2 and "augment: crop=random is not a value crop takes; did "
          "you mean random-resized? crop takes random-resized, center, resize"
          in done.stderr,
          f"crop=random: 'did you mean random-resized?' ({done.returncode}, {done.stderr!r})")
    done = run(training(f"{fm}/train", "lr-schedule=cos"))
    check(done.returncode == 2 and "lr-schedule=cos is not a value lr-schedule takes; did "
          "you mean cosine?" in done.stderr,
          f"lr-schedule=cos: 'did you mean cosine?' ({done.returncode}, {done.stderr!r})")
    done = run(training(f"{fm}/train").replace("imagedec", "imagdec"))
    check(done.returncode == 1 and "no element imagdec; did you mean imagedec?"
          in done.stderr, f"imagdec: 'did you mean imagedec?' ({done.stderr!r})")

    # The classes, said at start; and the folder above the splits.
    done = run(training(f"{fm}/train", "max-steps=1"))
    check(done.returncode == 0 and re.search(
        r"^info from cudatrainsink0: Training resnet20 on 10 classes \(from the dataset: "
        r"0_T-shirt_top, 1_Trouser, .* 9_Ankle_boot\), 200 images an epoch, batches of 16 "
        r"images of 16x16[.;]", done.stderr, re.M) is not None,
        f"the class count line ({done.stderr!r})")
    done = run(training(fm, "max-steps=1"))
    check(done.returncode == 0 and "Training resnet20 on 2 classes (from the dataset: "
          "test, train)" in done.stderr and "warning from cudatrainsink0: The dataset's "
          "classes are named test, train, as a dataset's splits" in done.stderr,
          f"location above the splits: 2 classes and a warning ({done.stderr!r})")

    # One error line for a start that fails.
    empty = f"{work}/empty"
    os.mkdir(empty)
    cases = [("a missing dataset", training(f"{work}/nowhere"), f"{work}/nowhere"),
             ("no class sub-folders", training(empty), "no class sub-folders"),
             # a missing folder is made (issue 43); one that is a file cannot be
             ("a checkpoint folder that is a file", training(
                 f"{fm}/train", f"checkpoint-location={work}/file/x.safetensors "
                 "max-steps=2"), f"{work}/file")]
    with open(f"{work}/file", "w") as f:
        f.write("not a folder\n")
    for what, line, named in cases:
        done = run(line)
        errors = [e for e in done.stderr.splitlines() if e.startswith("error from")]
        check(done.returncode == 1 and len(errors) == 1 and named in errors[0]
              and "proper error message" not in done.stderr,
              f"{what}: one error line ({done.stderr!r})")
    done = run(launcher=["gst-launch-1.0", "datasetsrc", f"location={work}/nowhere", "!",
                         "fakesink"])
    errors = done.stdout.count("ERROR: from element") + done.stderr.count(
        "ERROR: from element")
    check(done.returncode != 0 and errors == 1
          and "proper error message" not in done.stdout + done.stderr,
          f"gst-launch-1.0, a missing dataset: one error ({done.stdout!r} {done.stderr!r})")

    # After a resume the progress lines stay on the multiples of stats-interval.
    checkpoint = f"{work}/aligned.safetensors"
    first = run(training(f"{fm}/train", f"stats-interval=5 max-steps=7 "
                         f"checkpoint-location={checkpoint}"))
    resumed = run("--resume", checkpoint, training(
        f"{fm}/train", f"stats-interval=5 max-steps=17 checkpoint-location={checkpoint}"))
    steps = [int(line.split()[1]) for line in resumed.stdout.splitlines()
             if line.startswith("step ")]
    check(first.returncode == 0 and resumed.returncode == 0 and steps == [10, 15, 17],
          f"progress after a resume at step 7: steps {steps}, not [10, 15, 17] "
          f"({first.stderr!r} {resumed.stderr!r})")

    # The README's snippet, on the checkpoint just written.
    with open(os.path.join(source, "README.md")) as f:
        readme = f.read()
    snippets = [s for s in re.findall(r"```python\n(.*?)```", readme, re.S)
                if "load_safetensors" in s]
    check(len(snippets) == 1, "the README has one snippet that loads a checkpoint")
    if snippets and os.path.exists(checkpoint):
        code = re.sub(r'"build-release/demo/[^"]*\.safetensors"', repr(checkpoint),
                      snippets[0])
        done = subprocess.run(["/usr/bin/python3", "-c", code], cwd=source,
                              capture_output=True, text=True, timeout=SECONDS)
        check(done.returncode == 0 and "step 17" in done.stdout,
              f"the README's snippet loads the checkpoint ({done.stdout!r} "
              f"{done.stderr[-500:]!r})")

    # gst-inspect-1.0: the description ends as a sentence does.
    done = run(launcher=["gst-inspect-1.0", "cudatrainsink"])
    description = re.search(r"^  Description +(.*)$", done.stdout, re.M)
    check(description is not None and description.group(1).endswith("."),
          f"cudatrainsink's description ends with a full stop "
          f"({description.group(1)[-60:] if description else done.stderr!r})")

sys.exit(1 if failures else 0)
