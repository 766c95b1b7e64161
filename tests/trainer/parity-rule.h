/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* parity-rule.h: the fp32 comparison rule of the parity tests against
 * PyTorch (parity.c, one process; dist-parity.c, data-parallel): per
 * tensor, the error max|ours - exact| / max|exact| against the float64
 * run, at most YARDSTICK times PyTorch's own fp32 error on that tensor,
 * never stricter than the floor of its kind and never looser than CEILING
 * times it. */
#ifndef GT_PARITY_RULE_H
#define GT_PARITY_RULE_H

#include <math.h>
#include <stddef.h>

/* Errors below these always pass: fp32 with different summation orders
 * (oneDNN against im2col + OpenBLAS) differs by about 1e-6 relative in the
 * outputs; gradients go through every layer backwards, the weights after
 * three steps through three of those. */
#define TOLERANCE_FORWARD 1e-5
#define TOLERANCE_GRADIENT 5e-5
#define TOLERANCE_WEIGHTS 5e-5
/* Deep nets without zero-init are badly conditioned (resnet50's logits
 * carry ~5e-5 relative error in PyTorch's own fp32): there, we must be no
 * further from the float64 result than this many times PyTorch's fp32. */
#define YARDSTICK 4.0
/* ...but never more than this many times the floor in fp32: where
 * PyTorch's own fp32 error is so large that YARDSTICK times it passes the
 * ceiling, the reference is ill-conditioned (a ReLU input at rounding
 * distance from zero, a deep net without zero-init) and proves nothing:
 * the case fails and asks for better data (--min-relu-margin). */
#define CEILING 10.0

/* max|a - exact| / max|exact| (NaN counts as the largest error) */
static inline double
parity_max_error (const float *a, const double *exact, size_t count)
{
  double max_diff = 0, max_exact = 0;
  size_t i;

  for (i = 0; i < count; i++) {
    double diff = fabs ((double)a[i] - exact[i]);

    if (!(diff <= max_diff))
      max_diff = diff;
    if (fabs (exact[i]) > max_exact)
      max_exact = fabs (exact[i]);
  }
  return max_exact > 0 ? max_diff / max_exact : max_diff;
}

/* The fp32 tolerance for a tensor whose PyTorch fp32 error is
 * @torch_error, with the floor @floor; *@ill_conditioned is set when the
 * yardstick would pass the ceiling (the tolerance is then the ceiling and
 * the caller fails the case). */
static inline double
parity_fp32_tolerance (double floor, double torch_error, int *ill_conditioned)
{
  double tolerance =
      YARDSTICK * torch_error > floor ? YARDSTICK * torch_error : floor;

  *ill_conditioned = tolerance > CEILING * floor;
  return *ill_conditioned ? CEILING * floor : tolerance;
}

/* How ours compares with PyTorch's fp32 on one tensor: our error over
 * PyTorch's (both against float64), where that is above the @floor, else
 * over the floor (both are then rounding noise). At most 1: ours is no
 * further from the exact result than PyTorch's own fp32. */
static inline double
parity_score (double error, double torch_error, double floor)
{
  return error / (torch_error > floor ? torch_error : floor);
}

#endif /* GT_PARITY_RULE_H */
