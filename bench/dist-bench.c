/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* dist-bench.c: data-parallel training speed of the trainer library on the
 * CPU backend, one JSON line, the peer of bench/torch-ddp-cpu.py (PyTorch
 * DDP over gloo); bench/dist-cpu.sh sets them side by side.
 *
 *   mpirun -np N dist-bench --model resnet20 --size 32 --batch 32
 *                           --classes 10 --threads T --warmup 2 --steps 10
 *   dist-bench --no-comm ...     one process, no communicator (the
 *                                baseline a job is measured against)
 *   --collective-timeout S       bound every collective to S seconds
 *                                (gt_comm_set_timeout: non-blocking MPI
 *                                calls polled against a deadline), as
 *                                cudatrainsink's collective-timeout; 0
 *                                (the default): MPI's blocking calls
 *
 * Every rank trains on its own random batch of --batch samples with --threads
 * threads. Each step is timed on every rank from the call to its return; a
 * step of the job takes as long as its slowest rank (the reduction waits for
 * it), so the job's step time is the maximum over the ranks. The reduction's
 * time, GtStepResult.comm_seconds, is reported as the minimum over the ranks
 * (the last rank to arrive waits for no one: that is the all-reduce itself)
 * and the maximum (the all-reduce plus the wait for the slowest rank). The
 * figures are medians over the timed steps; images/s counts every rank's
 * samples. */
#include "bench-common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
usage (const char *program)
{
  fprintf (stderr,
      "usage: [mpirun -np N] %s [--no-comm] [--model M] [--size S] "
      "[--batch N] [--classes C] [--threads T] [--warmup W] [--steps K] "
      "[--collective-timeout S]\n",
      program);
}

int
main (int argc, char **argv)
{
  BenchOptions options;
  GtTrainerConfig config;
  GtTrainer *trainer;
  GtComm *comm = NULL;
  GtBatch batch;
  int use_comm = 1, warmup, steps, rank = 0, ranks = 1, failed, i;
  double *step_seconds, *comm_low, *comm_high, collective_timeout = 0;
  char why[512];

  bench_options_init (&options, "resnet20", 32, 32, 10, 10);
  for (i = 1; i < argc; i++) {
    const char *value = i + 1 < argc ? argv[i + 1] : NULL;

    if (!strcmp (argv[i], "--no-comm")) {
      use_comm = 0;
      continue;
    }
    if (value == NULL) {
      usage (argv[0]);
      return 2;
    }
    if (!strcmp (argv[i], "--collective-timeout")) {
      collective_timeout = atof (value);
      i++;
      continue;
    }
    if (!bench_option (&options, argv[i], value)) {
      usage (argv[0]);
      return 2;
    }
    i++;
  }
  warmup = options.warmup;
  steps = options.steps;
  if (steps < 1 || warmup < 0) {
    usage (argv[0]);
    return 2;
  }

  if (use_comm) {
    comm = gt_comm_new (why, sizeof (why));
    if (comm == NULL) {
      fprintf (stderr, "dist-bench: %s\n", why);
      return 1;
    }
    rank = gt_comm_rank (comm);
    ranks = gt_comm_size (comm);
    gt_comm_set_timeout (comm, collective_timeout);
  }
  if (bench_config (&config, &options) < 0)
    return 2;
  config.comm = comm;
  trainer = gt_trainer_new (&config, why, sizeof (why));
  if (trainer == NULL) {
    fprintf (stderr, "rank %d: %s\n", rank, why);
    return 1;
  }

  /* each rank its own data, as each has its own shard */
  bench_batch_new (trainer, &options, 1 + (uint64_t)rank, &batch);

  step_seconds = calloc (steps, sizeof (double));
  comm_low = calloc (steps, sizeof (double));
  comm_high = calloc (steps, sizeof (double));
  failed =
      bench_steps (trainer, &batch, &options, step_seconds, comm_low, NULL);
  if (failed >= 0) {
    fprintf (stderr, "rank %d: step %d: %s\n", rank, failed + 1,
        gt_trainer_error (trainer));
    if (comm)
      gt_comm_abort (comm, 1, "a step failed");
    return 1;
  }
  memcpy (comm_high, comm_low, steps * sizeof (double));
  if (comm
      && (gt_comm_allreduce (comm, step_seconds, steps, GT_COMM_DOUBLE,
              GT_COMM_MAX, why, sizeof (why))
          || gt_comm_allreduce (comm, comm_low, steps, GT_COMM_DOUBLE,
              GT_COMM_MIN, why, sizeof (why))
          || gt_comm_allreduce (comm, comm_high, steps, GT_COMM_DOUBLE,
              GT_COMM_MAX, why, sizeof (why)))) {
    fprintf (stderr, "rank %d: gathering the times: %s\n", rank, why);
    gt_comm_abort (comm, 1, "gathering the times failed");
  }

  if (rank == 0) {
    double step_median;

    printf ("{\"impl\": \"gst-train\", \"model\": \"%s\", \"size\": %d, "
            "\"batch_per_rank\": %d, \"ranks\": %d, \"threads_per_rank\": %d, "
            "\"comm\": %s, \"collective_timeout\": %g, \"step_seconds\": [",
        options.model, options.size, options.batch_size, ranks, options.threads,
        comm ? "true" : "false", collective_timeout);
    step_median = bench_print_seconds (step_seconds, steps);
    printf ("], \"step_seconds_median\": %.5f, \"images_per_second\": %.2f, "
            "\"allreduce_seconds_median\": %.5f, "
            "\"allreduce_with_wait_seconds_median\": %.5f}\n",
        step_median, (double)options.batch_size * ranks / step_median,
        bench_median (comm_low, steps), bench_median (comm_high, steps));
    fflush (stdout);
  }

  free (step_seconds);
  free (comm_low);
  free (comm_high);
  bench_batch_free (trainer, &batch);
  gt_trainer_free (trainer);
  gt_comm_free (comm);
  return 0;
}
