/* dist-bench.c: data-parallel training speed of the trainer library on the
 * CPU backend, one JSON line, the peer of bench/torch-ddp-cpu.py (PyTorch
 * DDP over gloo); bench/dist-cpu.sh sets them side by side.
 *
 *   mpirun -np N dist-bench --model resnet20 --size 32 --batch 32
 *                           --classes 10 --threads T --warmup 2 --steps 10
 *   dist-bench --no-comm ...     one process, no communicator (the
 *                                baseline a job is measured against)
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
#include "gt-random.h"
#include "trainer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
now (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int
compare_doubles (const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;

  return x < y ? -1 : x > y;
}

/* The median of @count values (sorted in place). */
static double
median (double *values, int count)
{
  qsort (values, count, sizeof (double), compare_doubles);
  return count % 2 ? values[count / 2]
                   : 0.5 * (values[count / 2 - 1] + values[count / 2]);
}

static void
usage (const char *program)
{
  fprintf (stderr,
      "usage: [mpirun -np N] %s [--no-comm] [--model M] [--size S] "
      "[--batch N] [--classes C] [--threads T] [--warmup W] [--steps K]\n",
      program);
}

int
main (int argc, char **argv)
{
  GtTrainerConfig config;
  GtTrainer *trainer;
  GtComm *comm = NULL;
  GtBatch batch = { 0 };
  GtStepResult result;
  GtRandom rng;
  const char *model = "resnet20";
  int size = 32, batch_size = 32, classes = 10, threads = 0, use_comm = 1;
  int warmup = 2, steps = 10, rank = 0, ranks = 1, i;
  double *step_seconds, *comm_low, *comm_high;
  uint8_t *images;
  int32_t *labels;
  char why[512];
  size_t bytes;

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
    if (!strcmp (argv[i], "--model"))
      model = value;
    else if (!strcmp (argv[i], "--size"))
      size = atoi (value);
    else if (!strcmp (argv[i], "--batch"))
      batch_size = atoi (value);
    else if (!strcmp (argv[i], "--classes"))
      classes = atoi (value);
    else if (!strcmp (argv[i], "--threads"))
      threads = atoi (value);
    else if (!strcmp (argv[i], "--warmup"))
      warmup = atoi (value);
    else if (!strcmp (argv[i], "--steps"))
      steps = atoi (value);
    else {
      usage (argv[0]);
      return 2;
    }
    i++;
  }
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
  }
  gt_trainer_config_init (&config);
  if (gt_model_from_name (model, &config.model) < 0) {
    fprintf (stderr, "unknown model %s\n", model);
    return 2;
  }
  config.num_classes = classes;
  config.height = config.width = size;
  config.batch_size = batch_size;
  config.num_threads = threads;
  config.lr = 0.01f;
  config.lr_schedule = GT_LR_CONSTANT;
  config.comm = comm;
  trainer = gt_trainer_new (&config, why, sizeof (why));
  if (trainer == NULL) {
    fprintf (stderr, "rank %d: %s\n", rank, why);
    return 1;
  }

  /* each rank its own data, as each has its own shard */
  bytes = (size_t)batch_size * size * size * 3;
  images = gt_trainer_host_alloc (trainer, bytes);
  labels = malloc (batch_size * sizeof (int32_t));
  gt_random_init (&rng, 1, 1 + (uint64_t)rank);
  for (i = 0; i < (int)bytes; i++)
    images[i] = (uint8_t)gt_random_below (&rng, 256);
  for (i = 0; i < batch_size; i++)
    labels[i] = (int32_t)gt_random_below (&rng, classes);
  batch.images = images;
  batch.labels = labels;
  batch.num_samples = batch_size;
  batch.height = batch.width = size;
  batch.channels = 3;

  step_seconds = calloc (steps, sizeof (double));
  comm_low = calloc (steps, sizeof (double));
  comm_high = calloc (steps, sizeof (double));
  for (i = 0; i < warmup + steps; i++) {
    double start = now ();

    if (gt_trainer_step (trainer, &batch, &result) != GT_OK) {
      fprintf (stderr, "rank %d: step %d: %s\n", rank, i + 1,
          gt_trainer_error (trainer));
      if (comm)
        gt_comm_abort (comm, 1, "a step failed");
      return 1;
    }
    if (i >= warmup) {
      step_seconds[i - warmup] = now () - start;
      comm_low[i - warmup] = comm_high[i - warmup] = result.comm_seconds;
    }
  }
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
            "\"comm\": %s, \"step_seconds\": [",
        model, size, batch_size, ranks, threads, comm ? "true" : "false");
    for (i = 0; i < steps; i++)
      printf ("%s%.4f", i ? ", " : "", step_seconds[i]);
    step_median = median (step_seconds, steps);
    printf ("], \"step_seconds_median\": %.5f, \"images_per_second\": %.2f, "
            "\"allreduce_seconds_median\": %.5f, "
            "\"allreduce_with_wait_seconds_median\": %.5f}\n",
        step_median, (double)batch_size * ranks / step_median,
        median (comm_low, steps), median (comm_high, steps));
    fflush (stdout);
  }

  free (step_seconds);
  free (comm_low);
  free (comm_high);
  gt_trainer_host_free (trainer, images);
  free (labels);
  gt_trainer_free (trainer);
  gt_comm_free (comm);
  return 0;
}
