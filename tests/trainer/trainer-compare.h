/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* trainer-compare.h: what the tests that hold a trainer against another
 * (cuda-parity.c: the CUDA backend against the CPU reference; cuda-dist.c:
 * data-parallel CUDA against data-parallel CPU) share: the random batches
 * both take and the comparison of the states after some steps in L2 norms
 * (reading the tensors: trainer-tensors.h). Header-only: each test is one
 * program. */
#ifndef GT_TEST_TRAINER_COMPARE_H
#define GT_TEST_TRAINER_COMPARE_H

#include "check.h"
#include "gt-random.h"
#include "trainer-tensors.h"
#include "trainer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* While choosing data: errors are measured, not checked. */
static int quiet;

#define EXPECT(condition, ...)                                                 \
  do {                                                                         \
    if (!quiet)                                                                \
      CHECK (condition, __VA_ARGS__);                                          \
  } while (0)

typedef struct
{
  uint8_t *images;
  int32_t *labels;
  GtBatch batch;
} TestBatch;

/* @n random images of @size x @size x 3 and labels below @classes, from
 * @seed. */
static inline void
make_batch (TestBatch *test, int n, int size, int classes, uint64_t seed)
{
  size_t bytes = (size_t)n * size * size * 3, i;
  GtRandom rng;

  gt_random_init (&rng, seed, 7);
  test->images = malloc (bytes);
  test->labels = malloc (n * sizeof (int32_t));
  for (i = 0; i < bytes; i++)
    test->images[i] = (uint8_t)gt_random_below (&rng, 256);
  for (i = 0; i < (size_t)n; i++)
    test->labels[i] = (int32_t)gt_random_below (&rng, classes);
  memset (&test->batch, 0, sizeof (test->batch));
  test->batch.images = test->images;
  test->batch.labels = test->labels;
  test->batch.num_samples = n;
  test->batch.height = test->batch.width = size;
  test->batch.channels = 3;
}

static inline void
free_batch (TestBatch *test)
{
  free (test->images);
  free (test->labels);
}

/* What both trainers of a comparison train with: the same initial weights
 * (seed 42; zero-init residuals for resnet50, whose logits are badly
 * conditioned without), SGD at a constant 0.05. */
static inline void
init_config (GtTrainerConfig *config, GtModel model, int classes, int size,
    int batch_size, GtBackend backend, GtPrecision precision)
{
  gt_trainer_config_init (config);
  config->model = model;
  config->num_classes = classes;
  config->height = config->width = size;
  config->batch_size = batch_size;
  config->seed = 42;
  config->lr = 0.05f;
  config->lr_schedule = GT_LR_CONSTANT;
  config->zero_init_residual = model == GT_MODEL_RESNET50;
  config->backend = backend;
  config->precision = precision;
}

/* The values of tensor @name, its description in @info. */
static inline float *
read_named (GtTrainer *trainer, const char *name, GtTensorInfo *info)
{
  int i;

  for (i = 0; i < gt_trainer_num_tensors (trainer); i++) {
    gt_trainer_tensor_info (trainer, i, info);
    if (strcmp (info->name, name) == 0)
      break;
  }
  return read_part (trainer, info, GT_TENSOR_VALUE);
}

/* The larger of @worst and @error as a fraction of @bound (infinite for
 * an error where no error is allowed). */
static inline double
worse (double worst, double error, double bound)
{
  double ratio = bound > 0 ? error / bound : (error > 0 ? INFINITY : 0);

  return ratio > worst ? ratio : worst;
}

/* The state after some steps, tensor by tensor. A parameter's error is
 * the error of its updates (the starting weights are the same), so it may
 * be @weight_tolerance of the weights plus @update_tolerance of the
 * updates (@initial: a trainer in the first state): a bias that started
 * at zero is all update. Statistics may be off by @stats_tolerance of
 * themselves. Returns the worst error over what was allowed. */
static inline double
compare_after_steps (GtTrainer *ours, GtTrainer *ref, GtTrainer *initial,
    double weight_tolerance, double update_tolerance, double stats_tolerance,
    const char *what)
{
  double worst = 0;
  int i;

  for (i = 0; i < gt_trainer_num_tensors (ref); i++) {
    GtTensorInfo info;
    float *a, *b, *start;
    size_t count;
    double diff, allowed;

    gt_trainer_tensor_info (ref, i, &info);
    count = (size_t)info.numel;
    a = read_part (ours, &info, GT_TENSOR_VALUE);
    b = read_part (ref, &info, GT_TENSOR_VALUE);
    start = read_part (initial, &info, GT_TENSOR_VALUE);
    diff = norm2 (a, b, count);
    if (info.is_parameter)
      allowed = weight_tolerance * norm2 (b, NULL, count)
          + update_tolerance * norm2 (b, start, count);
    else
      allowed = stats_tolerance * norm2 (b, NULL, count);
    EXPECT (diff <= allowed, "%s%s %s: |ours - ref| %.3g > %.3g allowed",
        compare_who, what, info.name, diff, allowed);
    worst = worse (worst, diff, allowed);
    free (a);
    free (b);
    free (start);
  }
  return worst;
}

#endif /* GT_TEST_TRAINER_COMPARE_H */
