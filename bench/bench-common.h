/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench-common.h: what the trainer benchmarks (trainer-bench.c,
 * dist-bench.c) share: their common options, the configuration they train
 * with, a batch of random images and labels, the timed steps, a monotonic
 * clock and medians. */
#ifndef GT_BENCH_COMMON_H
#define GT_BENCH_COMMON_H

#include "trainer.h"

typedef struct
{
  const char *model;
  int size; /* images are size x size x 3 */
  int batch_size;
  int classes;
  int threads;
  int warmup; /* untimed steps first */
  int steps;  /* timed steps */
} BenchOptions;

/* @options' defaults: @model at @size x @size, @batch_size a batch,
 * @classes classes, @steps timed steps after 2 of warm-up, the library's
 * thread count (threads 0). */
void bench_options_init (BenchOptions *options, const char *model, int size,
    int batch_size, int classes, int steps);

/* Takes option @name (--model, --size, --batch, --classes, --threads,
 * --warmup or --steps) with @value into @options: 1 when it is one of
 * them, else 0. */
int bench_option (BenchOptions *options, const char *name, const char *value);

/* gt_trainer_config_init, then @options' model, classes, input and batch
 * size and threads, at a constant learning rate of 0.01; -1 (said on
 * stderr) for a model the library does not know. */
int bench_config (GtTrainerConfig *config, const BenchOptions *options);

/* @options' batch of random images and labels, drawn from stream @stream
 * of seed 1, in @trainer's host memory (pinned on the GPU); free it with
 * bench_batch_free. */
void bench_batch_new (GtTrainer *trainer, const BenchOptions *options,
    uint64_t stream, GtBatch *batch);
void bench_batch_free (GtTrainer *trainer, GtBatch *batch);

/* @options' warm-up steps, then its timed steps, of @trainer on @batch:
 * each timed step's seconds (from the call to its return) into @seconds
 * and, where @comm_seconds is not NULL, its GtStepResult.comm_seconds into
 * @comm_seconds (@options->steps of each); where @warmup_seconds is not
 * NULL, the warm-up's seconds into it. -1 when every step ran, else the
 * index (from 0, warm-up included) of the step that failed
 * (gt_trainer_error says why). */
int bench_steps (GtTrainer *trainer, GtBatch *batch,
    const BenchOptions *options, double *seconds, double *comm_seconds,
    double *warmup_seconds);

/* Prints @count seconds as the items of a JSON list ("0.1234, 0.1235")
 * and returns their median (sorting them). */
double bench_print_seconds (double *seconds, int count);

/* Seconds on the monotonic clock. */
double bench_now (void);

/* The median of @count values (sorted in place). */
double bench_median (double *values, int count);

#endif /* GT_BENCH_COMMON_H */
