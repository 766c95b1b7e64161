# SPDX-License-Identifier: LGPL-2.1-or-later
"""Every element survives a playing pipeline dropped without NULL.

GStreamer asks an application to set a pipeline to NULL before it lets go
of it; Python's garbage collector lets go of a playing one whenever an
exception unwinds the function that held it. For each element (echo in
both modes) a child interpreter plays a pipeline with a queue after the
element, raises once buffers reach the sink, and so drops the pipeline
while its threads run. The child must then end as any uncaught exception
ends it: status 1 and the traceback, never a signal, and no CRITICAL on
stderr but GStreamer's own about the bins it found still playing; our
elements warn instead, and stop.

Run alone, `test_dispose.py --child NAME` is that child, for gdb or
valgrind."""

import gc
import os
import re
import subprocess
import sys
import time
import unittest

DECODED = "datasetsrc location={root} num-epochs=-1 ! imagedec"
AUGMENTED = DECODED + " ! augment width=16 height=16"
BATCHES = AUGMENTED + " ! batcher batch-size=4"
# After the element under test, as in the report; the sink counts buffers.
TAIL = "queue ! fakesink name=sink"

# case: the launch line up to the element under test, and what follows it
CASES = {
    "datasetsrc": ("datasetsrc location={root} num-epochs=-1", TAIL),
    "imagedec": (DECODED, TAIL),
    "augment": (AUGMENTED, TAIL),
    "echo-fixed": (DECODED + " ! echo mode=fixed shuffle-buffer-size=8", TAIL),
    "echo-adaptive": (DECODED + " ! echo mode=adaptive shuffle-buffer-size=8",
                      TAIL),
    "batcher": (BATCHES, TAIL),
    # nothing after a sink: it counts the buffers itself
    "cudatrainsink": (BATCHES + " ! cudatrainsink name=cudatrainsink0 "
                      "model=resnet20 device=cpu num-threads=1 "
                      "stats-interval=0", None),
}
BUFFERS = 6  # at the sink before the child raises
SURVIVE_S = 1.0  # the child lives on this long after dropping the pipeline


class RaisedMidRun(Exception):
    pass


def child(name):
    """Plays the case's pipeline, raises once BUFFERS reached the sink;
    after the traceback, drops the pipeline with the interpreter still
    whole and lives on for a while, so that a thread left running on a
    freed element shows as a crash."""
    import atexit
    import gi
    gi.require_version("Gst", "1.0")
    from gi.repository import Gst
    from loader_fixture import make_dataset

    Gst.init(None)
    root = make_dataset(classes=2, per_class=8, size=(40, 32))
    kept = []  # the core elements after the element under test

    def drop_after_traceback():
        # Python keeps the traceback (and with it the frame that holds the
        # pipeline) in sys.last_* until the interpreter goes; let it go
        # here, as it goes at once for an exception that was caught.
        sys.last_traceback = sys.last_value = sys.last_type = None
        gc.collect()
        time.sleep(SURVIVE_S)
        print("survived the drop", file=sys.stderr, flush=True)
        for element in kept:
            element.set_state(Gst.State.NULL)

    atexit.register(drop_after_traceback)

    def play_and_raise():
        head, tail = CASES[name]
        pipeline = Gst.Pipeline.new("dropped")
        head = Gst.parse_bin_from_description(
            head.format(root=root), tail is not None)
        pipeline.add(head)
        if tail is not None:
            # GStreamer's own elements survive being dropped while they run
            # no better than ours did (queue's task goes on over the freed
            # queue when it was pushing at that moment): the child keeps
            # them, so that the pipeline drops the elements under test
            # alone while the queue and sink after them still play, and
            # stops them itself afterwards.
            tail = Gst.parse_bin_from_description(tail, True)
            pipeline.add(tail)
            head.link(tail)
            kept.append(tail)
        sink = pipeline.get_by_name("sink" if kept else "cudatrainsink0")
        del head, tail
        pipeline.set_state(Gst.State.PLAYING)
        bus = pipeline.get_bus()
        # The sink's count, read from here: no Python code runs in the
        # streaming threads, which would hold them waiting for this
        # thread's interpreter lock when the pipeline goes.
        while sink.get_property("stats").get_uint64("rendered")[1] < BUFFERS:
            # popped, so that the messages' references to their sources go
            message = bus.timed_pop_filtered(
                20 * Gst.MSECOND, Gst.MessageType.ERROR | Gst.MessageType.EOS)
            if message is not None:
                sys.exit(f"{name}: {message.type.first_value_nick} before "
                         f"{BUFFERS} buffers")
        del bus, sink
        raise RaisedMidRun(f"{name}: raised with the pipeline playing")

    play_and_raise()


# GStreamer's CRITICAL for an element that is not in NULL when disposed,
# and the element it names
DISPOSE_CRITICAL = re.compile(
    r"GStreamer-CRITICAL \*\*: [0-9:.]+: \n"
    r"Trying to dispose element (\S+), but it is in \w+")
OURS = ("datasetsrc", "imagedec", "augment", "echo", "batcher",
        "cudatrainsink")


class DropPlaying(unittest.TestCase):
    def check(self, name):
        # GStreamer's CRITICALs for the bins are expected: not fatal here
        env = dict(os.environ, GST_DEBUG="0")
        env.pop("G_DEBUG", None)
        try:
            result = subprocess.run(
                [sys.executable, __file__, "--child", name], env=env,
                capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired as e:
            self.fail(f"{name}: the child hung after the drop\n{e.stderr}")
        err = result.stderr
        self.assertEqual(result.returncode, 1,
                         f"{name}: child ended with {result.returncode} "
                         f"(negative: a signal)\n{err}")
        self.assertIn("Traceback (most recent call last)", err, err)
        self.assertIn(f"RaisedMidRun: {name}: raised with the pipeline "
                      "playing", err, err)
        self.assertIn("survived the drop", err, err)
        # our elements go to NULL before GStreamer's dispose looks at them;
        # the bins that held them (the pipeline too) still draw its CRITICAL
        core = DISPOSE_CRITICAL.findall(err)
        self.assertTrue(core, f"{name}: the pipeline was not dropped\n{err}")
        for element in core:
            self.assertFalse(element.startswith(OURS),
                             f"{name}: {element} was disposed playing\n{err}")
        others = err.count("CRITICAL") - len(core)
        self.assertEqual(others, 0, f"{name}: other CRITICALs\n{err}")
        self.assertIn("disposed in the PLAYING state", err, err)


# A script that ends just after PLAYING (issue 43): the batcher's first
# buffer, allocated from a streaming thread, loaded the CUDA module (and
# cuBLAS, whose constructor crashed against the exiting interpreter's
# handlers) even on a machine without the NVIDIA driver.
EARLY_EXIT = ("datasetsrc location={root} num-epochs=-1 ! imagedec ! "
              "augment width=16 height=16 ! batcher batch-size=4 ! "
              "cudatrainsink model=resnet20 device=auto num-threads=1 "
              "stats-interval=0")
EARLY_EXIT_RUNS = 8


def early_exit_child(root):
    import gi
    gi.require_version("Gst", "1.0")
    from gi.repository import Gst

    Gst.init(None)
    pipeline = Gst.parse_launch(EARLY_EXIT.format(root=root))
    pipeline.set_state(Gst.State.PLAYING)
    time.sleep(0.05)
    sys.exit(0)


class EarlyExit(unittest.TestCase):
    def test_exit_just_after_playing(self):
        from loader_fixture import make_dataset

        root = make_dataset(classes=2, per_class=8, size=(40, 32))
        env = dict(os.environ, GST_DEBUG="0")
        env.pop("G_DEBUG", None)
        for run in range(EARLY_EXIT_RUNS):
            result = subprocess.run(
                [sys.executable, __file__, "--early-exit", root], env=env,
                capture_output=True, text=True, timeout=120)
            self.assertEqual(result.returncode, 0,
                             f"run {run}: the child ended with "
                             f"{result.returncode} (negative: a signal)\n"
                             f"{result.stderr}")


def add_case(name):
    setattr(DropPlaying, "test_" + name.replace("-", "_"),
            lambda self: self.check(name))


for case in CASES:
    add_case(case)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "--early-exit":
        early_exit_child(sys.argv[2])
    else:
        unittest.main()
