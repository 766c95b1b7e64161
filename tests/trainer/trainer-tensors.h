/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* trainer-tensors.h: reading a trainer's tensors and telling two trainers'
 * apart, for every test that holds one trainer against another
 * (trainer-compare.h's users, cuda-parity.c and cuda-dist.c; parity.c's
 * save, load and continue). Header-only: each test is one program. */
#ifndef GT_TEST_TRAINER_TENSORS_H
#define GT_TEST_TRAINER_TENSORS_H

#include "trainer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Begins every message of the helpers below ("rank 1: " in a
 * data-parallel test, else nothing). */
static char compare_who[32];

/* @part of the tensor @info describes (malloc'd); a failure to read ends
 * the test. */
static inline float *
read_part (GtTrainer *trainer, const GtTensorInfo *info, GtTensorPart part)
{
  float *values = malloc ((size_t)info->numel * sizeof (float));

  if (gt_trainer_read_tensor (
          trainer, info->name, part, values, (size_t)info->numel)
      != GT_OK) {
    fprintf (stderr, "FAIL: %sreading %s: %s\n", compare_who, info->name,
        gt_trainer_error (trainer));
    exit (1);
  }
  return values;
}

/* |a - b|, or |a| when @b is NULL. */
static inline double
norm2 (const float *a, const float *b, size_t count)
{
  double sum = 0;
  size_t i;

  for (i = 0; i < count; i++) {
    double d = b ? (double)a[i] - b[i] : a[i];

    sum += d * d;
  }
  return sqrt (sum);
}

/* |ours - ref| / |ref|; 0 when both are zero. */
static inline double
relative_l2 (const float *ours, const float *ref, size_t count)
{
  double diff = norm2 (ours, ref, count), scale = norm2 (ref, NULL, count);

  if (scale == 0)
    return diff == 0 ? 0 : INFINITY;
  return diff / scale;
}

/* 1 when @part of the tensor @info describes differs between @a and @b:
 * in any bit (@tolerance 0), or by a relative L2 distance (@b's the
 * reference) above @tolerance, which goes to *@distance when not NULL. */
static inline int
part_differs (GtTrainer *a, GtTrainer *b, const GtTensorInfo *info,
    GtTensorPart part, double tolerance, double *distance)
{
  float *x = read_part (a, info, part), *y = read_part (b, info, part);
  size_t count = (size_t)info->numel;
  double d = 0;
  int differs;

  if (tolerance <= 0)
    differs = memcmp (x, y, count * sizeof (float)) != 0;
  else
    differs = !((d = relative_l2 (x, y, count)) <= tolerance);
  if (distance != NULL)
    *distance = d;
  free (x);
  free (y);
  return differs;
}

/* Says that @part of @info differs: by @distance, over @tolerance (0:
 * bit for bit). */
typedef void (*PartReport) (const GtTensorInfo *info, GtTensorPart part,
    double tolerance, double distance);

/* A PartReport: the tensor's name on stderr (a bit-for-bit comparison). */
static inline void
print_difference (const GtTensorInfo *info, GtTensorPart part, double tolerance,
    double distance)
{
  fprintf (stderr, "  %s%s%s differs\n", compare_who, info->name,
      part == GT_TENSOR_MOMENTUM ? " (momentum)" : "");
}

/* The parts of same_tensors' comparison. */
#define PART_BIT(part) (1u << (part))

/* 1 when @a and @b hold the same @parts (PART_BITs) of every tensor, as
 * part_differs says with @tolerance: parameters all of them, the running
 * statistics their values, when @with_stats. @report hears of each
 * difference: with @all every one, else the first ends the comparison. */
static inline int
same_tensors (GtTrainer *a, GtTrainer *b, unsigned parts, int with_stats,
    double tolerance, int all, PartReport report)
{
  int i, part, same = 1;

  for (i = 0; i < gt_trainer_num_tensors (a) && (same || all); i++) {
    GtTensorInfo info;

    gt_trainer_tensor_info (a, i, &info);
    for (part = GT_TENSOR_VALUE; part <= GT_TENSOR_MOMENTUM && (same || all);
         part++) {
      double distance;

      if (!(parts & PART_BIT (part))
          || (!info.is_parameter && (part != GT_TENSOR_VALUE || !with_stats))
          || !part_differs (a, b, &info, part, tolerance, &distance))
        continue;
      report (&info, part, tolerance, distance);
      same = 0;
    }
  }
  return same;
}

#endif /* GT_TEST_TRAINER_TENSORS_H */
