/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* dist-parity.c: data-parallel training on the CPU backend against PyTorch's
 * DistributedDataParallel, as ddp_reference.py emulates it (same initial
 * weights, rank r on its slice of the same global batch). Every rank of
 *
 *   mpirun -np N dist-parity [--threads T] REFERENCE.safetensors OUT_DIR
 *
 * builds a CPU trainer in the job, loads the reference's initial weights
 * (a collective: only rank 0 reads the file), trains K steps on its slice
 * (the slices may differ in size: DDP still weighs every rank's mean
 * gradient the same, while the loss is the mean over all samples) and
 * checks: its own logits of step 1; the global loss and the averaged
 * gradients of step 1; the global loss of every step; the weights and
 * momentum after K steps; its own running statistics (rank 0's also under
 * the names the reference saves). Then, across the ranks: the weights and
 * momentum are bitwise the same on every rank, and the statistics are not
 * (each rank's are its own batches'). `dist-parity --built` exits 77 when
 * the build has no MPI.
 *
 * The comparison is parity.c's rule, from parity-rule.h: per tensor, the
 * error max|ours - exact| / max|exact| against the float64 run, at most
 * YARDSTICK times PyTorch's own fp32 error on that tensor, never stricter
 * than the floor of its kind, never looser than CEILING times it (beyond,
 * the reference is ill-conditioned and the case fails). */
#include "dist-state.h"
#include "parity-rule.h"
#include "reference.h"
#include "safetensors.h"
#include "trainer.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank;
static double worst_forward, worst_gradient, worst_weights;
/* ours against PyTorch's on the same tensor (parity_score), the worst one,
 * and the bound --max-score sets (0: none) */
static double worst_score, max_score;
static char worst_score_name[200];

/* parity.c's compare: against f64.@name, with parity-rule.h's tolerance. */
static double
compare (GtStFile *file, const char *name, const float *ours, size_t count,
    double floor, double *worst)
{
  const GtStTensor *torch_tensor = need (file, name), *exact_tensor;
  double torch_error, error, tolerance, score;
  char exact_name[200];
  int ill_conditioned;

  snprintf (exact_name, sizeof (exact_name), "f64.%s", name);
  exact_tensor = need (file, exact_name);
  if (gt_st_numel (torch_tensor) != count || gt_st_numel (exact_tensor) != count
      || exact_tensor->dtype != GT_ST_F64 || torch_tensor->dtype != GT_ST_F32) {
    fail ("%s: %zu fp32 values expected, the reference has %llu", name, count,
        (unsigned long long)gt_st_numel (torch_tensor));
    return INFINITY;
  }
  torch_error = parity_max_error (
      gt_st_data (file, torch_tensor), gt_st_data (file, exact_tensor), count);
  torch_error = parity_with_spread (file, name, torch_error);
  tolerance = parity_fp32_tolerance (floor, torch_error, &ill_conditioned);
  if (ill_conditioned)
    fail ("%s: the reference is ill-conditioned: PyTorch's own fp32 is %.3g "
          "from float64, %g times which passes the ceiling %.3g: the data "
          "search (--min-relu-margin, --perturbations) should not have "
          "chosen this batch",
        name, torch_error, YARDSTICK, tolerance);
  error = parity_max_error (ours, gt_st_data (file, exact_tensor), count);
  score = parity_score (error, torch_error, floor);
  if (getenv ("GT_PARITY_VERBOSE"))
    printf ("rank %d: %-50s ours %.3g, PyTorch fp32 %.3g, tolerance %.3g, "
            "score %.3g\n",
        rank, name, error, torch_error, tolerance, score);
  if (!(error <= tolerance))
    fail ("%s: relative error %.3g > %.3g (PyTorch's fp32: %.3g)", name, error,
        tolerance, torch_error);
  if (!(score <= worst_score)) {
    worst_score = score;
    snprintf (worst_score_name, sizeof (worst_score_name), "%s", name);
  }
  if (max_score > 0 && !(score <= max_score))
    fail ("%s: ours is %.3g from float64, %.3g times the larger of "
          "PyTorch's fp32 error (%.3g) and the floor (%.0e): more than "
          "--max-score %g",
        name, error, score, torch_error, floor, max_score);
  if (!(error <= *worst))
    *worst = error;
  return error;
}

static GtTrainer *
make_trainer (GtStFile *file, GtComm *comm, int threads)
{
  GtTrainerConfig config;
  GtTrainer *trainer;
  char why[512];

  reference_config (file, &config);
  /* GT_CPU_ISA and GT_CPU_NO_DIRECT_CONV choose the CPU paths, as they do
   * for cudatrainsink (meson.build forces another CPU's paths with them) */
  gt_trainer_config_apply_env (&config);
  config.num_threads = threads;
  config.comm = comm;
  trainer = gt_trainer_new (&config, why, sizeof (why));
  if (trainer == NULL)
    die ("%s", why);
  if (rank == 0
      && gt_cpu_describe (config.cpu_kernels, config.cpu_isa, why, sizeof (why))
          == 0)
    printf ("CPU kernels: %s\n", why);
  return trainer;
}

int
main (int argc, char **argv)
{
  GtComm *comm;
  GtStFile *file;
  GtTrainer *trainer;
  const GtStTensor *images, *labels, *split;
  const int64_t *slices;
  GtBatch batch = { 0 };
  GtStepResult result;
  char why[512], path[1024], name[64];
  int threads = 1, ranks, steps, classes, step, resumed = -1, same;
  int64_t first, count, total, total_failures;
  int r;
  size_t image_bytes;
  float *logits, *losses;

  reference_rank = 0; /* until the job says */
  dist_exit_if_asked_built (argc, argv);
  while (argc > 3 && argv[1][0] == '-') {
    char *end;

    if (strcmp (argv[1], "--threads") == 0)
      threads = (int)strtol (argv[2], &end, 10);
    else if (strcmp (argv[1], "--max-score") == 0)
      max_score = strtod (argv[2], &end);
    else
      break;
    if (end == argv[2] || *end != '\0') {
      fprintf (
          stderr, "%s: %s %s is not a number\n", argv[0], argv[1], argv[2]);
      return 2;
    }
    argv += 2;
    argc -= 2;
  }
  if (argc != 3 || threads < 1 || !(max_score >= 0)) {
    fprintf (stderr,
        "usage: mpirun -np N %s [--threads T] [--max-score S] "
        "REFERENCE.safetensors OUT_DIR\n",
        argv[0]);
    return 2;
  }
  comm = gt_comm_new (why, sizeof (why));
  if (comm == NULL)
    die ("joining the job: %s", why);
  rank = reference_rank = gt_comm_rank (comm);
  file = gt_st_open (argv[1], why, sizeof (why));
  if (file == NULL)
    die ("%s", why);
  ranks = (int)metadata_number (file, "ranks");
  steps = (int)metadata_number (file, "steps");
  classes = (int)metadata_number (file, "classes");
  if (ranks != gt_comm_size (comm))
    die ("the reference is for %d ranks, the job has %d", ranks,
        gt_comm_size (comm));

  /* Only rank 0 reads the weights: the others name a file that is not
   * there, which gt_trainer_load must not open. */
  if (rank == 0) {
    snprintf (path, sizeof (path), "%s/init.safetensors", argv[2]);
    write_initial_weights (file, path);
  } else {
    snprintf (path, sizeof (path), "%s/not-written-rank-%d", argv[2], rank);
  }
  trainer = make_trainer (file, comm, threads);
  if (gt_trainer_rank (trainer) != rank
      || gt_trainer_world_size (trainer) != ranks)
    fail ("the trainer says rank %d of %d", gt_trainer_rank (trainer),
        gt_trainer_world_size (trainer));
  if (gt_trainer_load (trainer, path, &resumed) != GT_OK || resumed != 0)
    die ("loading the initial weights: %s", gt_trainer_error (trainer));

  /* this rank's slice of the global batch */
  images = need (file, "images");
  labels = need (file, "labels");
  split = need (file, "split");
  if (split->dtype != GT_ST_I64 || split->shape[0] != ranks)
    die ("split is not int64 [%d, 2]", ranks);
  slices = gt_st_data (file, split);
  for (r = 0, total = 0; r < ranks; r++) {
    if (slices[2 * r] != total || slices[2 * r + 1] < 1
        || slices[2 * r + 1] > (int)metadata_number (file, "batch"))
      die ("split: rank %d's samples %lld + %lld do not follow the others' "
           "within a batch of %d",
          r, (long long)slices[2 * r], (long long)slices[2 * r + 1],
          (int)metadata_number (file, "batch"));
    total += slices[2 * r + 1];
  }
  first = slices[2 * rank];
  count = slices[2 * rank + 1];
  image_bytes = (size_t)images->shape[1] * images->shape[2] * images->shape[3];
  batch.images =
      (const uint8_t *)gt_st_data (file, images) + first * image_bytes;
  batch.labels = (const int32_t *)gt_st_data (file, labels) + first;
  batch.num_samples = (int)count;
  batch.height = (int)images->shape[1];
  batch.width = (int)images->shape[2];
  batch.channels = (int)images->shape[3];

  /* Step 1: this rank's forward pass, the global loss and the averaged
   * gradients. */
  if (gt_trainer_step (trainer, &batch, &result) != GT_OK)
    die ("step 1: %s", gt_trainer_error (trainer));
  if (result.num_samples != count || result.global_samples != total)
    fail ("step 1 counted %d samples here, %lld in all; expected %lld and "
          "%lld",
        result.num_samples, (long long)result.global_samples, (long long)count,
        (long long)total);
  logits = malloc ((size_t)count * classes * sizeof (float));
  if (gt_trainer_read_logits (trainer, logits, (size_t)count * classes)
      != (size_t)count * classes)
    fail ("fewer logits than %lld x %d", (long long)count, classes);
  snprintf (name, sizeof (name), "rank%d.step0.logits", rank);
  compare (file, name, logits, (size_t)count * classes, TOLERANCE_FORWARD,
      &worst_forward);
  compare (
      file, "step0.loss", &result.loss, 1, TOLERANCE_FORWARD, &worst_forward);
  compare_state (trainer, file, "step0.grad.", GT_TENSOR_GRAD,
      REFERENCE_PARAMETERS, TOLERANCE_GRADIENT, &worst_gradient, compare);

  /* Steps 2..K, then the state. */
  losses = malloc (steps * sizeof (float));
  losses[0] = result.loss;
  for (step = 1; step < steps; step++) {
    if (gt_trainer_step (trainer, &batch, &result) != GT_OK)
      die ("step %d: %s", step + 1, gt_trainer_error (trainer));
    losses[step] = result.loss;
  }
  if (gt_trainer_global_step (trainer) != steps
      || gt_trainer_samples_seen (trainer) != steps * total)
    fail ("after %d steps: step %lld, %lld samples seen", steps,
        (long long)gt_trainer_global_step (trainer),
        (long long)gt_trainer_samples_seen (trainer));
  compare (file, "losses", losses, steps, TOLERANCE_WEIGHTS, &worst_weights);
  compare_state (trainer, file, "final.", GT_TENSOR_VALUE, REFERENCE_PARAMETERS,
      TOLERANCE_WEIGHTS, &worst_weights, compare);
  compare_state (trainer, file, "final.momentum.", GT_TENSOR_MOMENTUM,
      REFERENCE_PARAMETERS, TOLERANCE_WEIGHTS, &worst_weights, compare);
  snprintf (name, sizeof (name), "rank%d.final.", rank);
  compare_state (trainer, file, name, GT_TENSOR_VALUE, REFERENCE_STATISTICS,
      TOLERANCE_WEIGHTS, &worst_weights, compare);
  if (rank == 0)
    compare_state (trainer, file, "final.", GT_TENSOR_VALUE,
        REFERENCE_STATISTICS, TOLERANCE_WEIGHTS, &worst_weights, compare);

  /* Across the ranks: one set of weights and momentum, per-rank
   * statistics. */
  same = dist_same_on_all_ranks (
      comm, dist_state_hash (trainer, DIST_PARAMS | DIST_MOMENTUM));
  if (same != 1)
    fail ("the weights and momentum are not bitwise the same on every rank");
  same = dist_same_on_all_ranks (comm, dist_state_hash (trainer, DIST_STATS));
  if (ranks > 1 && same != 0)
    fail ("every rank has the same running statistics: they should be each "
          "rank's own");

  printf (
      "rank %d of %d: %s, losses", rank, ranks, gt_st_metadata (file, "model"));
  for (step = 0; step < steps; step++)
    printf (" %.6f", losses[step]);
  printf ("; worst relative error: forward %.3g (tolerance %.0e), gradients "
          "%.3g (%.0e), after %d steps %.3g (%.0e)\n",
      worst_forward, TOLERANCE_FORWARD, worst_gradient, TOLERANCE_GRADIENT,
      steps, worst_weights, TOLERANCE_WEIGHTS);
  printf ("rank %d: score %.3g (%s): ours from float64 over PyTorch's fp32 "
          "from float64%s\n",
      rank, worst_score, worst_score_name,
      max_score > 0 ? ", at most --max-score" : "");
  total_failures = dist_sum (comm, failures);
  free (losses);
  free (logits);
  gt_trainer_free (trainer);
  gt_st_close (file);
  gt_comm_free (comm);
  if (rank == 0 && total_failures != 0)
    printf ("%lld failures over the ranks\n", (long long)total_failures);
  return total_failures == 0 ? 0 : 1;
}
