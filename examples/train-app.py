#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The smallest Python application that trains with gst-train (PyGObject).

    examples/train-app.py [--steps N] [--checkpoint FILE] DATASET-FOLDER

Builds the training pipeline from a launch description, runs it, prints one
line per `train-stats` message of cudatrainsink, and after N steps (default
20) or at Ctrl-C stops it cleanly (the sink's "stop" action, and
end-of-stream): the sink finishes the step in flight and writes its final
checkpoint before EOS reaches the bus. Stopped for its steps, it ends one
step after the statistics that reached N (every 5 steps: --steps 10 ends at
step 11), however busy the machine (on_sync_message).
Exit status 0 at EOS, 1 on an error. Needs Debian's python3-gi and
gir1.2-gstreamer-1.0 (run it with /usr/bin/python3), and GST_PLUGIN_PATH
pointing at gst-train's plugins.
"""
import argparse
import signal
import sys
import threading

import gi

gi.require_version("Gst", "1.0")
from gi.repository import GLib, Gst  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--checkpoint", default="train-app.safetensors")
    args = ap.parse_args()

    Gst.init(None)

    def quoted(path):  # a path may hold spaces, quotes or '!'
        return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'

    description = (
        f"datasetsrc location={quoted(args.dataset)} num-epochs=-1 seed=1 ! imagedec "
        "! echo mode=adaptive max-factor=4 ! augment width=32 height=32 "
        "! batcher batch-size=32 ! queue max-size-buffers=2 "
        "! cudatrainsink name=sink model=resnet20 device=auto stats-interval=5 "
        f"checkpoint-location={quoted(args.checkpoint)}")
    try:
        pipeline = Gst.parse_launch(description)
    except GLib.Error as error:
        sys.exit(f"train-app: the pipeline does not parse: {error.message}")

    loop = GLib.MainLoop()
    state = {"status": 0, "stopping": False}
    stop_sent = threading.Event()

    def stop_sink():
        # The sink's "stop" action ends training at the next step: it
        # writes its checkpoint and posts EOS without training on what the
        # queue and echo still hold. Any thread.
        if not stop_sent.is_set():
            stop_sent.set()
            pipeline.get_by_name("sink").emit("stop")

    def stop(why):
        if not state["stopping"]:
            state["stopping"] = True
            print(f"train-app: {why}: sending end-of-stream", flush=True)
            stop_sink()
            # EOS from the sources too, for sinks without the stop action.
            pipeline.send_event(Gst.Event.new_eos())

    def on_sync_message(bus, message):
        # In the thread that posts each message, before the main loop sees
        # it: the statistics that reach the steps asked for (step S) tell
        # the sink to stop as it posts them. It posts them when the batch
        # of step S + 1 has come in, which it then trains, and stops there,
        # whatever the main loop is doing; told from the main loop, it
        # could have gone a step or more further, as far as the loop is late.
        s = message.get_structure()
        if (message.type == Gst.MessageType.ELEMENT and s.get_name() == "train-stats"
                and s.get_value("step") >= args.steps):
            stop_sink()
        return Gst.BusSyncReply.PASS

    def on_message(bus, message):
        if message.type == Gst.MessageType.ELEMENT:
            s = message.get_structure()
            if s.get_name() == "train-stats":
                step = s.get_value("step")
                print(f"step {step} | loss {s.get_value('loss'):.4f} | "
                      f"{s.get_value('images-per-second'):.1f} img/s | data wait "
                      f"{100 * s.get_value('data-wait-fraction'):.0f}%", flush=True)
                if step >= args.steps:
                    stop("enough steps")
        elif message.type == Gst.MessageType.ERROR:
            error, _ = message.parse_error()
            print(f"train-app: error from {message.src.get_name()}: {error.message}",
                  file=sys.stderr)
            state["status"] = 1
            loop.quit()
        elif message.type == Gst.MessageType.EOS:
            print("train-app: end of stream: stopped cleanly", flush=True)
            loop.quit()
        return True

    bus = pipeline.get_bus()
    bus.set_sync_handler(on_sync_message)
    bus.add_watch(GLib.PRIORITY_DEFAULT, on_message)
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGINT,
                         lambda: stop("interrupted") or True)
    if pipeline.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
        message = bus.pop_filtered(Gst.MessageType.ERROR)
        if message:
            on_message(bus, message)
        print("train-app: the pipeline does not start", file=sys.stderr)
        state["status"] = 1
    else:
        loop.run()
    pipeline.set_state(Gst.State.NULL)
    bus.set_sync_handler(None)
    return state["status"]


if __name__ == "__main__":
    sys.exit(main())
