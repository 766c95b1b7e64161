#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Data-parallel PyTorch reference for the trainer/ library's tests.

trainer/ trains data-parallel with the semantics of PyTorch's
DistributedDataParallel (DDP): every rank has its own batch; each rank's
gradient (the mean over its own batch) is averaged over the ranks before the
SGD step; batch-norm statistics stay per rank; every rank starts from rank
0's weights; the loss reported is the sum over all samples divided by the
global number of samples. This script writes the PyTorch side of that
comparison, emulating DDP in one process, and checks the emulation against a
real torch.distributed run.

Subcommands:

  reference   --ranks N: N replicas of the model from the same initial
              weights; the global batch is N*B random samples and rank r
              trains on samples r*B .. (r+1)*B-1; K SGD steps, each the
              optimizer of torch_reference.py (two parameter groups, weight
              decay on ndim > 1 only, label smoothing, constant lr) applied
              to the averaged gradients. Writes one .safetensors file:
                init.<name>              the initial state_dict
                images, labels           the global batch
                split                    int64 [N, 2]: rank r's first sample
                                         and number of samples (B each, or
                                         --rank-batches B0,B1,...)
                rank<r>.step0.logits     rank r's logits at the first step
                rank<r>.losses           rank r's own loss at every step
                step0.loss, losses       the global loss (first, every step)
                step0.grad.<name>        the averaged gradient of step 1
                final.<name>             parameters and rank 0's statistics
                final.momentum.<name>    the momentum buffers
                rank<r>.final.<name>     rank r's statistics (buffers only)
              and f64.<name> for every float tensor: the same emulation in
              float64, the yardstick of tests/trainer/parity.c.
  check-gloo  --ranks 2: the same data and initial weights trained by 2
              processes with torch.distributed (gloo) and DDP; every tensor
              above must be bitwise equal (torch.equal) to the emulation.

DDP details the emulation copies, from PyTorch 1.13's reducer: each rank's
gradient is multiplied by 1/N (a float32 multiply) as it is copied into the
bucket, and the buckets are summed (all-reduce). With two ranks the sum of
two values does not depend on the order (nor, x0.5 being exact, on whether
the halving comes before or after), so the emulation, which sums in rank
order, is bitwise equal to gloo (check-gloo). With three or more, gloo's
ring adds in an order that differs from chunk to chunk: with 3 ranks about
a third of the averaged gradients of step 1 differ by one rounding (1e-8
absolute), and three steps on most tensors differ in their last bits.
There is no bitwise statement to make then, and check-gloo takes 2 ranks
only.
The real run uses broadcast_buffers=False: with DDP's default (True) rank
0's buffers are copied to the others before every forward, so rank r>0's
running statistics would be rank 0's plus one update; trainer/ keeps every
rank's own (rank 0's, which are saved, are the same either way).

Exit status: 0 success, 1 check failed, 2 usage or file error.
"""
import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F


def _load_torch_reference():
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(
        "torch_reference", os.path.join(here, "torch_reference.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tr = _load_torch_reference()


class Replica:
    """One rank of the emulation: its model, optimizer and slice of the batch."""

    def __init__(self, a, init_state, images, labels, dtype):
        self.model = tr.build_model(a.model, a.classes, bool(a.zero_init_residual)).train()
        self.model.load_state_dict(init_state)
        self.model.to(dtype)
        self.opt = tr.make_optimizer(self.model, a.lr, a.momentum, a.weight_decay,
                                     bool(a.nesterov))
        self.x = tr.normalize(images).to(dtype)
        self.y = labels.long()
        self.margin = tr.ReluMargin(self.model)

    def forward_backward(self, a):
        self.opt.zero_grad(set_to_none=True)
        logits = self.model(self.x)
        loss = F.cross_entropy(logits, self.y, label_smoothing=a.label_smoothing)
        loss.backward()
        return logits.detach(), loss.detach()


def rank_sizes(a):
    """Each rank's number of samples: --rank-batches, else --batch each."""
    if a.rank_batches:
        return [int(n) for n in a.rank_batches.split(",")]
    return [a.batch] * a.ranks


def rank_slices(a):
    """(first sample, number of samples) of each rank in the global batch."""
    sizes = rank_sizes(a)
    return [(sum(sizes[:r]), n) for r, n in enumerate(sizes)]


def average_gradients(replicas):
    """DDP's reduction: every rank's gradient times 1/N, summed in rank order;
    every replica gets the result."""
    scale = 1.0 / len(replicas)
    named = [dict(rep.model.named_parameters()) for rep in replicas]
    averaged = {}
    for name in named[0]:
        total = named[0][name].grad * scale
        for params in named[1:]:
            total = total + params[name].grad * scale
        for params in named:
            params[name].grad = total.clone()
        averaged[name] = total
    return averaged


def momentum_tensors(prefix, replica):
    out = {}
    for name, p in replica.model.named_parameters():
        out[prefix + name] = replica.opt.state[p]["momentum_buffer"].detach().clone()
    return out


def buffer_tensors(prefix, model):
    return {prefix + k: v.detach().clone() for k, v in model.named_buffers()}


def emulate(a, init_state, images, labels, dtype=torch.float32):
    """DDP over a.ranks replicas in this process: returns the tensors to save,
    the ReLU margin over every forward pass of every replica, and the global
    losses."""
    replicas = [Replica(a, init_state, images[first:first + count],
                        labels[first:first + count], dtype)
                for first, count in rank_slices(a)]
    total_samples = sum(rep.x.shape[0] for rep in replicas)
    out, losses = {}, []
    rank_losses = [[] for _ in replicas]
    for step in range(a.steps):
        loss_sum = torch.zeros((), dtype=dtype)
        for r, rep in enumerate(replicas):
            logits, loss = rep.forward_backward(a)
            if step == 0:
                out[f"rank{r}.step0.logits"] = logits.clone()
            rank_losses[r].append(loss.item())
            loss_sum = loss_sum + loss * rep.x.shape[0]
        averaged = average_gradients(replicas)
        if step == 0:
            out["step0.loss"] = (loss_sum / total_samples).reshape(1)
            for name, grad in averaged.items():
                out["step0.grad." + name] = grad.clone()
        for rep in replicas:
            rep.opt.step()
        losses.append((loss_sum / total_samples).item())
    # Same values through the same operations: a self-check of the emulation.
    first = dict(replicas[0].model.named_parameters())
    for rep in replicas[1:]:
        for name, p in rep.model.named_parameters():
            if not torch.equal(p, first[name]):
                raise AssertionError(f"emulation: replicas differ in {name}")
    out["losses"] = torch.tensor(losses, dtype=dtype)
    for r, per_rank in enumerate(rank_losses):
        out[f"rank{r}.losses"] = torch.tensor(per_rank, dtype=dtype)
    out.update(tr.state_tensors("final.", replicas[0].model))
    out.update(momentum_tensors("final.momentum.", replicas[0]))
    for r, rep in enumerate(replicas):
        out.update(buffer_tensors(f"rank{r}.final.", rep.model))
    margin = min(rep.margin.margin for rep in replicas)
    for rep in replicas:
        rep.margin.remove()
    return out, margin, losses


def initial_state(a):
    torch.manual_seed(a.seed)
    model = tr.build_model(a.model, a.classes, bool(a.zero_init_residual)).train()
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def choose_batch(a, init_state, conditioned=True):
    """torch_reference.choose_batch over the emulation: the first global batch
    whose every ReLU input, in every replica and step, stays min_relu_margin
    from zero and (with @conditioned) whose fp32 emulation stays within the
    C side's ceiling of the float64 one; None after saying why none would."""
    def run(images, labels, precision, state=init_state):
        dtype = torch.float64 if precision == "f64" else torch.float32
        return emulate(a, state, images, labels, dtype)

    return tr.choose_batch(a, sum(rank_sizes(a)), run, init_state,
                           conditioned=conditioned)


def cmd_reference(a):
    torch.set_num_threads(a.threads)
    init_state = initial_state(a)
    chosen = choose_batch(a, init_state)
    if chosen is None:
        return 1
    data_seed, images, labels, result, losses, margin, conditioning = chosen

    out = {"init." + k: v for k, v in init_state.items()}
    out["images"], out["labels"] = images, labels
    out["split"] = torch.tensor(rank_slices(a), dtype=torch.int64)
    out.update(result)
    sizes = rank_sizes(a)
    meta = {k: getattr(a, k) for k in (
        "model", "classes", "size", "ranks", "steps", "lr", "momentum",
        "weight_decay", "label_smoothing", "nesterov", "zero_init_residual", "seed",
        "threads")}
    # batch: the largest rank's, the trainer's batch_size
    meta.update(torch=torch.__version__, batch=max(sizes), global_batch=sum(sizes),
                mean=",".join(map(str, tr.MEAN)), std=",".join(map(str, tr.STD)),
                data_seed=data_seed, relu_margin=f"{margin:.3g}",
                conditioning=f"{conditioning[0]:.3g}")
    tr.save_safetensors(a.out, out, meta)
    print(f"{a.out}: ranks of {','.join(map(str, sizes))} samples, data seed {data_seed}, "
          f"ReLU margin {margin:.3g}, conditioning {conditioning[0]:.3g} "
          f"({conditioning[1]}), losses " + " ".join(f"{v:.6f}" for v in losses))
    return 0


# ---------------------------------------------------------------------------
# check-gloo: the emulation against torch.distributed
# ---------------------------------------------------------------------------

def cmd_gloo_rank(a):
    """One rank of the real DDP run (started by check-gloo): trains on its
    slice of the batch in the input file and writes what it saw."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    torch.set_num_threads(a.threads)
    inputs, _ = tr.load_safetensors(a.input)
    init_state = {k[5:]: v for k, v in inputs.items() if k.startswith("init.")}
    first, count = inputs["split"][a.rank].tolist()
    dist.init_process_group("gloo", init_method=a.init_method, rank=a.rank,
                            world_size=a.ranks)
    model = tr.build_model(a.model, a.classes, bool(a.zero_init_residual)).train()
    model.load_state_dict(init_state)
    ddp = DistributedDataParallel(model, broadcast_buffers=False)
    opt = tr.make_optimizer(model, a.lr, a.momentum, a.weight_decay, bool(a.nesterov))
    x = tr.normalize(inputs["images"][first:first + count])
    y = inputs["labels"][first:first + count].long()

    out, losses = {}, []
    for step in range(a.steps):
        opt.zero_grad(set_to_none=True)
        logits = ddp(x)
        loss = F.cross_entropy(logits, y, label_smoothing=a.label_smoothing)
        loss.backward()
        if step == 0:
            out[f"rank{a.rank}.step0.logits"] = logits.detach().clone()
            for name, p in model.named_parameters():
                out["step0.grad." + name] = p.grad.detach().clone()
        opt.step()
        losses.append(loss.item())
    out[f"rank{a.rank}.losses"] = torch.tensor(losses, dtype=torch.float32)
    if a.rank == 0:
        out.update(tr.state_tensors("final.", model))
    for name, p in model.named_parameters():
        out["final." + name] = p.detach().clone()
        out["final.momentum." + name] = opt.state[p]["momentum_buffer"].detach().clone()
    out.update(buffer_tensors(f"rank{a.rank}.final.", model))
    dist.destroy_process_group()
    tr.save_safetensors(a.out, out)
    return 0


def describe_difference(name, got, want):
    if got.shape != want.shape:
        return f"{name}: shape {tuple(got.shape)}, emulation {tuple(want.shape)}"
    if not got.is_floating_point():
        return f"{name}: {got.tolist()} != {want.tolist()}"
    diff = (got.double() - want.double()).abs()
    scale = want.double().abs().max().item()
    return (f"{name}: {int((got != want).sum())} of {want.numel()} values differ, "
            f"max|diff| {diff.max().item():.3g} (max|value| {scale:.3g})")


def cmd_check_gloo(a):
    torch.set_num_threads(a.threads)
    init_state = initial_state(a)
    chosen = choose_batch(a, init_state, conditioned=False)
    if chosen is None:
        return 1
    data_seed, images, labels, emulated, _, margin, _ = chosen
    with tempfile.TemporaryDirectory(prefix="ddp-gloo-") as scratch:
        inputs = {"init." + k: v for k, v in init_state.items()}
        inputs["images"], inputs["labels"] = images, labels
        inputs["split"] = torch.tensor(rank_slices(a), dtype=torch.int64)
        input_path = os.path.join(scratch, "inputs.safetensors")
        tr.save_safetensors(input_path, inputs)
        common = ["--model", a.model, "--classes", str(a.classes), "--ranks", str(a.ranks),
                  "--steps", str(a.steps), "--lr", repr(a.lr), "--momentum", repr(a.momentum),
                  "--weight-decay", repr(a.weight_decay),
                  "--label-smoothing", repr(a.label_smoothing),
                  "--nesterov", str(a.nesterov),
                  "--zero-init-residual", str(a.zero_init_residual),
                  "--threads", str(a.threads), "--input", input_path,
                  "--init-method", "file://" + os.path.join(scratch, "rendezvous")]
        ranks = [subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "gloo-rank", "--rank", str(r),
             "--out", os.path.join(scratch, f"rank{r}.safetensors")] + common)
            for r in range(a.ranks)]
        failed = False
        for r, process in enumerate(ranks):
            try:
                code = process.wait(timeout=a.timeout)
            except subprocess.TimeoutExpired:
                code = "timed out"
            if code != 0:
                print(f"FAIL: gloo rank {r}: {code}", file=sys.stderr)
                failed = True
        if failed:
            for process in ranks:
                if process.poll() is None:
                    process.kill()
                    process.wait()
            return 1
        real = [tr.load_safetensors(os.path.join(scratch, f"rank{r}.safetensors"))[0]
                for r in range(a.ranks)]

    # Rank r's file must match the emulation on everything it wrote: its own
    # logits, losses and statistics, and the shared gradients, parameters
    # and momentum (rank 0's file also has its statistics as final.<name>).
    # And it must have written all of that: a rank that wrote nothing would
    # otherwise differ in nothing.
    params = [name for name, _ in tr.build_model(
        a.model, a.classes, bool(a.zero_init_residual)).named_parameters()]
    mismatches, compared, expected = [], 0, 0
    for r, tensors in enumerate(real):
        wanted = {n for n in emulated if n.startswith(f"rank{r}.")}
        wanted |= {prefix + p for p in params
                   for prefix in ("step0.grad.", "final.", "final.momentum.")}
        if r == 0:
            wanted |= {n for n in emulated if n.startswith("final.")}
        expected += len(wanted)
        for name in sorted(wanted - set(tensors)):
            mismatches.append(f"rank {r}: {name}: not written")
        for name, value in tensors.items():
            want = emulated.get(name)
            if want is None:
                mismatches.append(f"rank {r}: {name}: not in the emulation")
                continue
            compared += 1
            if value.dtype != want.dtype or not torch.equal(value, want):
                mismatches.append(f"rank {r}: " + describe_difference(name, value, want))
    if compared != expected:
        mismatches.append(f"{compared} tensors compared, {expected} expected "
                          f"({len(params)} parameters, {a.ranks} ranks)")
    for line in mismatches:
        print("FAIL: " + line)
    print(f"{'OK' if not mismatches else 'FAIL'}: {a.ranks}-rank gloo DDP against the "
          f"one-process emulation, {a.model} {a.size}x{a.size}, "
          f"{','.join(map(str, rank_sizes(a)))} samples per rank, "
          f"{a.steps} steps, data seed {data_seed} (ReLU margin {margin:.3g}): "
          f"{compared} tensors compared bitwise, {len(mismatches)} differ")
    return 1 if mismatches else 0


def add_training_arguments(p):
    """torch_reference.py's training options, per rank, and the ranks."""
    tr.add_training_arguments(p, size=16, batch=4, batch_help="samples per rank")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--rank-batches", default=None, metavar="B0,B1,...",
                   help="each rank's number of samples, when they differ (DDP "
                   "still averages the ranks' mean gradients with equal weights)")


def add_data_arguments(p):
    tr.add_data_arguments(p, "every ReLU input of every replica")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("reference", help="write a data-parallel reference run")
    add_training_arguments(r)
    add_data_arguments(r)
    r.add_argument("--threads", type=int, default=2)
    r.add_argument("--out", required=True)

    c = sub.add_parser("check-gloo", help="the emulation against real gloo DDP")
    add_training_arguments(c)
    add_data_arguments(c)
    c.add_argument("--threads", type=int, default=1,
                   help="threads of the emulation and of every rank (the same, so "
                   "that each rank's forward and backward sum in the same order)")
    c.add_argument("--timeout", type=float, default=300)

    w = sub.add_parser("gloo-rank", help=argparse.SUPPRESS)
    add_training_arguments(w)
    w.add_argument("--rank", type=int, required=True)
    w.add_argument("--threads", type=int, default=1)
    w.add_argument("--input", required=True)
    w.add_argument("--init-method", required=True)
    w.add_argument("--out", required=True)

    a = p.parse_args(argv)
    if a.ranks < 1 or a.batch < 1:
        p.error("--ranks and --batch must be positive")
    if a.rank_batches and (len(a.rank_batches.split(",")) != a.ranks
                           or min(int(n) for n in a.rank_batches.split(",")) < 1):
        p.error("--rank-batches needs one positive number per rank")
    if a.cmd == "check-gloo" and a.ranks != 2:
        p.error("check-gloo compares bitwise, which holds for 2 ranks only (see above)")
    return {"reference": cmd_reference, "check-gloo": cmd_check_gloo,
            "gloo-rank": cmd_gloo_rank}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
