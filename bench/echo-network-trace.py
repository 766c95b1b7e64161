#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""What adaptive echo does with input that comes over a network (issue 41,
part 1): a trace, not a reading of the trainer's statistics.

    bench/echo-network-trace.py [--build build] [--out bench/out/netrace]
                                [--seconds 90] [--step-ms 134] [--rate 160000]
                                [--variants default,one-connection,queue,on-off]
                                [--policy back-pressure|rates]

The Fashion-MNIST training split as 60 WebDataset shards of 1,000 images
(gst-train-dataset), served by Debian's nginx on the loopback with
limit_rate (bench/echo-http-server.sh), read by datasetsrc over HTTP, decoded
and cropped to 16x16 on one thread each, into adaptive echo (at most 8,
1,024 items kept: docs/echo.md's HTTP runs), then a batcher of 128 and a
consumer that takes --step-ms per batch (identity sleep-time behind a
two-batch queue, as the trainer behind `queue max-size-buffers=2`): the
trainer's step without its CPU, so that the machine's load moves neither
side. bench/echo-trace records every item into echo and every emission out.

Variants, each --seconds long, one after the other:

- default: fetch-ahead=2, three connections of --rate bytes/s each;
- one-connection: fetch-ahead=0, one connection of 3 x --rate (the same
  total rate, no shard downloaded ahead into memory);
- queue: the default with a 2,048-item queue between augment and echo;
- on-off: a link that sends --on-off-rate bytes/s for a second, then
  nothing for two (bench/onoff-http-server.py), fetch-ahead=2.

For each: per second, fresh items in, fresh and repeated emissions out, the
items kept (between an item's first emission and its last), the consumer's
share of time without a batch; per item, its emissions against the rate at
which items were arriving when it came (burst or trickle). Writes
OUT/network-trace.json and OUT/network-trace.png; docs/echo.md shows both.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH = 128


def serve(root, workdir, rate, on_off=False):
    """nginx on a free loopback port (bench/echo-http-server.sh), or with
    @on_off the on/off server (bench/onoff-http-server.py, @rate shared by
    all connections for one second in three): (process, port)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    if on_off:
        proc = subprocess.Popen([os.path.join(ROOT, "bench", "onoff-http-server.py"), root,
                                 str(port), str(rate)], stdout=subprocess.DEVNULL)
    else:
        proc = subprocess.Popen([os.path.join(ROOT, "bench", "echo-http-server.sh"), root,
                                 str(port), workdir, str(rate)])
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return proc, port
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.terminate()
                raise SystemExit(f"nginx did not start (see {workdir}/error.log)")
            time.sleep(0.05)


def read_trace(path):
    ins, outs = [], []
    with open(path) as f:
        for line in f:
            p = line.strip().split(",")
            if p[0] == "in":
                ins.append((float(p[1]), p[3]))
            else:
                outs.append((float(p[1]), p[3], int(p[4])))
    return ins, outs


def analyse(ins, outs, step_seconds, settle=10.0):
    """Per-second series and per-item emissions, from @settle seconds on
    (the first shard's fetch and the kept set's first fill do not count)."""
    end = int(outs[-1][0]) if outs else 0
    seconds = list(range(end))
    fresh_in = [0] * end
    fresh_out = [0] * end
    repeats = [0] * end
    for t, _ in ins:
        if int(t) < end:
            fresh_in[int(t)] += 1
    first, last, emissions = {}, {}, {}
    for t, item, n in outs:
        if int(t) < end:
            (repeats if n else fresh_out)[int(t)] += 1
        first.setdefault(item, t)
        last[item] = t
        emissions[item] = emissions.get(item, 0) + 1
    kept = [0] * end
    for item, t0 in first.items():
        for s in range(int(t0) + 1, min(int(last[item]) + 1, end)):
            kept[s] += 1
    capacity = BATCH / step_seconds  # images a second the consumer takes
    idle = [max(0.0, 1 - (fresh_out[s] + repeats[s]) / capacity) for s in seconds]

    # Each item's arrival rate: items in over the second around it.
    arrived = {item: t for t, item in ins}
    window = {}
    for item, t in arrived.items():
        window[item] = fresh_in[int(t)] if int(t) < end else None
    steady = [s for s in seconds if s >= settle]
    mean_in = statistics.mean(fresh_in[s] for s in steady) if steady else 0
    burst, trickle = [], []
    for item, t in arrived.items():
        # an item counts only when all its emissions fit in the run
        if t < settle or item not in emissions or window[item] is None or t > end - 30:
            continue
        (burst if window[item] > 2 * mean_in else trickle
         if window[item] <= mean_in else []).append(emissions[item])
    counted = [emissions[i] for i, t in arrived.items()
               if settle <= t <= end - 30 and i in emissions]

    def hist(values):
        h = {}
        for v in values:
            h[v] = h.get(v, 0) + 1
        return dict(sorted(h.items()))

    total_out = sum(fresh_out[s] + repeats[s] for s in steady)
    total_fresh = sum(fresh_out[s] for s in steady)
    active = [fresh_in[s] for s in steady]
    return {
        "seconds": end,
        "fresh-in-per-second": fresh_in, "fresh-out-per-second": fresh_out,
        "repeats-per-second": repeats, "kept": kept, "consumer-idle": idle,
        "fresh-per-second-mean": round(mean_in, 1),
        "fresh-per-second-p10-p90": [sorted(active)[len(active) // 10],
                                     sorted(active)[len(active) * 9 // 10]] if active else None,
        "seconds-with-over-2x-mean-arrivals": sum(1 for a in active if a > 2 * mean_in),
        "factor": round(total_out / total_fresh, 2) if total_fresh else None,
        "consumer-idle-mean": round(statistics.mean(idle[s] for s in steady), 3) if steady else None,
        "emissions-per-item": hist(counted),
        "emissions-cv": (round(statistics.pstdev(counted) / statistics.mean(counted), 3)
                         if counted else None),
        "burst-items": len(burst),
        "burst-emissions-mean": round(statistics.mean(burst), 2) if burst else None,
        "trickle-items": len(trickle),
        "trickle-emissions-mean": round(statistics.mean(trickle), 2) if trickle else None,
    }


def plot(path, results, order):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(order), 1, figsize=(10, 3.2 * len(order)), sharex=True,
                             squeeze=False)
    axes = axes[:, 0]
    for ax, name in zip(axes, order):
        r = results[name]["stats"]
        xs = list(range(r["seconds"]))
        ax.plot(xs, r["fresh-in-per-second"], label="fresh items in /s", color="tab:blue")
        ax.plot(xs, r["repeats-per-second"], label="repeats out /s", color="tab:orange")
        ax.plot(xs, r["kept"], label="items kept", color="tab:green")
        ax.set_ylabel("items")
        ax.set_title(f"{name}: {results[name]['description']} — emissions per item: "
                     f"burst {r['burst-emissions-mean']}, trickle {r['trickle-emissions-mean']}; "
                     f"consumer idle {r['consumer-idle-mean']}", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].legend(loc="upper right", fontsize=8)
    axes[-1].set_xlabel("seconds")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build-release"))
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "netrace"))
    parser.add_argument("--seconds", type=float, default=90)
    parser.add_argument("--step-ms", type=float, default=134)
    parser.add_argument("--rate", type=int, default=160000,
                        help="limit_rate of each of the default's three connections")
    parser.add_argument("--on-off-rate", type=int, default=1900000,
                        help="on-off: bytes/s of the link while on (one second in three)")
    parser.add_argument("--policy", default="back-pressure", help="echo's policy")
    parser.add_argument("--max-factor", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--variants", default="default,one-connection,queue")
    parser.add_argument("--json", default="")
    args = parser.parse_args()

    os.environ["GST_PLUGIN_PATH_1_0"] = os.path.join(args.build, "gst-plugins")
    tool = os.path.join(args.build, "pipelines", "gst-train-dataset")
    trace = os.path.join(args.build, "bench", "echo-trace")
    os.makedirs(args.out, exist_ok=True)
    data, shards = os.path.join(args.out, "fm"), os.path.join(args.out, "shards")
    if not os.path.isdir(f"{data}/train"):
        subprocess.run([tool, "fashion-mnist", "--output", data], check=True,
                       stdout=subprocess.DEVNULL)
    if not os.path.isdir(shards):
        subprocess.run([tool, "shards", "--input", f"{data}/train", "--output", shards,
                        "--prefix", "train", "--shard-size", "1000"], check=True,
                       stdout=subprocess.DEVNULL)
    n = sum(1 for e in os.scandir(shards) if e.name.endswith(".tar"))
    pattern = f"train-{{000000..{n - 1:06d}}}.tar"
    variants = {
        "on-off": (2, args.on_off_rate, "", "fetch-ahead=2, a link on 1 s, off 2 s"),
        "default": (2, args.rate, "", "fetch-ahead=2, 3 connections"),
        "one-connection": (0, 3 * args.rate, "", "fetch-ahead=0, 1 connection, same total rate"),
        "queue": (2, args.rate, "queue max-size-buffers=2048 max-size-bytes=0 max-size-time=0 ! ",
                  "fetch-ahead=2, a 2,048-item queue before echo"),
    }
    results = {}
    with open("/proc/cpuinfo") as f:
        cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    for name in args.variants.split(","):
        fetch_ahead, rate, queue, description = variants[name]
        proc, port = serve(shards, os.path.join(args.out, f"nginx-{name}"), rate,
                           on_off=name == "on-off")
        try:
            line = (f"datasetsrc location=\"http://127.0.0.1:{port}/{pattern}\" num-classes=10 "
                    f"fetch-ahead={fetch_ahead} num-epochs=-1 seed={args.seed} ! "
                    "imagedec n-threads=1 ! augment width=16 height=16 scale-min=0.7 "
                    f"ratio-min=0.8 ratio-max=1.25 n-threads=1 seed={args.seed} ! {queue}"
                    f"echo name=echo mode=adaptive max-factor={args.max_factor} "
                    + (f"policy={args.policy} " if args.policy != "back-pressure" else "") +
                    f"shuffle-buffer-size=1024 seed={args.seed} ! batcher batch-size={BATCH} ! "
                    "queue max-size-buffers=2 ! "
                    f"identity sleep-time={round(args.step_ms * 1000)} ! fakesink sync=false")
            path = os.path.join(args.out, f"trace-{name}.csv")
            load = [os.getloadavg()[0]]
            subprocess.run([trace, "--seconds", str(args.seconds), path, line], check=True)
            load.append(os.getloadavg()[0])
        finally:
            proc.terminate()
            proc.wait()
        stats = analyse(*read_trace(path), args.step_ms / 1000)
        results[name] = {"description": description, "fetch-ahead": fetch_ahead,
                         "limit-rate": rate, "load": load, "stats": stats}
        brief = {k: v for k, v in stats.items() if not isinstance(v, list) or len(v) < 5}
        print(f"{name}: {json.dumps(brief)}", flush=True)
    record = {"cpu": cpu, "policy": args.policy, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "seconds": args.seconds, "step-ms": args.step_ms, "max-factor": args.max_factor,
              "seed": args.seed, "variants": results}
    out_json = args.json or os.path.join(args.out, "network-trace.json")
    with open(out_json, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    plot(os.path.join(args.out, "network-trace.png"), results, list(results))
    print(f"wrote {out_json} and {os.path.join(args.out, 'network-trace.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
