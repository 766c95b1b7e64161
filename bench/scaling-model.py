#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""An analytic model of data-parallel ResNet-50 training on H200s: how much
of the single-GPU rate survives at N GPUs, with gradients all-reduced in
buckets overlapped with the backward pass, and stragglers.

    bench/scaling-model.py [--markdown] [--check] [assumption options]

Every assumption is an option with its default; --help lists them. The
defaults are assumptions, not measurements: no GPU was available to measure
the single-GPU step time, the NCCL bandwidths or the overlap, and the model
says how to replace them (docs/distributed-scaling.md).

Model, per training step of one rank (time 0 = start of the backward pass):
  * the step is forward (+ loss, optimizer) and backward; backward takes
    --backward-share of it;
  * the backward pass runs over ResNet-50's parameter tensors in reverse
    order (fc first, the stem last); each tensor's gradient is ready when
    its layer's backward ends; a layer's backward time is proportional to
    its forward multiply-adds at 224x224 (computed here from the
    architecture);
  * the flat gradient buffer is cut, from its end (reverse layer order),
    into buckets of --bucket-mb MiB; a bucket's all-reduce may start when
    all of its gradients are ready; buckets queue on one communication
    stream, each paying --bucket-overhead-us;
  * exposed communication = the time after the backward pass ends until the
    last bucket is reduced; NCCL's kernels hold SMs while they run, so the
    backward pass slows by --comm-slowdown while a collective overlaps it;
  * stragglers: each rank's compute time is normal with coefficient of
    variation --straggler-cv; a step waits for the slowest of N, whose
    expected time is mean * (1 + cv * E[max of N standard normals]),
    computed by numeric integration;
  * efficiency = single-GPU step time / distributed step time.

Exit status of --check: 0 when every self-consistency assertion holds, 1
otherwise.
"""
import argparse
import functools
import math
import sys
import textwrap

RESNET50_PARAMS = 25557032
MIB = 1 << 20

# ----------------------------------------------------------------------------
# ResNet-50 (torchvision, v1.5: the stride of a bottleneck is on its 3x3)


def resnet50_tensors(image=224, classes=1000):
    """Parameter groups in torchvision's module order (the order of the flat
    parameter buffer): (name, parameters, forward multiply-adds per image).
    A convolution's group is its weight; a batch norm's its weight and bias
    (its forward counted as one multiply-add per output element); the fc's
    its weight and bias."""
    out = []

    def conv(name, cin, cout, k, stride, size):
        pad = k // 2
        size_out = (size + 2 * pad - k) // stride + 1
        params = k * k * cin * cout
        out.append((name, params, params * size_out * size_out))
        return size_out

    def bn(name, c, size):
        out.append((name, 2 * c, c * size * size))

    size = conv("conv1", 3, 64, 7, 2, image)
    bn("bn1", 64, size)
    size = (size + 2 - 3) // 2 + 1  # max pool 3x3, stride 2, padding 1
    cin = 64
    for li, (blocks, width) in enumerate(zip([3, 4, 6, 3],
                                             [64, 128, 256, 512])):
        for b in range(blocks):
            stride = 2 if (b == 0 and li > 0) else 1
            p = "layer%d.%d." % (li + 1, b)
            s1 = conv(p + "conv1", cin, width, 1, 1, size)
            bn(p + "bn1", width, s1)
            s2 = conv(p + "conv2", width, width, 3, stride, s1)
            bn(p + "bn2", width, s2)
            s3 = conv(p + "conv3", width, width * 4, 1, 1, s2)
            bn(p + "bn3", width * 4, s3)
            if b == 0:
                sd = conv(p + "downsample.0", cin, width * 4, 1, stride, size)
                bn(p + "downsample.1", width * 4, sd)
            cin = width * 4
            size = s3
    out.append(("fc", cin * classes + classes, cin * classes))
    return out


def conv_fc_macs(tensors):
    return sum(m for name, p, m in tensors
               if "bn" not in name and "downsample.1" not in name)


def stage_of(name):
    if name.startswith("layer"):
        return name.split(".")[0]
    return "fc" if name == "fc" else "stem"


# ----------------------------------------------------------------------------
# Stragglers: expected maximum of N standard normal draws

_emax_cache = {}


def expected_max_normal(n):
    """E[max of n independent N(0,1)] = int x n phi(x) Phi(x)^(n-1) dx,
    by Simpson's rule on [-10, 10]."""
    if n <= 1:
        return 0.0
    if n in _emax_cache:
        return _emax_cache[n]
    lo, hi, steps = -10.0, 10.0, 8000
    h = (hi - lo) / steps
    total = 0.0
    for i in range(steps + 1):
        x = lo + i * h
        phi = math.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
        cdf = 0.5 * (1 + math.erf(x / math.sqrt(2)))
        f = x * n * phi * cdf ** (n - 1)
        w = 1 if i in (0, steps) else (4 if i % 2 else 2)
        total += w * f
    value = total * h / 3
    _emax_cache[n] = value
    return value


def simpson(f, lo, hi, steps=4000):
    h = (hi - lo) / steps
    total = f(lo) + f(hi)
    for i in range(1, steps):
        total += (4 if i % 2 else 2) * f(lo + i * h)
    return total * h / 3


@functools.lru_cache(maxsize=None)
def expected_max_shifted(n, shift):
    """E[max] of n-1 draws of N(0,1) and one of N(shift,1), from the CDF
    F(x) = Phi(x)^(n-1) Phi(x - shift): int_0^inf (1-F) - int_-inf^0 F."""
    def cdf(x):
        return ((0.5 * (1 + math.erf(x / math.sqrt(2)))) ** (n - 1)
                * 0.5 * (1 + math.erf((x - shift) / math.sqrt(2))))
    return (simpson(lambda x: 1 - cdf(x), 0.0, 10.0 + shift)
            - simpson(cdf, -10.0, 0.0))


def straggler_factor(a, n):
    """Expected compute time of the slowest of n ranks over the mean of
    one: per-step normal jitter (--straggler-cv), plus one rank that is
    consistently --slow-rank slower (a throttled GPU)."""
    if n <= 1:
        return 1.0
    if a.slow_rank > 0:
        if a.straggler_cv == 0:
            return 1 + a.slow_rank
        return 1 + a.straggler_cv * expected_max_shifted(
            n, a.slow_rank / a.straggler_cv)
    if a.straggler_method == "approx":
        e = math.sqrt(2 * math.log(n))
    else:
        e = expected_max_normal(n)
    return 1 + a.straggler_cv * e


def hiccup_s(a, n):
    """Expected extra time per step from rare long stalls (a page fault, a
    log write, a daemon): each rank independently with probability
    --hiccup-prob per step for --hiccup-ms. The single-GPU step already
    contains its own share."""
    p = a.hiccup_prob
    return ((1 - (1 - p) ** n) - p) * a.hiccup_ms / 1000


# ----------------------------------------------------------------------------
# All-reduce time of one message (seconds)

ALGORITHMS = ["ring", "ring-multirail", "hierarchical", "tree", "best"]


def topology(a, n):
    g = min(n, a.gpus_per_node)
    m = -(-n // a.gpus_per_node)  # nodes
    return g, m


def allreduce_time(a, nbytes, n, algorithm=None):
    """Seconds for one all-reduce of nbytes over n ranks. Bandwidths are
    NCCL-tests bus bandwidths: an all-reduce moves 2(n-1)/n x bytes through
    each rank's bottleneck link, a reduce-scatter or all-gather (n-1)/n."""
    algorithm = algorithm or a.algorithm
    if n <= 1 or nbytes <= 0:
        return 0.0
    nvl = a.nvlink_busbw * 1e9
    ib = a.ib_bw * 1e9  # per GPU (one NIC per GPU)
    lat_nvl = a.nvlink_latency_us * 1e-6
    lat_ib = a.ib_latency_us * 1e-6
    g, m = topology(a, n)
    if m == 1:
        # Inside one node every algorithm is NCCL's NVLink ring.
        return 2 * (g - 1) / g * nbytes / nvl + 2 * (g - 1) * lat_nvl
    if algorithm == "ring":
        # Textbook single ring over all n GPUs: the slowest hop is one
        # GPU's NIC, and each of the 2(n-1) steps waits for it.
        return 2 * (n - 1) / n * nbytes / min(ib, nvl) + 2 * (n - 1) * lat_ib
    if algorithm == "ring-multirail":
        # NCCL's rings: one channel per NIC, so a node's whole IB bandwidth
        # is used, but still 2(n-1) steps of latency.
        bw = min(a.gpus_per_node * ib, nvl)
        return 2 * (n - 1) / n * nbytes / bw + 2 * (n - 1) * lat_ib
    if algorithm == "hierarchical":
        # Reduce-scatter in the node over NVLink, ring all-reduce of 1/g of
        # the data among the m GPUs of the same local rank over their NICs,
        # all-gather in the node; the three phases one after another.
        rs = (g - 1) / g * nbytes / nvl + (g - 1) * lat_nvl
        inter = (2 * (m - 1) / m * (nbytes / g) / ib
                 + 2 * (m - 1) * lat_ib)
        return 2 * rs + inter
    if algorithm == "tree":
        # NCCL's double binary tree between nodes, chains inside them,
        # pipelined (approximate): each node sends and receives 2 x bytes
        # over its NICs; latency 2 log2(m) inter-node hops and 2(g-1)
        # NVLink hops.
        bw_time = max(2 * nbytes / (a.gpus_per_node * ib),
                      2 * (g - 1) / g * nbytes / nvl)
        return (bw_time + 2 * math.ceil(math.log2(m)) * lat_ib
                + 2 * (g - 1) * lat_nvl)
    if algorithm == "best":
        # What NCCL's tuner approximates: the fastest per message.
        return min(allreduce_time(a, nbytes, n, x)
                   for x in ("ring-multirail", "hierarchical", "tree"))
    raise ValueError(algorithm)


# ----------------------------------------------------------------------------
# One step


class Model:
    def __init__(self, a):
        self.a = a
        self.tensors = resnet50_tensors()
        total_macs = sum(m for _, _, m in self.tensors)
        # Backward order: reverse of the module order (the flat buffer cut
        # from its end). ready[i]: fraction of the backward pass done when
        # reversed tensor i's gradient is ready.
        self.reverse = list(reversed(self.tensors))
        done = 0.0
        self.ready = []
        for _, _, m in self.reverse:
            done += m / total_macs
            self.ready.append(done)
        self.ready[-1] = 1.0
        self._buckets = {}

    def grad_bytes_per_param(self):
        return 2 if self.a.grad_dtype == "bf16" else 4

    def step_s(self):
        a = self.a
        if a.step_ms:
            return a.step_ms / 1000
        return a.batch / a.images_per_s

    def buckets(self, bucket_mb, names=False):
        """(bytes, ready fraction) per bucket, in the order they are cut:
        buckets of bucket_mb MiB from the end of the flat buffer (the fc),
        the remainder last; with --tail-bucket-mb, the last tail MiB of
        the reversed buffer (the stem's end) are a bucket of their own.
        names: (bytes, ready, first tensor, last tensor)."""
        bpp = self.grad_bytes_per_param()
        cap = max(1, int(bucket_mb * MIB))
        total = sum(p for _, p, _ in self.reverse) * bpp
        tail = min(total, int(self.a.tail_bucket_mb * MIB))
        out = []
        fill = 0
        pos = 0
        ready = 0.0
        first = name = None
        # A tensor may straddle two buckets; a bucket is ready when the
        # last tensor with bytes in it is (ready times grow along the
        # reversed buffer).
        for (name, params, _), ready in zip(self.reverse, self.ready):
            left = params * bpp
            while left > 0:
                limit = cap
                if tail and pos < total - tail:
                    limit = min(cap, total - tail - pos + fill)
                take = min(left, limit - fill)
                if fill == 0:
                    first = name
                fill += take
                left -= take
                pos += take
                if fill == limit:
                    out.append((fill, ready, first, name))
                    fill = 0
        if fill:
            out.append((fill, ready, first, name))
        return out if names else [b[:2] for b in out]

    def schedule(self, n, bucket_mb, bwd):
        """Bucket all-reduces on one stream, gradients ready along a
        backward pass of bwd seconds: (start, end) per bucket."""
        a = self.a
        out = []
        free = 0.0
        if bucket_mb not in self._buckets:
            self._buckets[bucket_mb] = self.buckets(bucket_mb)
        for nbytes, ready in self._buckets[bucket_mb]:
            start = max(ready * bwd, free) + a.bucket_overhead_us * 1e-6
            dur = allreduce_time(a, nbytes, n)
            if a.grad_dtype == "bf16":
                # fp32 -> bf16 before, bf16 -> fp32 after: 12 bytes of
                # memory traffic per parameter.
                dur += (nbytes // 2) * 12 / (a.hbm_bw * 1e9)
            free = start + dur
            out.append((start, free))
        return out

    def evaluate(self, n, bucket_mb):
        """Dict with the distributed step time and its parts (seconds)."""
        a = self.a
        t1 = self.step_s()
        s = straggler_factor(a, n)
        bwd = a.backward_share * t1 * s
        rest = (1 - a.backward_share) * t1 * s
        sched = []
        stretch = 0.0
        if n > 1:
            # The backward pass slows by comm_slowdown while a collective
            # runs beside it, which delays the gradients, which moves the
            # collectives: iterate to the fixed point (the slowdown spread
            # evenly over the pass).
            for _ in range(20):
                sched = self.schedule(n, bucket_mb, bwd + stretch)
                overlap = sum(max(0.0, min(e, bwd + stretch) - st)
                              for st, e in sched)
                new = a.comm_slowdown * overlap
                if abs(new - stretch) < 1e-9:
                    break
                stretch = new
        bwd_end = bwd + stretch
        last_end = sched[-1][1] if sched else 0.0
        exposed = max(0.0, last_end - bwd_end)
        control = 0.0
        if n > 1 and a.control_allreduces:
            control = a.control_allreduces * (
                allreduce_time(a, 8, n) + a.bucket_overhead_us * 1e-6)
        data = a.data_wait_ms / 1000 if n > 1 else 0.0
        tn = rest + bwd_end + exposed + control + data + hiccup_s(a, n)
        return {
            "t1": t1, "tn": tn, "eff": t1 / tn, "straggle": s,
            "exposed": exposed, "stretch": stretch,
            "busy": sum(e - st for st, e in sched),
            "buckets": len(sched), "control": control,
            "images_per_s": n * a.batch / tn,
        }


def best_bucket(a, n, grid=None):
    model = Model(a)
    grid = grid or [x / 2 for x in range(1, 401)]  # 0.5 .. 200 MiB
    best = max(grid, key=lambda mb: model.evaluate(n, mb)["eff"])
    return best, model.evaluate(n, best)


# ----------------------------------------------------------------------------
# Options


# The assumptions and what the report shows, group by group: (option,
# default, help[, choices]); an option takes the type of its default.
OPTIONS = [
    ("model and step (assumptions to replace with a measured single-H200 "
     "step)", [
        ("--batch", 256, "images per GPU"),
        ("--images-per-s", 2900.0,
         "assumed single-H200 ResNet-50 bf16 training rate at --batch (not "
         "measured)"),
        ("--step-ms", 0.0,
         "single-GPU step time; 0: --batch / --images-per-s"),
        ("--backward-share", 2 / 3, "share of the step in the backward pass"),
        ("--grad-dtype", "fp32", "dtype the gradients are reduced in",
         ["fp32", "bf16"]),
        ("--hbm-bw", 4000.0, "achievable HBM GB/s, for the bf16 casts"),
    ]),
    ("network", [
        ("--gpus-per-node", 8, "GPUs per node, one NIC each"),
        ("--nvlink-busbw", 370.0,
         "achievable NCCL all-reduce bus bandwidth inside a node, GB/s "
         "(NVLink 4: 900 GB/s aggregate)"),
        ("--ib-bw", 40.0,
         "achievable inter-node GB/s per GPU (one 400 Gb/s NDR NIC per GPU: "
         "50 GB/s line rate)"),
        ("--nvlink-latency-us", 5.0, "per ring step inside a node"),
        ("--ib-latency-us", 10.0, "per ring step between nodes"),
        ("--bucket-overhead-us", 10.0, "per bucket: NCCL launch, event wait"),
        ("--algorithm", "hierarchical",
         "ring: one ring over all GPUs; ring-multirail: NCCL's rings, one per "
         "NIC; hierarchical: in-node reduce-scatter, inter-node ring, in-node "
         "all-gather; tree: NCCL's double binary tree (approximate); best: "
         "the fastest per bucket", ALGORITHMS),
        ("--comm-slowdown", 0.1,
         "fraction the backward pass slows while a collective runs beside it "
         "(NCCL holds SMs)"),
        ("--control-allreduces", 0,
         "separate small all-reduces per step (loss, NaN flag); 0: "
         "piggybacked on the last bucket"),
    ]),
    ("stragglers and input", [
        ("--straggler-cv", 0.005,
         "coefficient of variation of a rank's step time"),
        ("--slow-rank", 0.0, "one rank consistently this fraction slower"),
        ("--hiccup-prob", 0.0,
         "probability per rank and step of a long stall"),
        ("--hiccup-ms", 10.0, "length of such a stall"),
        ("--straggler-method", "exact",
         "E[max of N normals] by integration, or sqrt(2 ln N)",
         ["exact", "approx"]),
        ("--data-wait-ms", 0.0,
         "input wait per step of the slowest rank (0 when the input keeps up: "
         "echo's job)"),
    ]),
    ("report", [
        ("--gpus", "1,8,16,32,64,128,256,512", None),
        ("--bucket-sizes", "1,5,10,25,50,100",
         "MiB (2^20 bytes), as PyTorch's bucket_cap_mb"),
        ("--tail-bucket-mb", 0.0,
         "a bucket of its own for the last MiB of the reversed buffer (stem, "
         "layer1); 0: none"),
        ("--bucket-mb", 25.0, "bucket-size-mb for the single-size tables"),
        ("--target", 0.96, None),
        ("--at", 256, "GPU count the goal is set at"),
    ]),
]


def parser():
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add = p.add_argument
    add("--markdown", action="store_true", help="print Markdown tables")
    add("--check", action="store_true",
        help="self-consistency assertions only (CI); exit 0 or 1")
    for title, options in OPTIONS:
        g = p.add_argument_group(title)
        for name, default, text, *choices in options:
            kind = type(default)
            g.add_argument(name, default=default, help=text,
                           type=None if kind is str else kind,
                           choices=choices[0] if choices else None)
    return p


def with_(a, **kw):
    b = argparse.Namespace(**vars(a))
    for k, v in kw.items():
        setattr(b, k, v)
    return b


# ----------------------------------------------------------------------------
# Output


class Out:
    def __init__(self, markdown, stream=sys.stdout):
        self.md = markdown
        self.f = stream

    def heading(self, text):
        if self.md:
            print("\n### %s\n" % text, file=self.f)
        else:
            print("\n== %s ==\n" % text, file=self.f)

    def text(self, text):
        print(textwrap.fill(text, 76, break_on_hyphens=False) if text
              else "", file=self.f)

    def table(self, head, rows):
        rows = [[str(c) for c in r] for r in rows]
        if self.md:
            print("| " + " | ".join(head) + " |", file=self.f)
            print("|" + "|".join("---:" if i else "---"
                                 for i in range(len(head))) + "|",
                  file=self.f)
            for r in rows:
                print("| " + " | ".join(r) + " |", file=self.f)
        else:
            widths = [max(len(h), *(len(r[i]) for r in rows))
                      for i, h in enumerate(head)]
            print("  ".join(h.rjust(w) for h, w in zip(head, widths)),
                  file=self.f)
            for r in rows:
                print("  ".join(c.rjust(w) for c, w in zip(r, widths)),
                      file=self.f)
        print(file=self.f)


def pct(x):
    return "%.1f%%" % (100 * x)


def sensitivity_cases(a):
    return [
        ("defaults", a),
        ("bf16 gradients", with_(a, grad_dtype="bf16")),
        ("IB 2x slower (20 GB/s per GPU)", with_(a, ib_bw=a.ib_bw / 2)),
        ("IB 2x slower, bf16 gradients",
         with_(a, ib_bw=a.ib_bw / 2, grad_dtype="bf16")),
        ("IB 4x slower (10 GB/s per GPU)", with_(a, ib_bw=a.ib_bw / 4)),
        ("latencies 2x", with_(a, ib_latency_us=2 * a.ib_latency_us,
                               nvlink_latency_us=2 * a.nvlink_latency_us)),
        ("straggler CV 1%", with_(a, straggler_cv=0.01)),
        ("straggler CV 2%", with_(a, straggler_cv=0.02)),
        ("straggler CV 5%", with_(a, straggler_cv=0.05)),
        ("no stragglers (CV 0)", with_(a, straggler_cv=0.0)),
        ("one GPU 2% slower every step", with_(a, slow_rank=0.02)),
        ("10 ms stall, 1 in 10,000 rank-steps",
         with_(a, hiccup_prob=1e-4, hiccup_ms=10.0)),
        ("10 ms stall, 1 in 1,000 rank-steps",
         with_(a, hiccup_prob=1e-3, hiccup_ms=10.0)),
        ("step 2x faster (MLPerf-class kernels)",
         with_(a, images_per_s=2 * a.images_per_s)),
        ("batch 128 per GPU", with_(a, batch=128)),
        ("batch 32 per GPU (as Goyal, IBM), same images/s",
         with_(a, batch=32)),
        ("flat single ring", with_(a, algorithm="ring")),
        ("NCCL multi-rail ring", with_(a, algorithm="ring-multirail")),
        ("NCCL tree", with_(a, algorithm="tree")),
        ("best of NCCL's per bucket", with_(a, algorithm="best")),
        ("no comm slowdown", with_(a, comm_slowdown=0.0)),
        ("comm slowdown 30%", with_(a, comm_slowdown=0.30)),
        ("separate loss/NaN all-reduce", with_(a, control_allreduces=1)),
        ("1 MiB tail bucket of its own", with_(a, tail_bucket_mb=1.0)),
        ("data wait 1 ms per step", with_(a, data_wait_ms=1.0)),
    ]


ROUND_SIZES = [5, 10, 15, 20, 25, 30, 40, 50, 75, 100]


def robust_bucket(a, n):
    """The round size with the least worst-case loss against each
    sensitivity case's own best round size (cases that change the
    all-reduce algorithm left out: that is a choice, not an
    uncertainty)."""
    cases = [(name, b) for name, b in sensitivity_cases(a)
             if b.algorithm == a.algorithm]
    effs = {mb: [Model(b).evaluate(n, mb)["eff"] for _, b in cases]
            for mb in ROUND_SIZES}
    best = [max(effs[mb][i] for mb in ROUND_SIZES)
            for i in range(len(cases))]
    choice = None
    for mb in ROUND_SIZES:
        losses = [best[i] - effs[mb][i] for i in range(len(cases))]
        worst = max(range(len(cases)), key=lambda i: losses[i])
        if choice is None or losses[worst] < choice[1] - 1e-12:
            choice = (mb, losses[worst], cases[worst][0])
    return choice


def bisect(f, lo, hi, iters=50):
    """Largest x in [lo, hi] with f(x) true, f monotone (true then false)."""
    if not f(lo):
        return None
    if f(hi):
        return hi
    for _ in range(iters):
        mid = (lo + hi) / 2
        if f(mid):
            lo = mid
        else:
            hi = mid
    return lo


def reaches(a, n, target):
    return best_bucket(a, n, [0.5, 1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25,
                              30, 40, 50, 75, 100])[1]["eff"] >= target


# Historical regimes, from the papers as remembered (no access to them here):
# the per-GPU batch, GPUs per server and network are the papers'; the
# step time, bandwidths and latencies are assumptions for P100-era
# hardware. A plausibility check of the model, no more.
def historical(a):
    goyal = with_(
        a, batch=32, images_per_s=200.0, step_ms=0.0, grad_dtype="fp32",
        gpus_per_node=8, nvlink_busbw=40.0,
        # one 50 Gb/s Ethernet port per 8-GPU server: 6.25 GB/s line rate,
        # ~5 GB/s achievable, shared by its 8 GPUs
        ib_bw=5.0 / 8, ib_latency_us=30.0, nvlink_latency_us=10.0,
        bucket_overhead_us=50.0, algorithm="hierarchical", tail_bucket_mb=0)
    ibm = with_(
        goyal, gpus_per_node=4, nvlink_busbw=30.0,
        # one 100 Gb/s InfiniBand EDR port per 4-GPU Minsky server
        ib_bw=10.0 / 4, ib_latency_us=10.0)
    return [
        ("Goyal et al. 2017 (Caffe2, 8 P100 per server)", goyal, 8,
         "~90%, 8 -> 256 GPUs"),
        ("IBM PowerAI DDL 2017 (Caffe, 4 P100 per server)", ibm, 1,
         "95% at 256 GPUs"),
    ]


def report(a, out):
    model = Model(a)
    gpus = [int(x) for x in a.gpus.split(",")]
    sizes = [float(x) for x in a.bucket_sizes.split(",")]
    t1 = model.step_s()
    tensors = model.tensors
    params = sum(p for _, p, _ in tensors)
    macs = conv_fc_macs(tensors)
    gbytes = params * model.grad_bytes_per_param()

    out.heading("Assumptions")
    rows = [
        ["per-GPU batch", a.batch],
        ["single-GPU step (assumed, not measured)",
         "%.1f ms (%.0f images/s)" % (t1 * 1e3, a.batch / t1)],
        ["backward share of the step", "%.3f" % a.backward_share],
        ["gradients reduced in", "%s: %.1f MB (%d parameters)"
         % (a.grad_dtype, gbytes / 1e6, params)],
        ["GPUs per node", a.gpus_per_node],
        ["NVLink all-reduce busbw", "%g GB/s" % a.nvlink_busbw],
        ["inter-node per GPU", "%g GB/s" % a.ib_bw],
        ["latency per ring step", "%g us NVLink, %g us IB"
         % (a.nvlink_latency_us, a.ib_latency_us)],
        ["overhead per bucket", "%g us" % a.bucket_overhead_us],
        ["all-reduce algorithm", a.algorithm],
        ["backward slowdown beside a collective", pct(a.comm_slowdown)],
        ["straggler CV", "%s (%s)" % (pct(a.straggler_cv),
                                      a.straggler_method)],
        ["data wait per step", "%g ms" % a.data_wait_ms],
    ]
    out.table(["assumption", "value"], rows)

    out.heading("ResNet-50 by stage (reverse order = order gradients "
                "become ready)")
    stages = {}
    total_all = sum(m for _, _, m in tensors)
    for name, p, m in tensors:
        st = stages.setdefault(stage_of(name), [0, 0])
        st[0] += p
        st[1] += m
    rows = []
    done = 0.0
    for st in ["fc", "layer4", "layer3", "layer2", "layer1", "stem"]:
        p, m = stages[st]
        done += m / total_all
        rows.append([st, "{:,}".format(p), "%.1f" % (p * 4 / 1e6),
                     "%.3f" % (m / 1e9), pct(m / total_all), pct(done)])
    rows.append(["total", "{:,}".format(params), "%.1f" % (params * 4 / 1e6),
                 "%.3f" % (total_all / 1e9), "100%", ""])
    out.table(["stage", "parameters", "fp32 MB", "GMACs fwd",
               "share of backward", "backward done after"], rows)
    out.text("Forward multiply-adds at 224x224, convolutions and fc: "
             "%.4f G (batch norms add %.4f G, counted for timing)."
             % (macs / 1e9, (total_all - macs) / 1e9))

    out.heading("Efficiency by GPUs and bucket size (MiB), %s, %s gradients"
                % (a.algorithm, a.grad_dtype))
    rows = []
    for n in gpus:
        rows.append([n] + [pct(model.evaluate(n, mb)["eff"]) for mb in sizes])
    out.table(["GPUs"] + ["%g MiB" % mb for mb in sizes], rows)

    out.heading("Step at bucket-size-mb %g" % a.bucket_mb)
    rows = []
    for n in gpus:
        r = model.evaluate(n, a.bucket_mb)
        rows.append([n, "%.2f" % (r["tn"] * 1e3), pct(r["straggle"] - 1),
                     r["buckets"], "%.2f" % (r["busy"] * 1e3),
                     "%.2f" % (r["stretch"] * 1e3),
                     "%.2f" % (r["exposed"] * 1e3),
                     "{:,.0f}".format(r["images_per_s"]),
                     pct(r["eff"])])
    out.table(["GPUs", "step ms", "straggler", "buckets", "comm busy ms",
               "slowdown ms", "exposed ms", "images/s", "efficiency"], rows)

    n = a.at
    mb, r = best_bucket(a, n)
    out.heading("Bucket size at %d GPUs" % n)
    flat = [x / 2 for x in range(1, 401)]
    effs = {x: model.evaluate(n, x)["eff"] for x in flat}
    good = [x for x in flat if effs[x] >= r["eff"] - 0.001]
    enough = [x for x in flat if effs[x] >= a.target]
    rec, regret, worst = robust_bucket(a, n)
    out.text("Best bucket-size-mb at %d GPUs on a 0.5 MiB grid: %g MiB, "
             "efficiency %s (within 0.1 point of it: %g to %g MiB). At the "
             "default 25 MiB: %s. Goal %s: %s at the best size; sizes "
             "reaching it: %s."
             % (n, mb, pct(r["eff"]), min(good), max(good),
                pct(effs[25.0]), pct(a.target),
                "reached" if r["eff"] >= a.target else "NOT reached",
                "%g to %g MiB" % (min(enough), max(enough)) if enough
                else "none"))
    out.text("")
    out.text("Robust choice among %s MiB: %g MiB, %s here; across the "
             "sensitivity cases that keep the algorithm (%s), it loses at "
             "most %.2f points against each case's own best size (worst: "
             "%s)." % (",".join("%g" % x for x in ROUND_SIZES), rec,
                       pct(effs[float(rec)]), a.algorithm, 100 * regret,
                       worst))
    for size in sorted({a.bucket_mb, mb, float(rec)}):
        out.heading("Buckets at %g MiB, %d GPUs (time 0: backward starts)"
                    % (size, n))
        s = straggler_factor(a, n)
        res = model.evaluate(n, size)
        bwd = a.backward_share * t1 * s + res["stretch"]
        rows = []
        for (nbytes, ready, first, last), (st, en) in zip(
                model.buckets(size, names=True),
                model.schedule(n, size, bwd)):
            rows.append(["%.2f" % (nbytes / MIB), "%s .. %s" % (first, last),
                         pct(ready), "%.2f" % (ready * bwd * 1e3),
                         "%.2f" % (st * 1e3), "%.2f" % (en * 1e3)])
        out.table(["MiB", "tensors (reverse order)", "ready at",
                   "ready ms", "start ms", "end ms"], rows)
        out.text("Backward ends at %.2f ms; exposed %.2f ms; efficiency %s."
                 % (bwd * 1e3, res["exposed"] * 1e3, pct(res["eff"])))

    out.heading("All-reduce time of the whole gradient (%s, %.1f MB) and "
                "efficiency at %d GPUs by algorithm" % (a.grad_dtype,
                                                        gbytes / 1e6, n))
    rows = []
    for alg in ALGORITHMS:
        b = with_(a, algorithm=alg)
        bm, br = best_bucket(b, n)
        rows.append([alg, "%.2f" % (allreduce_time(b, gbytes, n) * 1e3),
                     "%.2f" % (allreduce_time(b, 25 * MIB, n) * 1e3),
                     pct(Model(b).evaluate(n, 25)["eff"]),
                     "%g" % bm, pct(br["eff"])])
    out.table(["algorithm", "whole gradient ms", "one 25 MiB bucket ms",
               "eff. at 25 MiB", "best MiB", "eff. at best"], rows)

    out.heading("Sensitivity at %d GPUs" % n)
    rows = []
    for name, b in sensitivity_cases(a):
        bm, br = best_bucket(b, n)
        rows.append([name, pct(Model(b).evaluate(n, 25)["eff"]), "%g" % bm,
                     pct(br["eff"]), "yes" if br["eff"] >= a.target
                     else "no"])
    out.table(["case", "eff. at 25 MiB", "best MiB", "eff. at best",
               ">= %s" % pct(a.target)], rows)

    out.heading("Break-even: each assumption alone, the others at their "
                "defaults, best bucket, %s at %d GPUs" % (pct(a.target), n))
    rows = []
    cv = bisect(lambda x: reaches(with_(a, straggler_cv=x), n, a.target),
                0.0, 0.2)
    rows.append(["straggler CV at most",
                 "-" if cv is None else "%.2f%%" % (100 * cv)])
    ib = bisect(lambda x: reaches(with_(a, ib_bw=a.ib_bw / x), n, a.target),
                1.0, 1000.0)
    rows.append(["inter-node GB/s per GPU at least",
                 "-" if ib is None else "%.1f" % (a.ib_bw / ib)])
    lat = bisect(lambda x: reaches(with_(a, ib_latency_us=x), n, a.target),
                 0.0, 10000.0)
    rows.append(["IB latency per ring step (us) at most",
                 "-" if lat is None else "%.0f" % lat])
    rate = bisect(lambda x: reaches(with_(a, images_per_s=x), n, a.target),
                  100.0, 1e6)
    rows.append(["single-GPU images/s at most (faster GPUs scale worse)",
                 "-" if rate is None else "{:,.0f}".format(rate)])
    out.table(["for >= %s" % pct(a.target), "value"], rows)

    out.heading("Against published results at 256 GPUs (papers as "
                "remembered; P100-era step and network assumed; 25 MiB)")

    def row(name, b, base, note):
        m = Model(b)
        gb = RESNET50_PARAMS * m.grad_bytes_per_param()
        ratio = allreduce_time(b, gb, 256) / (b.backward_share * m.step_s())
        cells = []
        for cv in (a.straggler_cv, 0.02):
            mc = Model(with_(b, straggler_cv=cv))
            e = mc.evaluate(256, 25)["eff"]
            cells.append(pct(e / mc.evaluate(base, 25)["eff"]))
        return [name, note, "%.0f ms, %d" % (m.step_s() * 1e3, b.batch),
                "%g GB/s" % (b.ib_bw * b.gpus_per_node), pct(ratio),
                "vs %d GPU%s" % (base, "s" if base > 1 else "")] + cells

    rows = [row(name, b, base, note) for name, b, base, note in historical(a)]
    rows.append(row("this model, H200 defaults", a, 1, "-"))
    rows.append(row("this model, H200 defaults", a, 8, "-"))
    out.table(["run", "published", "step, batch/GPU",
               "inter-node per node", "all-reduce / backward", "baseline",
               "model, CV %s" % pct(a.straggler_cv), "model, CV 2%"], rows)
    out.text("all-reduce / backward: one all-reduce of the whole gradient "
             "at 256 GPUs over the backward pass's time: the room overlap "
             "has to hide it in.")


# ----------------------------------------------------------------------------
# --check


def check(a):
    failures = []

    def ok(cond, what):
        if not cond:
            failures.append(what)
        print("%s %s" % ("ok  " if cond else "FAIL", what))

    tensors = resnet50_tensors()
    params = sum(p for _, p, _ in tensors)
    ok(params == RESNET50_PARAMS,
       "ResNet-50 parameters sum to 25,557,032 (%d)" % params)
    macs = conv_fc_macs(tensors)
    ok(abs(macs / 4.1e9 - 1) < 0.02,
       "forward multiply-adds at 224 within 2%% of 4.1 G (%.4f G)"
       % (macs / 1e9))
    ok(sum(1 for n, _, _ in tensors if n.endswith("conv2")) == 16,
       "16 bottlenecks")

    ok(abs(expected_max_normal(2) - 1 / math.sqrt(math.pi)) < 1e-6,
       "E[max of 2 normals] = 1/sqrt(pi)")
    ok(all(expected_max_normal(n) < math.sqrt(2 * math.log(n))
           for n in (2, 8, 64, 256, 512)),
       "E[max of N normals] below sqrt(2 ln N)")
    ok(all(expected_max_normal(n) < expected_max_normal(2 * n)
           for n in (2, 8, 64, 256)), "E[max of N normals] grows with N")

    model = Model(a)
    ok(model.evaluate(1, 25)["eff"] == 1.0, "efficiency 1.0 at N=1")
    perfect = with_(a, nvlink_busbw=1e12, ib_bw=1e12, nvlink_latency_us=0,
                    ib_latency_us=0, bucket_overhead_us=0, comm_slowdown=0,
                    straggler_cv=0.0)
    ok(all(abs(Model(perfect).evaluate(n, 25)["eff"] - 1) < 1e-6
           for n in (1, 8, 256)),
       "efficiency 1.0 at any N with free communication, no stragglers")
    ok(abs(Model(with_(perfect, straggler_cv=0.01)).evaluate(256, 25)["eff"]
           - 1 / (1 + 0.01 * expected_max_normal(256))) < 1e-9,
       "free communication: efficiency = 1 / straggler factor")

    for alg in ALGORITHMS:
        for n in (8, 64, 256):
            times = [allreduce_time(with_(a, algorithm=alg), b, n)
                     for b in (1, 1 << 10, 1 << 20, 25 << 20, 100 << 20)]
            ok(all(x < y for x, y in zip(times, times[1:])),
               "%s all-reduce time grows with bytes at %d GPUs" % (alg, n))
    for mb in (1, 5, 10, 25, 50, 100):
        ok(allreduce_time(with_(a, algorithm="hierarchical"), mb * MIB, 256)
           <= allreduce_time(with_(a, algorithm="ring"), mb * MIB, 256),
           "hierarchical <= flat ring at 256 GPUs, %g MiB" % mb)
    ok(allreduce_time(a, 25 * MIB, 512) > allreduce_time(a, 25 * MIB, 16),
       "all-reduce slower at 512 GPUs than at 16")

    for mb in (0.5, 1, 5, 25, 100, 1000):
        bs = model.buckets(mb)
        ok(sum(b for b, _ in bs) == 4 * RESNET50_PARAMS
           and len(bs) == -(-4 * RESNET50_PARAMS // int(mb * MIB))
           and all(x[1] <= y[1] for x, y in zip(bs, bs[1:]))
           and bs[-1][1] == 1.0,
           "%g MiB buckets partition the fp32 gradient, ready in order" % mb)
    tail = Model(with_(a, tail_bucket_mb=1.0))
    ok(all(sum(b for b, _ in tail.buckets(mb)) == 4 * RESNET50_PARAMS
           and tail.buckets(mb)[-1][0] == MIB
           and tail.buckets(mb)[-2][1] < 1.0 for mb in (1, 5, 25, 200)),
       "a 1 MiB tail bucket is the last, the rest ready before the end")
    ok(straggler_factor(with_(a, straggler_method="approx"), 256)
       > straggler_factor(a, 256), "sqrt(2 ln N) overestimates the maximum")
    ok(abs(expected_max_shifted(256, 0.0) - expected_max_normal(256)) < 1e-6,
       "shifted maximum with no shift = plain maximum")
    bf = Model(with_(a, grad_dtype="bf16"))
    ok(sum(b for b, _ in bf.buckets(25)) == 2 * RESNET50_PARAMS,
       "bf16 gradients are half the bytes")
    ok(bf.evaluate(256, 25)["busy"] < model.evaluate(256, 25)["busy"],
       "bf16 reduces faster than fp32 at 256")

    effs = [model.evaluate(n, 25)["eff"] for n in (1, 8, 16, 64, 256, 512)]
    ok(all(x >= y for x, y in zip(effs, effs[1:])),
       "efficiency does not grow with N (25 MiB)")
    ok(all(0 < model.evaluate(n, mb)["eff"] <= 1
           for n in (1, 8, 256, 512) for mb in (1, 25, 100)),
       "efficiency in (0, 1]")
    slow = Model(with_(a, ib_bw=a.ib_bw / 2)).evaluate(256, 25)["eff"]
    ok(slow <= model.evaluate(256, 25)["eff"], "slower IB never helps")

    # The whole report runs.
    class Null:
        def write(self, s):
            pass

        def flush(self):
            pass
    try:
        report(a, Out(True, Null()))
        ok(True, "the report runs")
    except Exception as e:  # noqa: BLE001 -- reported as a failure
        ok(False, "the report runs (%r)" % e)

    print("%d failure(s)" % len(failures))
    return 0 if not failures else 1


def main():
    a = parser().parse_args()
    if a.check:
        return check(a)
    out = Out(a.markdown)
    report(a, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
