#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""PyTorch reference for the trainer/ library's tests.

trainer/ trains torchvision ResNets on the CPU and must match PyTorch. This
script produces the PyTorch side of that comparison and checks checkpoints
written by the C side. It needs Debian's torch and torchvision only; the
safetensors file format is implemented here (no safetensors package).

Subcommands:

  reference         run K SGD steps on one random batch; write the initial
                    weights, the batch, the first step's logits/loss/gradients,
                    every step's loss and the final state to one .safetensors
                    file (--forward-only: initial weights, batch and one
                    train-mode forward only), with the same run in float64
                    as the yardstick. --device cuda runs both on the GPU
                    (TF32 off, deterministic cuDNN); --precision bf16 runs
                    the first under autocast to bfloat16, channels_last, as
                    a bf16 training script would.
  check-checkpoint  load a checkpoint (torchvision state_dict names; tensors
                    named optimizer.* are dropped), forward an expect file's
                    images in eval mode and compare with its eval_logits.
  count             print a model's number of parameters.

Conventions shared with the C library:
  * images are uint8 NHWC [N,H,W,3]; x = (u8/255 - mean)/std with the
    ImageNet mean/std below, then NCHW for torch;
  * loss = F.cross_entropy(logits, labels, label_smoothing=ls), batch mean;
  * SGD (PyTorch's update rule) with two parameter groups: weight decay on
    parameters with ndim > 1 (conv and fc weights), none on BN weights/biases
    and the fc bias; constant lr;
  * BatchNorm: PyTorch defaults (momentum 0.1, eps 1e-5, running_var updated
    with the unbiased batch variance).

Exit status: 0 success, 1 check failed, 2 usage or file error.
"""
import argparse
import contextlib
import glob
import json
import os
import struct
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torchvision.models.resnet import BasicBlock, conv1x1

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)

# ---------------------------------------------------------------------------
# safetensors
# ---------------------------------------------------------------------------

# safetensors dtype name <-> (torch dtype, little-endian numpy dtype)
_DTYPES = {
    "F64": (torch.float64, "<f8"),
    "F32": (torch.float32, "<f4"),
    "F16": (torch.float16, "<f2"),
    "I64": (torch.int64, "<i8"),
    "I32": (torch.int32, "<i4"),
    "I16": (torch.int16, "<i2"),
    "I8": (torch.int8, "i1"),
    "U8": (torch.uint8, "u1"),
}
_BY_TORCH = {t: (name, npd) for name, (t, npd) in _DTYPES.items()}


def save_safetensors(path, tensors, metadata=None):
    """Write tensors (name -> CPU tensor, in dict order) to a .safetensors file.

    Layout: u64 LE header length, JSON header padded with spaces so the data
    starts 8-byte aligned, then each tensor's little-endian row-major bytes.
    """
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, t in tensors.items():
        t = t.detach().cpu()
        if t.dtype not in _BY_TORCH:
            raise ValueError(f"{name}: unsupported dtype {t.dtype}")
        dname, npd = _BY_TORCH[t.dtype]
        blob = t.contiguous().numpy().astype(npd, copy=False).tobytes()
        header[name] = {"dtype": dname, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * (-len(hjson) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for blob in blobs:
            f.write(blob)


def load_safetensors(path):
    """Read a .safetensors file: returns (dict name -> tensor, metadata dict)."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: too short for a safetensors file")
    (hlen,) = struct.unpack("<Q", raw[:8])
    if 8 + hlen > len(raw):
        raise ValueError(f"{path}: header length {hlen} past end of file")
    header = json.loads(raw[8:8 + hlen].decode("utf-8"))
    metadata = header.pop("__metadata__", None) or {}
    data = memoryview(raw)[8 + hlen:]
    tensors = {}
    for name, info in header.items():
        if info["dtype"] not in _DTYPES:
            raise ValueError(f"{path}: {name}: unsupported dtype {info['dtype']}")
        tdt, npd = _DTYPES[info["dtype"]]
        begin, end = info["data_offsets"]
        shape = tuple(info["shape"])
        if not 0 <= begin <= end <= len(data):
            raise ValueError(f"{path}: {name}: data offsets out of range")
        arr = np.frombuffer(data[begin:end], dtype=npd)
        if arr.size != int(np.prod(shape, dtype=np.int64)):
            raise ValueError(f"{path}: {name}: {arr.size} elements for shape {shape}")
        tensors[name] = torch.from_numpy(arr.astype(arr.dtype.newbyteorder("="))
                                         .reshape(shape).copy()).to(tdt)
    return tensors, metadata


# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------

class CifarResNet(nn.Module):
    """He et al. 2016 CIFAR ResNet (depth 6n+2) with torchvision's names.

    3x3 stem 3->16 stride 1, no max-pool, three stages of n BasicBlocks
    (16/32/64 channels, stride 2 at the start of layer2 and layer3), option-B
    projection shortcuts (torchvision's downsample), global average pool, fc.
    Initialised exactly as torchvision's ResNet.__init__.
    """

    def __init__(self, depth, num_classes=10, zero_init_residual=False):
        super().__init__()
        if (depth - 2) % 6 != 0 or depth < 8:
            raise ValueError(f"CIFAR ResNet depth must be 6n+2, got {depth}")
        n = (depth - 2) // 6
        self.inplanes = 16
        self.conv1 = nn.Conv2d(3, 16, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = self._make_layer(16, n, stride=1)
        self.layer2 = self._make_layer(32, n, stride=2)
        self.layer3 = self._make_layer(64, n, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(64 * BasicBlock.expansion, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, BasicBlock):
                    nn.init.constant_(m.bn2.weight, 0)

    def _make_layer(self, planes, blocks, stride):
        downsample = None
        if stride != 1 or self.inplanes != planes * BasicBlock.expansion:
            downsample = nn.Sequential(
                conv1x1(self.inplanes, planes * BasicBlock.expansion, stride),
                nn.BatchNorm2d(planes * BasicBlock.expansion))
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * BasicBlock.expansion
        layers += [BasicBlock(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def cifar_resnet(depth, num_classes=10, zero_init_residual=False):
    return CifarResNet(depth, num_classes, zero_init_residual)


MODELS = ("resnet18", "resnet34", "resnet50", "resnet101", "resnet20", "resnet32")


def build_model(name, num_classes, zero_init_residual=False):
    """torchvision resnet18/34/50/101 (no weights) or CIFAR resnet20/32."""
    if name in ("resnet20", "resnet32"):
        return cifar_resnet(int(name[6:]), num_classes, zero_init_residual)
    if name in ("resnet18", "resnet34", "resnet50", "resnet101"):
        return getattr(torchvision.models, name)(
            weights=None, num_classes=num_classes, zero_init_residual=zero_init_residual)
    raise ValueError(f"unknown model {name!r} (known: {', '.join(MODELS)})")


# ---------------------------------------------------------------------------
# Training pieces
# ---------------------------------------------------------------------------

def normalize(images_u8):
    """uint8 NHWC [N,H,W,3] -> normalised float32 NCHW."""
    x = images_u8.to(torch.float32) / 255.0
    x = (x - torch.tensor(MEAN)) / torch.tensor(STD)
    return x.permute(0, 3, 1, 2).contiguous()


def make_optimizer(model, lr, momentum, weight_decay, nesterov):
    """SGD; weight decay only on parameters with ndim > 1."""
    decay = [p for p in model.parameters() if p.ndim > 1]
    no_decay = [p for p in model.parameters() if p.ndim <= 1]
    return torch.optim.SGD(
        [{"params": decay, "weight_decay": weight_decay},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=lr, momentum=momentum, nesterov=nesterov)


def random_batch(batch, size, classes, seed):
    """Random uint8 NHWC images and int32 labels from a generator seeded with
    seed (independent of how much randomness model construction consumed)."""
    g = torch.Generator().manual_seed(seed)
    images = torch.randint(0, 256, (batch, size, size, 3), generator=g, dtype=torch.uint8)
    labels = torch.randint(0, classes, (batch,), generator=g, dtype=torch.int32)
    return images, labels


# Debian's mate-backgrounds photographs (--photos): their JPEGs are
# photographs, their PNGs rendered graphics.
PHOTO_DIR = "/usr/share/backgrounds/mate"


def photo_files(folder):
    """The JPEG photographs under @folder, sorted (the same on every machine
    that has the package)."""
    return sorted(glob.glob(os.path.join(folder, "**", "*.jpg"), recursive=True))


def photo_batch(batch, size, classes, seed, folder):
    """Crops of photographs instead of noise: natural images have strong
    spatial correlation and channel means far from zero, which noise lacks and
    which changes how sums round (a convolution's weight gradient adds
    terms of one sign). Sample i is a size x size crop of a photograph
    scaled so that its shorter side is 2 to 4 times @size, at a random
    place; photograph, scale, place and label from a generator seeded with
    @seed."""
    from PIL import Image
    files = photo_files(folder)
    if not files:
        raise SystemExit(f"error: --photos {folder}: no JPEG photographs there "
                         "(Debian's mate-backgrounds)")
    g = torch.Generator().manual_seed(seed)
    images = torch.empty((batch, size, size, 3), dtype=torch.uint8)
    for i in range(batch):
        path = files[int(torch.randint(0, len(files), (1,), generator=g))]
        short = size * int(torch.randint(2, 5, (1,), generator=g))
        with Image.open(path) as im:
            im.draft("RGB", (short, short))
            im = im.convert("RGB")
            scale = short / min(im.size)
            im = im.resize((max(size, round(im.size[0] * scale)),
                            max(size, round(im.size[1] * scale))), Image.BILINEAR)
        x = int(torch.randint(0, im.size[0] - size + 1, (1,), generator=g))
        y = int(torch.randint(0, im.size[1] - size + 1, (1,), generator=g))
        crop = im.crop((x, y, x + size, y + size))
        images[i] = torch.from_numpy(np.asarray(crop, dtype=np.uint8).copy())
    labels = torch.randint(0, classes, (batch,), generator=g, dtype=torch.int32)
    return images, labels


def make_batch(a, batch, seed):
    """The batch of data seed @seed: photo crops with --photos, else noise."""
    if getattr(a, "photos", None):
        return photo_batch(batch, a.size, a.classes, seed, a.photos)
    return random_batch(batch, a.size, a.classes, seed)


def state_tensors(prefix, model):
    return {prefix + k: v.detach().clone() for k, v in model.state_dict().items()}


# ---------------------------------------------------------------------------
# Subcommands
# ---------------------------------------------------------------------------

class ReluMargin:
    """Smallest |input| of any ReLU while active: how close the batch comes
    to a ReLU switching over. fp32 implementations that sum in different
    orders differ by about 1e-6, so an input closer to zero than that may
    be cut by one and passed by the other, and the gradients then differ
    by far more than rounding; the reference picks a batch that stays
    clear of this, so that the comparison is well-conditioned."""

    def __init__(self, model):
        self.margin = float("inf")
        self.handles = [m.register_forward_pre_hook(self.hook)
                        for m in model.modules() if isinstance(m, torch.nn.ReLU)]

    def hook(self, module, inputs):
        # exact zeros (a zero-initialised branch added to a cut ReLU) are
        # exact in every implementation: they do not count
        magnitude = inputs[0].detach().abs()
        nonzero = magnitude[magnitude > 0]
        if nonzero.numel():
            self.margin = min(self.margin, nonzero.min().item())

    def remove(self):
        for h in self.handles:
            h.remove()


# parity-rule.h's fp32 rule, which the search below applies to PyTorch's own
# run: the floor of each kind of tensor (parity_floor), and the ceiling on
# PyTorch's own error beyond which the C side calls the reference
# ill-conditioned (YARDSTICK times it passes CEILING times the floor).
TOLERANCE_FORWARD = 1e-5
TOLERANCE_GRADIENT = 5e-5
TOLERANCE_WEIGHTS = 5e-5
YARDSTICK = 4.0
CEILING = 10.0


def parity_floor(name):
    """The floor parity.c and dist-parity.c compare tensor @name at: the
    first forward pass (logits of any rank, the loss), the first gradients,
    then everything after the steps."""
    if name.endswith("step0.logits") or name == "step0.loss":
        return TOLERANCE_FORWARD
    if name.startswith("step0.grad."):
        return TOLERANCE_GRADIENT
    return TOLERANCE_WEIGHTS


def parity_error(values, exact):
    """parity_max_error: max|values - exact| / max|exact|, NaN the largest."""
    diff = (values.to(torch.float64) - exact).abs()
    if torch.isnan(diff).any():
        return float("inf")
    scale = exact.abs().max().item() if exact.numel() else 0.0
    worst = diff.max().item() if diff.numel() else 0.0
    return worst / scale if scale > 0 else worst


def worst_conditioning(result, exact):
    """How close PyTorch's own fp32 run comes to the C side's ceiling on
    this batch: the largest of its error against float64 over the error the
    ceiling allows (CEILING / YARDSTICK times the tensor's floor), with the
    tensor's name. Above 1 the C side would fail the case as ill-conditioned
    whatever our error: the reference proves nothing. Which batch that is
    depends on the CPU (PyTorch's kernels round differently on AVX-512 and
    AVX2), so the search measures it where it runs."""
    worst = (0.0, None)
    for name, values in result.items():
        want = exact.get(name)
        if want is None or not values.is_floating_point():
            continue
        allowed = CEILING / YARDSTICK * parity_floor(name)
        ratio = parity_error(values, want) / allowed
        if ratio > worst[0]:
            worst = (ratio, name)
    return worst


def precision_context(a, precision):
    """Autocast to bfloat16 for a bf16 run (forward and loss), else nothing."""
    if precision == "bf16":
        return torch.autocast(a.device, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def run_reference(a, init_state, images, labels, precision="fp32"):
    """Trains a copy of the model from init_state on one batch, on a.device,
    in precision: fp32; bf16 (autocast, fp32 weights, channels_last); f64
    (float64 throughout, the yardstick). Returns the tensors to save (on
    the CPU; bf16 values as float32) and the ReLU margin over every forward
    pass."""
    model = build_model(a.model, a.classes, bool(a.zero_init_residual)).train()
    model.load_state_dict(init_state)
    x, y = normalize(images), labels.long()
    if precision == "f64":
        model.to(torch.float64)
        x = x.to(torch.float64)
    model.to(a.device)
    x, y = x.to(a.device), y.to(a.device)
    if precision == "bf16":
        model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    margin = ReluMargin(model)
    out = {}
    if a.forward_only:
        with torch.no_grad(), precision_context(a, precision):
            logits = model(x)
            loss = F.cross_entropy(logits, y, label_smoothing=a.label_smoothing)
        out["step0.logits"], out["step0.loss"] = logits, loss.reshape(1)
        margin.remove()
        return host_tensors(out), margin.margin, [loss.item()]

    opt = make_optimizer(model, a.lr, a.momentum, a.weight_decay, bool(a.nesterov))
    losses = []
    for step in range(a.steps):
        opt.zero_grad(set_to_none=True)
        with precision_context(a, precision):
            logits = model(x)
            loss = F.cross_entropy(logits, y, label_smoothing=a.label_smoothing)
        loss.backward()
        if step == 0:
            out["step0.logits"] = logits.detach().clone()
            out["step0.loss"] = loss.detach().reshape(1).clone()
            for n, p in model.named_parameters():
                out["step0.grad." + n] = p.grad.detach().clone()
        opt.step()
        losses.append(loss.item())
    out["losses"] = torch.tensor(losses, dtype=torch.float32)
    out.update(state_tensors("final.", model))
    model.eval()
    with torch.no_grad(), precision_context(a, precision):
        out["final.eval_logits"] = model(x)
    margin.remove()
    return host_tensors(out), margin.margin, losses


def host_tensors(tensors):
    """On the CPU, in the standard layout; bfloat16 (autocast's outputs) as
    float32, which safetensors here and the C side read."""
    out = {}
    for name, t in tensors.items():
        t = t.detach().to("cpu").contiguous()
        out[name] = t.float() if t.dtype == torch.bfloat16 else t
    return out


def use_device(a):
    """Makes a.device usable for a reference: on the GPU, no TF32 anywhere
    (fp32 must be fp32) and cuDNN's deterministic algorithms only. False
    when there is no such device."""
    if a.device == "cpu":
        return True
    if not torch.cuda.is_available():
        return False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    return True


def perturbed_state(state, scale, seed):
    """@state with every floating-point tensor multiplied by 1 + @scale * a
    standard normal draw (its own per element, from @seed): a change of the
    size another implementation's rounding makes (fp32 summing in another
    order differs by about 1e-6 relative), to see how far that moves the
    result."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, value in state.items():
        if value.is_floating_point():
            noise = torch.randn(value.shape, generator=g, dtype=torch.float64)
            value = value * (1 + scale * noise).to(value.dtype)
        out[name] = value
    return out


def perturbation_spread(a, run, init_state, images, labels, result, exact, seed):
    """a.perturbations more fp32 runs on the batch from @init_state
    perturbed at rounding level (perturbed_state, seeded from @seed): the
    worst conditioning among them (as worst_conditioning), and per tensor
    the largest error from float64 (@exact) of those runs and of @result.
    Stops at the first run past the ceiling: the batch is out then."""
    spread = {name: parity_error(value, exact[name])
              for name, value in result.items()
              if name in exact and value.is_floating_point()}
    conditioning = (0.0, None)
    for k in range(a.perturbations):
        state = perturbed_state(init_state, a.perturbation, seed * 1000 + k)
        other, _, _ = run(images, labels, "fp32", state)
        conditioning = max(conditioning, worst_conditioning(other, exact),
                           key=lambda c: c[0])
        if conditioning[0] > 1.0:
            break
        for name in spread:
            spread[name] = max(spread[name], parity_error(other[name], exact[name]))
    return conditioning, spread


def choose_batch(a, batch, run, init_state, precision="fp32", conditioned=True):
    """The batch of the first data seed (a.seed, a.seed + 1, ...) that keeps
    every ReLU input a.min_relu_margin from zero and, in fp32 with
    @conditioned, whose PyTorch run stays within the C side's ceiling of
    float64 (worst_conditioning): both are properties of the batch and the
    CPU together. With a.perturbations = K > 0, K more fp32 runs from
    @init_state perturbed at rounding level (perturbation_spread) must stay
    within it too: a batch where a ReLU or a batch-norm sits at rounding
    distance from a switch moves by far more than rounding under them,
    whatever one run happened to give (PyTorch's own fp32 result differs
    between processes where its kernels' paths depend on alignment). Their
    largest error on each tensor is kept as "spread.<name>": how far from
    float64 a correct fp32 implementation may land on this batch.

    @run(images, labels, precision[, state]) trains on the batch (from
    @state, the initial weights, where given, else @init_state) and returns
    (tensors, ReLU margin, losses). Returns (data seed, images, labels,
    tensors with their "f64." yardsticks (and "spread."), losses, margin,
    (conditioning, worst tensor)), or None after saying why no batch would
    do."""
    best = None
    for attempt in range(a.max_attempts):
        data_seed = a.seed + attempt
        images, labels = make_batch(a, batch, data_seed)
        result, margin, losses = run(images, labels, precision)
        conditioning, exact, spread = (float("inf"), None), None, {}
        if margin >= a.min_relu_margin and not conditioned:
            conditioning = (0.0, None)
        elif margin >= a.min_relu_margin:
            # The same run in float64: the yardstick for how far fp32 or bf16
            # can be from the exact result on this batch (PyTorch's own error).
            exact, _, _ = run(images, labels, "f64")
            conditioning = (worst_conditioning(result, exact)
                            if precision == "fp32" else (0.0, None))
            if precision == "fp32" and a.perturbations > 0 and conditioning[0] <= 1.0:
                perturbed, spread = perturbation_spread(
                    a, run, init_state, images, labels, result, exact, data_seed)
                conditioning = max(conditioning, perturbed, key=lambda c: c[0])
        if a.verbose:
            print(f"data seed {data_seed}: ReLU margin {margin:.3g}, conditioning "
                  f"{conditioning[0]:.3g} ({conditioning[1]})", file=sys.stderr)
        relu = min(margin / a.min_relu_margin, 1.0) if a.min_relu_margin > 0 else 1.0
        if best is None or (relu, -conditioning[0]) > best[0]:
            best = ((relu, -conditioning[0]), data_seed, images, labels, result,
                    losses, margin, conditioning, exact, spread)
        if margin >= a.min_relu_margin and conditioning[0] <= 1.0:
            break
    (_, data_seed, images, labels, result, losses, margin, conditioning, exact,
     spread) = best
    if margin < a.min_relu_margin:
        print(f"error: no batch among {a.max_attempts} keeps every ReLU input "
              f"{a.min_relu_margin:g} from zero (best {margin:.3g}): use a smaller "
              f"batch or image size", file=sys.stderr)
        return None
    if conditioning[0] > 1.0:
        print(f"error: no batch among {a.max_attempts} with a ReLU margin of "
              f"{a.min_relu_margin:g} is well-conditioned on this CPU: at best "
              f"PyTorch's own fp32 {conditioning[1]} is {conditioning[0]:.3g} times "
              f"what the ceiling allows from float64 (parity-rule.h); use fewer "
              f"steps, a smaller lr or zero-init residuals", file=sys.stderr)
        return None
    for name, value in (exact or {}).items():
        if value.is_floating_point():
            result["f64." + name] = value.to(torch.float64)
    for name, error in spread.items():
        result["spread." + name] = torch.tensor([error], dtype=torch.float64)
    return data_seed, images, labels, result, losses, margin, conditioning


def cmd_reference(a):
    torch.set_num_threads(a.threads)
    if not use_device(a):
        print(f"error: --device {a.device}: PyTorch sees no CUDA device", file=sys.stderr)
        return 2
    torch.manual_seed(a.seed)
    model = build_model(a.model, a.classes, bool(a.zero_init_residual)).train()
    init_state = {k: v.detach().clone() for k, v in model.state_dict().items()}

    def run(images, labels, precision, state=init_state):
        return run_reference(a, state, images, labels, precision)

    chosen = choose_batch(a, a.batch, run, init_state, a.precision)
    if chosen is None:
        return 1
    data_seed, images, labels, result, losses, margin, conditioning = chosen

    out = state_tensors("init.", model)
    out["images"], out["labels"] = images, labels
    out.update(result)
    meta = {k: getattr(a, k) for k in (
        "model", "classes", "size", "batch", "steps", "lr", "momentum", "weight_decay",
        "label_smoothing", "nesterov", "zero_init_residual", "seed", "threads",
        "device", "precision")}
    meta.update(torch=torch.__version__, forward_only=int(a.forward_only),
                mean=",".join(map(str, MEAN)), std=",".join(map(str, STD)),
                data_seed=data_seed, relu_margin=f"{margin:.3g}",
                conditioning=f"{conditioning[0]:.3g}")
    save_safetensors(a.out, out, meta)
    print(f"{a.out}: data seed {data_seed}, ReLU margin {margin:.3g}, "
          f"conditioning {conditioning[0]:.3g} ({conditioning[1]}), losses "
          + " ".join(f"{v:.6f}" for v in losses))
    return 0


def cmd_check_checkpoint(a):
    torch.set_num_threads(a.threads)
    try:
        ck, _ = load_safetensors(a.checkpoint)
        ex, _ = load_safetensors(a.expect)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for name in ("images", "eval_logits"):
        if name not in ex:
            print(f"error: {a.expect} has no tensor {name!r}", file=sys.stderr)
            return 2
    dropped = [k for k in ck if k.startswith("optimizer.")]
    if dropped:
        print(f"dropped {len(dropped)} optimizer.* tensors from the checkpoint")
    sd = {k: v for k, v in ck.items() if not k.startswith("optimizer.")}
    for k in sd:
        if k.endswith("num_batches_tracked"):
            sd[k] = sd[k].to(torch.int64)

    model = build_model(a.model, a.classes)
    try:
        model.load_state_dict(sd, strict=True)
    except RuntimeError as e:
        print(f"FAIL: checkpoint does not match {a.model} ({a.classes} classes):\n{e}")
        return 1
    model.eval()
    with torch.no_grad():
        got = model(normalize(ex["images"]))
    want = ex["eval_logits"].to(torch.float32)
    if got.shape != want.shape:
        print(f"FAIL: logits shape {tuple(got.shape)}, expected {tuple(want.shape)}")
        return 1
    diff = (got - want).abs().max().item()
    scale = want.abs().max().item()
    rel = diff / scale if scale > 0 else (0.0 if diff == 0 else float("inf"))
    ok = diff <= a.rtol * scale and bool(torch.isfinite(got).all())
    print(f"{'OK' if ok else 'FAIL'}: max|a-b| {diff:.3e}, max|b| {scale:.3e}, "
          f"relative error {rel:.3e} (rtol {a.rtol:g})")
    return 0 if ok else 1


def cmd_count(a):
    print(sum(p.numel() for p in build_model(a.model, a.classes).parameters()))
    return 0


def add_training_arguments(p, size=32, batch=8, batch_help=None):
    """The options of a training run: the model, the batch and SGD's
    settings (ddp_reference.py's runs take them too, with its defaults)."""
    p.add_argument("--model", required=True, choices=MODELS)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--size", type=int, default=size)
    p.add_argument("--batch", type=int, default=batch, help=batch_help)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--weight-decay", type=float, default=1e-4)
    p.add_argument("--label-smoothing", type=float, default=0.1)
    p.add_argument("--nesterov", type=int, choices=(0, 1), default=0)
    p.add_argument("--zero-init-residual", type=int, choices=(0, 1), default=0)
    p.add_argument("--seed", type=int, default=1)


def add_data_arguments(p, inputs="every ReLU input"):
    """The options of choose_batch's search: until @inputs stay clear of zero."""
    p.add_argument("--min-relu-margin", type=float, default=0.0,
                   help=f"try data seeds seed, seed+1, ... until {inputs} "
                   "stays this far from zero")
    p.add_argument("--max-attempts", type=int, default=200)
    p.add_argument("--perturbations", type=int, default=0, metavar="K",
                   help="K more fp32 runs from initial weights perturbed at "
                   "rounding level must stay within the ceiling too; their "
                   "largest errors are saved as spread.<name>")
    p.add_argument("--perturbation", type=float, default=1e-6,
                   help="the relative size of those perturbations")
    p.add_argument("--verbose", action="store_true",
                   help="one line per data seed tried")
    p.add_argument("--photos", nargs="?", const=PHOTO_DIR, default=None,
                   metavar="FOLDER",
                   help="crops of the JPEG photographs under FOLDER (default "
                   f"{PHOTO_DIR}) instead of random noise")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("reference", help="write a reference training run")
    add_training_arguments(r)
    r.add_argument("--threads", type=int, default=2)
    r.add_argument("--forward-only", action="store_true")
    r.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="where PyTorch runs (both the run and its float64 yardstick)")
    r.add_argument("--precision", choices=("fp32", "bf16"), default="fp32",
                   help="bf16: autocast to bfloat16 around forward and loss, "
                   "channels_last")
    add_data_arguments(r)
    r.add_argument("--out", required=True)

    c = sub.add_parser("check-checkpoint", help="compare a checkpoint's eval logits")
    c.add_argument("--model", required=True, choices=MODELS)
    c.add_argument("--classes", type=int, required=True)
    c.add_argument("--checkpoint", required=True)
    c.add_argument("--expect", required=True)
    c.add_argument("--rtol", type=float, default=1e-4)
    c.add_argument("--threads", type=int, default=2)

    n = sub.add_parser("count", help="print the number of parameters")
    n.add_argument("--model", required=True, choices=MODELS)
    n.add_argument("--classes", type=int, default=1000)

    a = p.parse_args(argv)
    return {"reference": cmd_reference, "check-checkpoint": cmd_check_checkpoint,
            "count": cmd_count}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
