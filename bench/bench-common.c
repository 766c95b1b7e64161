/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench-common.c: the helpers of bench-common.h. */
#include "bench-common.h"
#include "gt-random.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void
bench_options_init (BenchOptions *options, const char *model, int size,
    int batch_size, int classes, int steps)
{
  memset (options, 0, sizeof (*options));
  options->model = model;
  options->size = size;
  options->batch_size = batch_size;
  options->classes = classes;
  options->warmup = 2;
  options->steps = steps;
}

int
bench_option (BenchOptions *options, const char *name, const char *value)
{
  if (!strcmp (name, "--model"))
    options->model = value;
  else if (!strcmp (name, "--size"))
    options->size = atoi (value);
  else if (!strcmp (name, "--batch"))
    options->batch_size = atoi (value);
  else if (!strcmp (name, "--classes"))
    options->classes = atoi (value);
  else if (!strcmp (name, "--threads"))
    options->threads = atoi (value);
  else if (!strcmp (name, "--warmup"))
    options->warmup = atoi (value);
  else if (!strcmp (name, "--steps"))
    options->steps = atoi (value);
  else
    return 0;
  return 1;
}

int
bench_config (GtTrainerConfig *config, const BenchOptions *options)
{
  gt_trainer_config_init (config);
  /* GT_CPU_ISA and the other variables, as cudatrainsink reads them
   * (bench/trainer-cpu.sh --avx2-cpu forces another CPU's paths with
   * them) */
  gt_trainer_config_apply_env (config);
  if (gt_model_from_name (options->model, &config->model) < 0) {
    fprintf (stderr, "unknown model %s\n", options->model);
    return -1;
  }
  config->num_classes = options->classes;
  config->height = config->width = options->size;
  config->batch_size = options->batch_size;
  config->num_threads = options->threads;
  config->lr = 0.01f;
  config->lr_schedule = GT_LR_CONSTANT;
  return 0;
}

void
bench_batch_new (GtTrainer *trainer, const BenchOptions *options,
    uint64_t stream, GtBatch *batch)
{
  size_t bytes =
      (size_t)options->batch_size * options->size * options->size * 3;
  uint8_t *images = gt_trainer_host_alloc (trainer, bytes);
  int32_t *labels = malloc (options->batch_size * sizeof (int32_t));
  GtRandom rng;
  int i;

  gt_random_init (&rng, 1, stream);
  for (i = 0; i < (int)bytes; i++)
    images[i] = (uint8_t)gt_random_below (&rng, 256);
  for (i = 0; i < options->batch_size; i++)
    labels[i] = (int32_t)gt_random_below (&rng, options->classes);
  memset (batch, 0, sizeof (*batch));
  batch->images = images;
  batch->labels = labels;
  batch->num_samples = options->batch_size;
  batch->height = batch->width = options->size;
  batch->channels = 3;
}

void
bench_batch_free (GtTrainer *trainer, GtBatch *batch)
{
  gt_trainer_host_free (trainer, (void *)batch->images);
  free ((void *)batch->labels);
}

double
bench_now (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int
bench_steps (GtTrainer *trainer, GtBatch *batch, const BenchOptions *options,
    double *seconds, double *comm_seconds, double *warmup_seconds)
{
  double warmup_start = bench_now ();
  GtStepResult result;
  int i;

  for (i = 0; i < options->warmup + options->steps; i++) {
    double start = bench_now ();

    if (i == options->warmup && warmup_seconds != NULL)
      *warmup_seconds = start - warmup_start;
    if (gt_trainer_step (trainer, batch, &result) != GT_OK)
      return i;
    if (i >= options->warmup) {
      seconds[i - options->warmup] = bench_now () - start;
      if (comm_seconds != NULL)
        comm_seconds[i - options->warmup] = result.comm_seconds;
    }
  }
  return -1;
}

double
bench_print_seconds (double *seconds, int count)
{
  int i;

  for (i = 0; i < count; i++)
    printf ("%s%.4f", i ? ", " : "", seconds[i]);
  return bench_median (seconds, count);
}

static int
compare_doubles (const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;

  return x < y ? -1 : x > y;
}

double
bench_median (double *values, int count)
{
  qsort (values, count, sizeof (double), compare_doubles);
  return count % 2 ? values[count / 2]
                   : 0.5 * (values[count / 2 - 1] + values[count / 2]);
}
