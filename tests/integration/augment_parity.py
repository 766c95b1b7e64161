#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""augment against torchvision 0.14 / torch 1.13, on real photographs.

Usage: augment_parity.py AUGMENT-TOOL
(exits 77 without torch, torchvision, numpy and PIL, or without Debian's
mate-backgrounds photographs)

1. Pixels. For fixed boxes (a 7-11x shrink, a 3-4x shrink, a 2.5x
   enlargement, a non-square output, a flip, a box copied at its own size,
   one axis shrunk and the other enlarged) and for 60 boxes our drawer
   draws, our resampler (augment-ops through the tool) against
   F.resized_crop(uint8 CHW tensor, top, left, h, w, [H, W], antialias=True)
   (then F.hflip). crop=center against Resize(s, antialias=True) +
   CenterCrop, with and without padding; crop=resize against
   F.resize(antialias=True). Every output must be within 2 grey levels of
   torchvision's (max |diff| <= 2); the max and mean differences are printed.
2. The element end to end: filesrc ! imagedec ! augment crop=center|resize
   flip=0 and flip=1, and crop=random-resized flip=1 with a range that
   leaves only the whole image as the box, against torchvision (then
   F.hflip) on PIL's decode of the same JPEG (both are Debian's
   libjpeg-turbo with default settings; the script checks first that an
   identity resize reproduces PIL's pixels). A mirror that is vertical, or
   off by a column, is far more than 2 levels off on a photograph.
3. Crop boxes. 20,000 boxes from our drawer against 20,000 from
   RandomResizedCrop.get_params (torch.manual_seed(0)) per image size and
   ratio range: the default 3/4 .. 4/3, which is symmetric in log (a box
   with its width and height swapped looks the same there), and 1 .. 2
   and 0.5 .. 0.8, which are not (every box wider than tall, or taller
   than wide). Each box of ours must be one that torchvision's rule can
   give: a drawn box has a width / height that rounding of a ratio in the
   range allows ((w - 1/2) / (h + 1/2) <= ratio <= (w + 1/2) / (h - 1/2)),
   an area that rounding of a scale in the range allows, and lies inside
   the image; a fallback box is torchvision's fallback exactly
   (torchvision's own boxes pass the same checks, which checks the
   checks). The two generators differ, so beyond that only distributions
   can agree, compared on h/H, w/W, the area fraction, log(w/h) and the
   box centre. Tolerances:
   - means: |difference| < 5 standard errors of the difference,
     sqrt(var_a / n + var_b / n) (a false alarm has odds of about 1 in 10^6
     per comparison);
   - whole distributions: the two-sample Kolmogorov-Smirnov statistic
     D < 2.23 * sqrt(2 / n) = 0.0223, its critical value at alpha = 1e-4
     (D stays smaller for discrete values such as h and w, so the test is
     conservative there);
   - the share of boxes equal to the central fallback box: within 5
     standard errors of the difference of two proportions.
   Both seeds are fixed, so the outcome is the same on every run.
"""
import math
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
    import torchvision.transforms as T
    import torchvision.transforms.functional as F
    from PIL import Image
except ImportError as e:  # say why we skip
    print(f"SKIP: torch, torchvision, numpy or PIL is not importable ({e})")
    sys.exit(77)

PHOTOS = ["/usr/share/backgrounds/mate/nature/LadyBird.jpg",
          "/usr/share/backgrounds/mate/nature/FreshFlower.jpg"]
MAX_DIFF = 2
N_BOXES = 20000
KS_CRITICAL = 2.23 * math.sqrt(2 / N_BOXES)
SIGMAS = 5.0

TOOL = None
WORK = None
failures = []


def check(ok, message):
    if not ok:
        failures.append(message)
        print("FAIL: " + message)


def tool(*args, capture=False):
    result = subprocess.run([TOOL] + [str(a) for a in args], check=True,
                            capture_output=True, text=True)
    return result.stdout if capture else None


def read_rgb(path, width, height):
    data = np.fromfile(path, dtype=np.uint8)
    assert data.size == width * height * 3, (path, data.size, width, height)
    return data.reshape(height, width, 3)


class Diffs:
    """Max and mean |ours - torchvision| over a family of outputs."""

    def __init__(self, name):
        self.name = name
        self.max = 0
        self.total = 0.0
        self.count = 0

    def add(self, what, ours, reference):
        check(ours.shape == reference.shape,
              f"{what}: shape {ours.shape}, torchvision {reference.shape}")
        if ours.shape != reference.shape:
            return
        diff = np.abs(ours.astype(np.int16) - reference.astype(np.int16))
        check(diff.max() <= MAX_DIFF,
              f"{what}: max difference {diff.max()} > {MAX_DIFF}")
        self.max = max(self.max, int(diff.max()))
        self.total += float(diff.sum())
        self.count += diff.size

    def report(self):
        print(f"{self.name}: max |diff| {self.max}, mean |diff| "
              f"{self.total / max(self.count, 1):.6f} over {self.count} values")


def hwc(tensor):
    return tensor.permute(1, 2, 0).numpy()


def check_pixels(photo, image, tensor, diffs):
    height, width = image.shape[:2]
    raw = os.path.join(WORK, "in.rgb")
    out = os.path.join(WORK, "out.rgb")
    image.tofile(raw)

    # (top, left, box height, box width, out height, out width, flip)
    boxes = [
        (0, 0, height, width, 224, 224, 0),
        (100, 200, 900, 700, 224, 224, 0),
        (500, 600, 100, 80, 224, 224, 0),
        (300, 400, 333, 517, 160, 224, 1),
        (10, 20, 224, 224, 224, 224, 0),
        (7, 9, 60, 300, 90, 200, 1),
    ]
    drawn = tool("boxes", width, height, 60, 5, 0.08, 1.0, 0.75, 4 / 3,
                 capture=True).split("\n")
    for i, line in enumerate(filter(None, drawn)):
        top, left, h, w, _ = map(int, line.split())
        boxes.append((top, left, h, w, 224, 224, i % 2))

    for top, left, h, w, out_h, out_w, flip in boxes:
        tool("crop", raw, width, height, top, left, h, w, out_w, out_h, flip,
             out)
        reference = F.resized_crop(tensor, top, left, h, w, [out_h, out_w],
                                   antialias=True)
        if flip:
            reference = F.hflip(reference)
        diffs["crop"].add(f"{photo}: box {w}x{h} at ({left}, {top}) -> "
                          f"{out_w}x{out_h} flip={flip}",
                          read_rgb(out, out_w, out_h), hwc(reference))

    for short, out_w, out_h in [(256, 224, 224), (200, 224, 224),
                                (320, 288, 224), (224, 224, 224)]:
        tool("center", raw, width, height, short, out_w, out_h, out)
        reference = T.CenterCrop((out_h, out_w))(
            T.Resize(short, antialias=True)(tensor))
        diffs["center"].add(f"{photo}: Resize({short}) + CenterCrop"
                            f"({out_h}, {out_w})",
                            read_rgb(out, out_w, out_h), hwc(reference))

    for out_w, out_h in [(224, 224), (300, 200), (width * 2 // 3, height)]:
        tool("resize", raw, width, height, out_w, out_h, out)
        reference = F.resize(tensor, [out_h, out_w], antialias=True)
        diffs["resize"].add(f"{photo}: resize to {out_w}x{out_h}",
                            read_rgb(out, out_w, out_h), hwc(reference))


def run_element(photo, props, width, height):
    """The images the element makes of @photo, decoded by imagedec."""
    out = os.path.join(WORK, "element.rgb")
    launch = (f'filesrc location="{photo}" blocksize={os.path.getsize(photo)} '
              f"! imagedec ! augment {props} ! fakesink name=sink")
    sizes = tool("pipeline", launch, out, capture=True).split()
    check(sizes == [str(width), str(height)],
          f"{props}: element gave sizes {sizes}, expected {width} {height}")
    return read_rgb(out, width, height)


def check_element(photo, image, tensor, diffs):
    height, width = image.shape[:2]
    # The decoders agree: an identity resize gives PIL's pixels back.
    decoded = run_element(photo, f"crop=resize width={width} height={height} "
                          "flip=0", width, height)
    same = np.array_equal(decoded, image)
    check(same, f"{photo}: imagedec and PIL decode differently "
          f"(max {np.abs(decoded.astype(int) - image).max()})")

    centre = T.CenterCrop(224)(T.Resize(256, antialias=True)(tensor))
    resized = F.resize(tensor, [240, 320], antialias=True)
    # scale 1 at the image's own ratio: every try is the whole image (and
    # so is the fallback), so the box is known without our generator.
    whole = (f"crop=random-resized scale-min=1 scale-max=1 "
             f"ratio-min={width / height!r} ratio-max={width / height!r}")
    for flip in (0, 1):
        cases = [
            ("crop=center resize-short=256 width=224 height=224 n-threads=3",
             224, 224, centre),
            ("crop=resize width=320 height=240", 320, 240, resized),
        ]
        if flip:
            cases.append((f"{whole} width=320 height=240 seed=5", 320, 240,
                          resized))
        for props, out_w, out_h, reference in cases:
            ours = run_element(photo, f"{props} flip={flip}", out_w, out_h)
            if flip:
                reference = F.hflip(reference)
            diffs["element"].add(f"{photo}: element {props} flip={flip}",
                                 ours, hwc(reference))


def ks_statistic(a, b):
    """Two-sample Kolmogorov-Smirnov D: the largest gap between the two
    empirical distribution functions."""
    a = np.sort(a)
    b = np.sort(b)
    values = np.concatenate([a, b])
    cdf_a = np.searchsorted(a, values, side="right") / a.size
    cdf_b = np.searchsorted(b, values, side="right") / b.size
    return float(np.max(np.abs(cdf_a - cdf_b)))


def fallback_box(width, height, ratio_min, ratio_max):
    in_ratio = width / height
    if in_ratio < ratio_min:
        w, h = width, int(round(width / ratio_min))
    elif in_ratio > ratio_max:
        w, h = int(round(height * ratio_max)), height
    else:
        w, h = width, height
    return ((height - h) // 2, (width - w) // 2, h, w)


def rule_allows(boxes, width, height, scale, ratio):
    """Which of @boxes (top, left, h, w rows) torchvision's tries can give:
    w = round(sqrt(t * a)) and h = round(sqrt(t / a)) for an area t in
    scale * width * height and a ratio a in @ratio, inside the image."""
    top, left, h, w = boxes.T
    area = width * height
    return ((w + 0.5) / (h - 0.5) >= ratio[0]) \
        & ((w - 0.5) / (h + 0.5) <= ratio[1]) \
        & ((w + 0.5) * (h + 0.5) >= scale[0] * area) \
        & ((w - 0.5) * (h - 0.5) <= scale[1] * area) \
        & (h >= 1) & (w >= 1) & (top >= 0) & (left >= 0) \
        & (top + h <= height) & (left + w <= width)


def check_box_rule(what, boxes, fell_back, fallback, allowed):
    """Fails for the first few of @boxes that torchvision could not give:
    a fallback (where @fell_back) other than @fallback, a drawn box that
    the rule does not allow (@allowed)."""
    bad_fallback = fell_back & ~np.all(boxes == fallback, axis=1)
    bad_drawn = ~fell_back & ~allowed
    for i in np.flatnonzero(bad_fallback)[:3]:
        top, left, h, w = boxes[i].astype(int)
        check(False, f"{what}: fallback box {w}x{h} at ({left}, {top}), "
              f"torchvision's is {fallback[3]}x{fallback[2]} at "
              f"({fallback[1]}, {fallback[0]})")
    for i in np.flatnonzero(bad_drawn)[:3]:
        top, left, h, w = boxes[i].astype(int)
        check(False, f"{what}: box {w}x{h} at ({left}, {top}) (width / "
              f"height {w / h:.3f}, area {w * h}) is not one the rule gives")
    if bad_fallback.any() or bad_drawn.any():
        check(False, f"{what}: {int(bad_drawn.sum())} drawn boxes and "
              f"{int(bad_fallback.sum())} fallbacks of {len(boxes)} are not "
              "torchvision's")


def check_boxes(width, height, ratio):
    scale = (0.08, 1.0)
    name = f"boxes {width}x{height} ratio {ratio[0]:.3g} .. {ratio[1]:.3g}"
    lines = tool("boxes", width, height, N_BOXES, 11, *scale, *ratio,
                 capture=True).splitlines()
    rows = np.array([list(map(int, line.split())) for line in lines])
    ours = rows[:, :4].astype(np.float64)
    torch.manual_seed(0)
    image = torch.empty(3, height, width, dtype=torch.uint8)
    theirs = np.array([T.RandomResizedCrop.get_params(image, list(scale),
                                                      list(ratio))
                       for _ in range(N_BOXES)], dtype=np.float64)

    fallback = np.array(fallback_box(width, height, *ratio))
    check_box_rule(f"{name} (ours)", ours, rows[:, 4] == 1, fallback,
                   rule_allows(ours, width, height, scale, ratio))
    # torchvision does not say which of its boxes fell back: each box that
    # the rule does not allow must be the fallback box.
    allowed = rule_allows(theirs, width, height, scale, ratio)
    check_box_rule(f"{name} (torchvision's; the check is wrong)", theirs,
                   ~allowed, fallback, allowed)

    def features(boxes):
        top, left, h, w = boxes.T
        return {
            "h/H": h / height,
            "w/W": w / width,
            "area": h * w / (height * width),
            "log(w/h)": np.log(w / h),
            "centre y": (top + h / 2) / height,
            "centre x": (left + w / 2) / width,
        }

    fa, fb = features(ours), features(theirs)
    for feature in fa:
        a, b = fa[feature], fb[feature]
        se = math.sqrt(a.var() / a.size + b.var() / b.size)
        d = ks_statistic(a, b)
        q = [f"{np.quantile(a, p):.3f}/{np.quantile(b, p):.3f}"
             for p in (0.1, 0.5, 0.9)]
        print(f"{name} {feature}: mean {a.mean():.4f} vs {b.mean():.4f} "
              f"(se {se:.4f}), quantiles 10/50/90% {' '.join(q)}, "
              f"KS D {d:.4f}")
        # A fixed box (a strip's fallback) has no spread to compare.
        check(abs(a.mean() - b.mean()) < SIGMAS * se
              or a.mean() == b.mean(),
              f"{name} {feature}: means {a.mean():.4f} and {b.mean():.4f} "
              f"differ by more than {SIGMAS} standard errors")
        check(d < KS_CRITICAL, f"{name} {feature}: KS D {d:.4f} "
              f">= {KS_CRITICAL:.4f}")

    pa = float(np.mean(np.all(ours == fallback, axis=1)))
    pb = float(np.mean(np.all(theirs == fallback, axis=1)))
    se = math.sqrt(max(pa * (1 - pa) + pb * (1 - pb), 1.0 / N_BOXES) / N_BOXES)
    print(f"{name}: central fallback box in {pa:.4f} of ours, {pb:.4f} of "
          "torchvision's")
    check(abs(pa - pb) < SIGMAS * se,
          f"{name}: fallback shares {pa:.4f} and {pb:.4f}")


def main():
    global TOOL, WORK
    TOOL = sys.argv[1]
    photos = [p for p in PHOTOS if os.path.exists(p)]
    if not photos:
        print("SKIP: Debian's mate-backgrounds photographs are not installed")
        sys.exit(77)

    diffs = {name: Diffs(name) for name in
             ("crop", "center", "resize", "element")}
    with tempfile.TemporaryDirectory(prefix="gst-train-augment-") as WORK:
        for photo in photos:
            image = np.asarray(Image.open(photo).convert("RGB"))
            tensor = torch.from_numpy(image.copy()).permute(2, 0, 1)
            check_pixels(photo, image, tensor, diffs)
            check_element(photo, image, tensor, diffs)
        for d in diffs.values():
            d.report()
        # A 4:3 photo, its portrait, and a 4:1 strip where a tenth of the
        # draws end in the central fallback (with the default ratios); the
        # default ratio range, then one of boxes wider than tall and one of
        # boxes taller than wide.
        for ratio in [(3 / 4, 4 / 3), (1.0, 2.0), (0.5, 0.8)]:
            for width, height in [(500, 375), (375, 500), (400, 100)]:
                check_boxes(width, height, ratio)

    if failures:
        print(f"{len(failures)} checks failed")
        sys.exit(1)
    print("ok: augment agrees with torchvision")


if __name__ == "__main__":
    main()
