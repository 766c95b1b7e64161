#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Trains a ResNet in PyTorch on Fashion-MNIST fed by gst-train's Loader.

    PYTHONPATH=BUILD/python examples/train-torch.py [--steps N] [--data DIR]
        [--logdir DIR] [--loader gst|dataloader] [--echo adaptive|none|FACTOR]

A plain PyTorch training loop (CIFAR-style resnet20, SGD with momentum,
warm-up then cosine learning rate) whose batches come from
gst_train.torch.Loader: gst-train's GStreamer elements read the JPEGs,
decode them, echo them adaptively (repeating images only while the training
step would otherwise wait for data), crop and flip them as torchvision's
RandomResizedCrop and RandomHorizontalFlip do, and batch them. Every
--log-every steps it prints a progress line and writes the loss, learning
rate, images/s, fresh images/s, data wait and echo factor to TensorBoard
(--logdir); after --steps steps it evaluates top-1 accuracy on the test
split, every image once, through a Loader with no echo, no crop and no
shuffling.

--loader dataloader runs the same loop on torchvision's ImageFolder and
torch.utils.data.DataLoader with the same transforms (the same crop rule,
resampling and normalisation; no echo), for comparison:
docs/torch-example.md gives both runs' accuracy and time.

--data is an ImageFolder tree with train/ and test/ (default
data/fashion-mnist, as scripts/demo.sh uses). Where the folder does not
exist the example writes Fashion-MNIST there (Debian's dataset-fashion-mnist)
with gst-train's dataset tool, gst-train-dataset: --dataset-tool, else the
one of the build that gst_train comes from, else the one on PATH.

Fashion-MNIST is grayscale: the model takes one channel.

Ctrl-C stops at once and cleanly: the loader is closed (its pipeline
stopped), TensorBoard's files are flushed, exit status 130. Otherwise the
exit status is 0 when the run trained (every step done, every loss finite,
the weights changed), 1 when it did not (a NaN loss, say), 2 on a usage or
data error.

Needs torch and torchvision (Debian's python3-torch, python3-torchvision:
run it with /usr/bin/python3), and tensorboard (scripts/install-deps.sh).
"""
import argparse
import math
import os
import shutil
import signal
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torchvision.models.resnet import BasicBlock, conv1x1

PROG = "train-torch"
# Fashion-MNIST's pixel mean and standard deviation (of x / 255).
MEAN, STD = 0.2860, 0.3530


def fail(message, status=2):
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)
    sys.exit(status)


# ---------------------------------------------------------------------------
# The model: the CIFAR ResNet of the parity tests (tests/trainer/
# torch_reference.py, torchvision's names), its stem taking in_channels.
# ---------------------------------------------------------------------------

class CifarResNet(nn.Module):
    """He et al. 2016 CIFAR ResNet of depth 6n+2: a 3x3 stem to 16 channels,
    no max-pool, three stages of n BasicBlocks (16, 32, 64 channels),
    projection shortcuts, global average pool, fc."""

    def __init__(self, depth=20, num_classes=10, in_channels=3):
        super().__init__()
        n = (depth - 2) // 6
        self.inplanes = 16
        self.conv1 = nn.Conv2d(in_channels, 16, 3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = self._make_layer(16, n, 1)
        self.layer2 = self._make_layer(32, n, 2)
        self.layer3 = self._make_layer(64, n, 2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(64, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, planes, blocks, stride):
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes, stride),
                                       nn.BatchNorm2d(planes))
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        layers += [BasicBlock(planes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def build_model(name, num_classes, in_channels):
    if name in ("resnet20", "resnet32"):
        return CifarResNet(int(name[6:]), num_classes, in_channels)
    import torchvision
    model = getattr(torchvision.models, name)(weights=None, num_classes=num_classes)
    if in_channels != 3:
        model.conv1 = nn.Conv2d(in_channels, 64, 7, stride=2, padding=3, bias=False)
        nn.init.kaiming_normal_(model.conv1.weight, mode="fan_out", nonlinearity="relu")
    return model


# ---------------------------------------------------------------------------
# The data: the dataset tool, gst-train's Loader, torchvision's DataLoader
# ---------------------------------------------------------------------------

def dataset_tool(explicit):
    """gst-train-dataset: --dataset-tool, the build gst_train comes from, PATH."""
    if explicit:
        return explicit
    try:
        import gst_train
        # BUILD/python/gst_train/__init__.py -> BUILD/pipelines/gst-train-dataset
        here = os.path.dirname(os.path.abspath(gst_train.__file__))
        tool = os.path.join(here, os.pardir, os.pardir, "pipelines", "gst-train-dataset")
        if os.access(tool, os.X_OK):
            return os.path.normpath(tool)
    except (ImportError, ValueError):  # ValueError: PyGObject without Gst
        pass
    return shutil.which("gst-train-dataset")


def ensure_dataset(data, tool_arg):
    """Writes Fashion-MNIST to DATA with the dataset tool where DATA does not
    exist (or holds a tree the tool left unfinished)."""
    if os.path.isdir(data) and not os.path.exists(os.path.join(data, ".partial")):
        for split in ("train", "test"):
            if not os.path.isdir(os.path.join(data, split)):
                fail(f"{data}: no {split}/ folder (--data takes an ImageFolder tree with "
                     f"train/ and test/; name a folder that does not exist to have "
                     f"Fashion-MNIST written there)")
        return
    tool = dataset_tool(tool_arg)
    if not tool:
        fail(f"{data} does not exist, and gst-train-dataset, which would write "
             "Fashion-MNIST there, is neither beside gst_train's build nor on PATH "
             "(--dataset-tool PATH)")
    print(f"{PROG}: writing Fashion-MNIST to {data} with {tool} ...", flush=True)
    result = subprocess.run([tool, "fashion-mnist", "--output", data])
    if result.returncode != 0:
        fail(f"{tool} fashion-mnist --output {data} exited {result.returncode}")


def class_count(split_dir):
    return sum(1 for e in os.scandir(split_dir) if e.is_dir())


def import_loader():
    try:
        from gst_train.torch import Loader
    except (ImportError, ValueError) as error:
        fail(f"cannot import gst_train.torch ({error}): set PYTHONPATH=BUILD/python, "
             "BUILD being gst-train's meson build folder, or use --loader dataloader")
    return Loader


def gst_loaders(args):
    """(train loader, test loader factory, stats function) on
    gst_train.torch.Loader."""
    Loader = import_loader()
    echo = {"adaptive": "adaptive", "none": None}.get(args.echo)
    if echo is None and args.echo != "none":
        echo = float(args.echo)
    # The loader gives RGB: a grayscale JPEG comes out as three identical
    # channels, all normalised alike; the model takes the first (channel()).
    common = {"width": args.size, "height": args.size, "seed": args.seed,
              "normalize": ((MEAN,), (STD,))}
    if args.data_threads:
        common["num_threads"] = args.data_threads
    train = Loader(os.path.join(args.data, "train"), batch_size=args.batch_size,
                   crop="random-resized", scale_min=args.scale_min, flip=0.5,
                   shuffle=True, echo=echo, echo_position="before-augment",
                   drop_last=True, **common)

    def test():
        return Loader(os.path.join(args.data, "test"), batch_size=args.eval_batch_size,
                      crop="resize", flip=0.0, shuffle=False, echo=None,
                      drop_last=False, **common)

    def stats(interval):  # the loader's, since its previous call
        s = train.stats()
        return {"images_per_second": s["images_per_second"],
                "fresh_images_per_second": s["fresh_images_per_second"],
                "data_wait_fraction": s["data_wait_fraction"],
                "echo_factor": s["echo_factor"],
                "images": s["images"], "fresh_images": s["fresh_images"]}
    return train, test, stats


def read_gray(path):
    from torchvision.io import ImageReadMode, read_image
    return read_image(path, ImageReadMode.GRAY)


def torch_loaders(args):
    """(train loader, test loader factory, stats function) on torchvision's ImageFolder
    and DataLoader, with the transforms gst-train's augment applies:
    RandomResizedCrop (torch's bilinear with antialias on uint8 tensors),
    RandomHorizontalFlip, then x / 255 normalised."""
    import torchvision.transforms as T
    from torchvision.datasets import ImageFolder
    to_float = [T.ConvertImageDtype(torch.float32), T.Normalize((MEAN,), (STD,))]
    train_set = ImageFolder(os.path.join(args.data, "train"), loader=read_gray,
                            transform=T.Compose([
                                T.RandomResizedCrop(args.size, scale=(args.scale_min, 1.0),
                                                    antialias=True),
                                T.RandomHorizontalFlip(0.5)] + to_float))
    test_set = ImageFolder(os.path.join(args.data, "test"), loader=read_gray,
                           transform=T.Compose([T.Resize((args.size, args.size),
                                                         antialias=True)] + to_float))
    generator = torch.Generator().manual_seed(args.seed)
    train = torch.utils.data.DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                                        drop_last=True, num_workers=args.workers,
                                        generator=generator,
                                        persistent_workers=args.workers > 0)

    def test():
        return torch.utils.data.DataLoader(test_set, batch_size=args.eval_batch_size,
                                           shuffle=False, num_workers=args.workers)

    total = {"images": 0}

    def stats(interval):  # measured by the loop over the last interval
        rate = interval["images"] / interval["seconds"]
        total["images"] += interval["images"]
        return {"images_per_second": rate, "fresh_images_per_second": rate,
                "data_wait_fraction": interval["wait"] / interval["seconds"],
                "echo_factor": 1.0,
                "images": total["images"], "fresh_images": total["images"]}
    return train, test, stats


def channel(images):
    """NCHW float batch -> the one channel the model takes."""
    return images[:, :1] if images.shape[1] > 1 else images


# ---------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------

def learning_rate(step, args):
    """Linear warm-up over --warmup-steps, then cosine to zero at --steps."""
    if step < args.warmup_steps:
        return args.lr * (step + 1) / args.warmup_steps
    progress = (step - args.warmup_steps) / max(1, args.steps - args.warmup_steps)
    return args.lr * 0.5 * (1.0 + math.cos(math.pi * progress))


def evaluate(model, loader):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for images, labels in loader:
            logits = model(channel(images))
            correct += (logits.argmax(1) == labels).sum().item()
            total += labels.numel()
    model.train()
    return correct, total


def close(loader):
    if hasattr(loader, "close"):  # gst_train.torch.Loader: stops its pipeline
        loader.close()


def train(args, writer):
    """Trains and evaluates: returns the exit status."""
    torch.manual_seed(args.seed)
    num_classes = class_count(os.path.join(args.data, "train"))
    model = build_model(args.model, num_classes, in_channels=1)
    initial = [p.detach().clone() for p in model.parameters()]
    decay = [p for p in model.parameters() if p.ndim > 1]
    no_decay = [p for p in model.parameters() if p.ndim <= 1]
    optimizer = torch.optim.SGD([{"params": decay, "weight_decay": args.weight_decay},
                                 {"params": no_decay, "weight_decay": 0.0}],
                                lr=args.lr, momentum=0.9, nesterov=True)

    make = gst_loaders if args.loader == "gst" else torch_loaders
    progress = {"step": 0, "stage": "training", "images": 0, "fresh": 0}
    loaders, interrupted = [], False
    try:
        train_loader, make_test_loader, loader_stats = make(args)
        loaders.append(train_loader)
        started = time.monotonic()
        steps, epochs, finite = train_steps(args, writer, model, optimizer, train_loader,
                                            loader_stats, progress)
        train_seconds = time.monotonic() - started
        close(train_loader)

        changed = any(not torch.equal(a, b.detach())
                      for a, b in zip(initial, model.parameters()))
        if steps < args.steps or not finite or not changed:
            why = ("a loss was not finite" if not finite else
                   f"{steps} steps of {args.steps}" if steps < args.steps else
                   "the weights did not change")
            print(f"{PROG}: did not train ({why})", flush=True)
            return 1

        progress["stage"] = "evaluating"
        eval_start = time.monotonic()
        test_loader = make_test_loader()
        loaders.append(test_loader)
        correct, total = evaluate(model, test_loader)
        eval_seconds = time.monotonic() - eval_start
        accuracy = 100.0 * correct / max(1, total)
        writer.add_scalar("eval/top1_accuracy", accuracy, steps)
        print(f"{PROG}: {args.loader}: {args.model}, {steps} steps of {args.batch_size} "
              f"in {train_seconds:.1f} s ({epochs} epochs begun; {progress['fresh']} fresh "
              f"images of {progress['images']}), test accuracy "
              f"{accuracy:.2f}% ({correct}/{total}, evaluated in {eval_seconds:.1f} s)",
              flush=True)
        return 0
    except KeyboardInterrupt:
        interrupted = True
    finally:
        for loader in loaders:
            close(loader)
    if interrupted:
        print(f"{PROG}: interrupted at step {progress['step']} while {progress['stage']}: "
              "loader closed, stopped cleanly", flush=True)
        return 128 + signal.SIGINT


def train_steps(args, writer, model, optimizer, train_loader, loader_stats, progress):
    """Trains for args.steps steps, epoch after epoch: returns (steps done,
    epochs begun, whether every loss was finite)."""
    step = epoch = 0

    def new_interval():
        return {"images": 0, "seconds": 0.0, "wait": 0.0, "loss": 0.0, "steps": 0}
    interval, mark = new_interval(), time.monotonic()
    while step < args.steps:
        if hasattr(train_loader, "set_epoch"):
            train_loader.set_epoch(epoch)
        epoch += 1
        batches, epoch_start_step = iter(train_loader), step
        while step < args.steps:
            wait_start = time.monotonic()
            try:
                images, labels = next(batches)
            except StopIteration:
                break
            interval["wait"] += time.monotonic() - wait_start

            lr = learning_rate(step, args)
            for group in optimizer.param_groups:
                group["lr"] = lr
            loss = F.cross_entropy(model(channel(images)), labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            step += 1
            progress["step"] = step

            value = loss.item()
            if not math.isfinite(value):
                print(f"{PROG}: step {step}: the loss is {value}", flush=True)
                return step, epoch, False
            interval["loss"] += value
            interval["steps"] += 1
            interval["images"] += labels.numel()
            if step % args.log_every == 0 or step == args.steps:
                now = time.monotonic()
                interval["seconds"] = now - mark
                stats = loader_stats(interval)
                progress["images"], progress["fresh"] = stats["images"], stats["fresh_images"]
                report(writer, step, lr, interval, stats)
                interval, mark = new_interval(), now
        del batches
        if step == epoch_start_step:
            print(f"{PROG}: epoch {epoch} gave no batch (fewer than --batch-size "
                  "images, and whole batches only)", flush=True)
            break
    return step, epoch, True


def report(writer, step, lr, interval, stats):
    loss = interval["loss"] / max(1, interval["steps"])
    writer.add_scalar("train/loss", loss, step)
    writer.add_scalar("train/learning_rate", lr, step)
    writer.add_scalar("data/images_per_second", stats["images_per_second"], step)
    writer.add_scalar("data/fresh_images_per_second", stats["fresh_images_per_second"], step)
    writer.add_scalar("data/wait_fraction", stats["data_wait_fraction"], step)
    writer.add_scalar("data/echo_factor", stats["echo_factor"], step)
    writer.flush()
    print(f"step {step} | loss {loss:.4f} | lr {lr:.4f} | "
          f"{stats['images_per_second']:.0f} images/s, "
          f"{stats['fresh_images_per_second']:.0f} fresh | "
          f"data wait {100 * stats['data_wait_fraction']:.0f}% | "
          f"echo {stats['echo_factor']:.2f}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loader", choices=("gst", "dataloader"), default="gst",
                    help="gst-train's Loader (default) or torchvision's ImageFolder + "
                         "DataLoader")
    ap.add_argument("--data", default="data/fashion-mnist",
                    help="ImageFolder tree with train/ and test/; written with "
                         "Fashion-MNIST where missing (default %(default)s)")
    ap.add_argument("--dataset-tool", help="gst-train-dataset to write --data with")
    ap.add_argument("--steps", type=int, default=500, help="training steps (%(default)s)")
    ap.add_argument("--logdir", default="runs/train-torch",
                    help="TensorBoard folder (default %(default)s)")
    ap.add_argument("--log-every", type=int, default=25,
                    help="steps between progress lines (%(default)s)")
    ap.add_argument("--model", default="resnet20",
                    choices=("resnet20", "resnet32", "resnet18", "resnet34", "resnet50"))
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--eval-batch-size", type=int, default=256)
    ap.add_argument("--size", type=int, default=28, help="training image size (%(default)s)")
    ap.add_argument("--scale-min", type=float, default=0.35,
                    help="RandomResizedCrop's smallest area (%(default)s)")
    ap.add_argument("--echo", help="adaptive (the default with --loader gst), none, "
                    "or a fixed factor of at least 1")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--warmup-steps", type=int, default=50)
    ap.add_argument("--weight-decay", type=float, default=5e-4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=0,
                    help="PyTorch's intra-op threads (0: PyTorch's default)")
    ap.add_argument("--data-threads", type=int, default=0,
                    help="gst-train's data threads (0: its default)")
    ap.add_argument("--workers", type=int, default=2,
                    help="DataLoader worker processes (%(default)s)")
    args = ap.parse_args()
    if args.steps < 1 or args.log_every < 1 or args.batch_size < 1:
        fail("--steps, --log-every and --batch-size take a positive number")
    if args.echo is None:
        args.echo = "adaptive" if args.loader == "gst" else "none"
    elif args.loader == "dataloader" and args.echo != "none":
        fail(f"--echo {args.echo}: --loader dataloader does not echo")
    if args.echo not in ("adaptive", "none"):
        try:
            if float(args.echo) < 1:
                raise ValueError
        except ValueError:
            fail(f"--echo {args.echo}: adaptive, none, or a factor of at least 1")
    args.warmup_steps = min(args.warmup_steps, args.steps)
    if args.threads:
        torch.set_num_threads(args.threads)

    if args.loader == "gst":
        import_loader()  # before anything is written
    ensure_dataset(args.data, args.dataset_tool)
    from torch.utils.tensorboard import SummaryWriter
    writer = SummaryWriter(args.logdir)
    through = (f"gst_train.torch.Loader, echo {args.echo}" if args.loader == "gst"
               else "ImageFolder + DataLoader")
    print(f"{PROG}: {args.model} on {args.data} through {through}, {args.steps} steps "
          f"of {args.batch_size}; TensorBoard: {args.logdir}", flush=True)
    try:
        status = train(args, writer)
    except KeyboardInterrupt:  # outside the loop (the loaders closed already)
        print(f"{PROG}: interrupted", flush=True)
        status = 128 + signal.SIGINT
    finally:
        writer.close()
    sys.exit(status)


if __name__ == "__main__":
    main()
