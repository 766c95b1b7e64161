/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* dist-trainer.c: the data-parallel trainer's behaviour beyond the numbers
 * (dist-parity.c checks those): a rank whose loss is not finite, a rank
 * that runs out of data, and checkpoints carried between jobs of different
 * sizes. One scenario per run:
 *
 *   mpirun -np N dist-trainer nonfinite
 *       rank 1's std[0] is 1e-45 (its config otherwise the same), so its
 *       input overflows to infinities and its loss is NaN: every rank's
 *       step ends GT_ERROR_NONFINITE, naming rank 1, at the same step, with
 *       nothing applied on any rank.
 *   mpirun -np N dist-trainer uneven
 *       rank 1 leaves (gt_trainer_leave) after 2 steps; the others' third
 *       step ends GT_ERROR_STOPPED naming rank 1 with nothing applied, and
 *       every rank ends with the same weights.
 *   mpirun -np 2 dist-trainer resume-first DIR     then
 *   mpirun -np 2 dist-trainer resume-second DIR
 *       4 steps with a checkpoint after 2 (rank 0 saves), then a second job
 *       resumes from it and takes steps 3 and 4: weights, momentum, step
 *       and rank 0's running statistics are bitwise those of the
 *       uninterrupted run. Only rank 0's statistics are: DDP keeps them per
 *       rank and a checkpoint holds rank 0's, so the resumed rank 1 starts
 *       from rank 0's and cannot match its uninterrupted self.
 *   dist-trainer to-one DIR                         then
 *   mpirun -np 2 dist-trainer from-one DIR
 *       one process (no communicator, a batch of the old global batch)
 *       resumes the 2-rank checkpoint of resume-first, trains a step and
 *       saves; a 2-rank job resumes that. Each restores weights, momentum,
 *       statistics, step and samples_seen, and the metadata world_size,
 *       global_batch and samples_seen of each checkpoint are the job's.
 *
 *   dist-trainer --built   exit status 77 when the build has no MPI.
 *
 * Every rank checks its own side; the exit status is the job's verdict. */
#include "check.h"
#include "dist-state.h"
#include "gt-random.h"
#include "safetensors.h"
#include "trainer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 4 /* per rank */
#define SIZE 16
#define CLASSES 10
#define MOMENTUM_PREFIX "optimizer.momentum."

static int rank;

static void
die (const char *what, const char *why)
{
  fprintf (stderr, "FAIL: rank %d: %s: %s\n", rank, what, why);
  exit (1);
}

static GtTrainer *
make_trainer (GtComm *comm, int batch_size, uint64_t seed, float std0)
{
  GtTrainerConfig config;
  GtTrainer *trainer;
  char why[512];

  gt_trainer_config_init (&config);
  config.model = GT_MODEL_RESNET20;
  config.num_classes = CLASSES;
  config.height = config.width = SIZE;
  config.batch_size = batch_size;
  config.num_threads = 1;
  config.lr = 0.1f;
  config.lr_schedule = GT_LR_CONSTANT;
  config.seed = seed;
  config.comm = comm;
  if (std0 > 0.f)
    config.std[0] = std0;
  trainer = gt_trainer_new (&config, why, sizeof (why));
  if (trainer == NULL)
    die ("creating the trainer", why);
  return trainer;
}

/* The samples of global step @step (0-based) in a job whose global batch
 * is @ranks * BATCH: rank r trains on the r-th BATCH of them. Filled in
 * whole, so that a one-process run can take all of them at once. */
typedef struct
{
  uint8_t images[4 * BATCH][SIZE * SIZE * 3];
  int32_t labels[4 * BATCH];
  GtBatch batch;
} Batch;

static void
make_batch (Batch *out, int64_t step, int first_sample, int num_samples)
{
  GtRandom rng;
  int i, j;

  for (i = 0; i < num_samples; i++) {
    /* one stream per sample: sample k of a step is the same wherever it
     * is trained */
    gt_random_init (&rng, 1000 + (uint64_t)step, 1 + first_sample + i);
    for (j = 0; j < SIZE * SIZE * 3; j++)
      out->images[i][j] = (uint8_t)gt_random_below (&rng, 256);
    out->labels[i] = (int32_t)gt_random_below (&rng, CLASSES);
  }
  memset (&out->batch, 0, sizeof (out->batch));
  out->batch.images = &out->images[0][0];
  out->batch.labels = out->labels;
  out->batch.num_samples = num_samples;
  out->batch.height = out->batch.width = SIZE;
  out->batch.channels = 3;
}

/* Takes global step @step on this rank's slice; returns the status. */
static int
train_step (GtTrainer *trainer, int64_t step, GtStepResult *result)
{
  Batch data;

  make_batch (&data, step, gt_trainer_rank (trainer) * BATCH, BATCH);
  return gt_trainer_step (trainer, &data.batch, result);
}

/* 1 when the state @parts of @trainer is bitwise @before. */
static int
state_is (GtTrainer *trainer, unsigned parts, const float *before,
    size_t before_count)
{
  size_t count;
  float *now = dist_state_read (trainer, parts, &count);
  int same = count == before_count
      && memcmp (now, before, count * sizeof (float)) == 0;

  free (now);
  return same;
}

/* The trainer's last error says @what ("rank 1", "step 3:"). */
static void
expect_error_names (GtTrainer *trainer, const char *what)
{
  CHECK (strstr (gt_trainer_error (trainer), what) != NULL,
      "rank %d: the message does not say \"%s\": %s", rank, what,
      gt_trainer_error (trainer));
}

/* ---- nonfinite ---- */

static void
scenario_nonfinite (GtComm *comm)
{
  GtTrainer *trainer = make_trainer (comm, BATCH, 7, rank == 1 ? 1e-45f : 0.f);
  unsigned all = DIST_PARAMS | DIST_MOMENTUM | DIST_STATS;
  GtStepResult result;
  size_t count;
  float *before;
  int attempt, status;

  CHECK (gt_trainer_world_size (trainer) >= 2, "needs 2 ranks or more");
  before = dist_state_read (trainer, all, &count);
  /* twice: a failed step leaves the job able to go on */
  for (attempt = 1; attempt <= 2; attempt++) {
    status = train_step (trainer, 0, &result);
    CHECK (status == GT_ERROR_NONFINITE,
        "rank %d, attempt %d: %s (%s), expected a non-finite loss", rank,
        attempt, gt_status_name (status), gt_trainer_error (trainer));
    expect_error_names (trainer, "rank 1");
    expect_error_names (trainer, "step 1:");
    CHECK (isnan (result.loss), "rank %d: loss %g, expected NaN", rank,
        result.loss);
    CHECK (dist_same_on_all_ranks (comm, status) == 1,
        "the ranks' steps ended differently (rank %d: %s)", rank,
        gt_status_name (status));
    CHECK (gt_trainer_global_step (trainer) == 0
            && gt_trainer_samples_seen (trainer) == 0,
        "rank %d: at step %lld with %lld samples seen after a step that was "
        "not applied",
        rank, (long long)gt_trainer_global_step (trainer),
        (long long)gt_trainer_samples_seen (trainer));
    CHECK (state_is (trainer, all, before, count),
        "rank %d: the weights, momentum or statistics changed", rank);
  }
  free (before);
  gt_trainer_free (trainer);
}

/* ---- uneven ---- */

static void
scenario_uneven (GtComm *comm)
{
  GtTrainer *trainer = make_trainer (comm, BATCH, 7, 0.f);
  int ranks = gt_trainer_world_size (trainer), status;
  unsigned all = DIST_PARAMS | DIST_MOMENTUM | DIST_STATS;
  GtStepResult result;
  int64_t step;
  size_t count;
  float *before;

  CHECK (ranks >= 2, "needs 2 ranks or more");
  for (step = 0; step < 2; step++) {
    status = train_step (trainer, step, &result);
    CHECK (status == GT_OK, "rank %d, step %lld: %s", rank, (long long)step + 1,
        gt_trainer_error (trainer));
  }
  before = dist_state_read (trainer, all, &count);
  if (rank == 1) {
    status = gt_trainer_leave (trainer);
    CHECK (status == GT_OK, "rank 1: leaving: %s (%s)", gt_status_name (status),
        gt_trainer_error (trainer));
  } else {
    status = train_step (trainer, 2, &result);
    CHECK (status == GT_ERROR_STOPPED,
        "rank %d, step 3: %s (%s), expected stopped", rank,
        gt_status_name (status), gt_trainer_error (trainer));
    expect_error_names (trainer, "rank 1 left");
    expect_error_names (trainer, "step 3:");
  }
  CHECK (gt_trainer_global_step (trainer) == 2
          && gt_trainer_samples_seen (trainer) == 2 * ranks * BATCH,
      "rank %d: at step %lld with %lld samples seen; expected 2 and %d", rank,
      (long long)gt_trainer_global_step (trainer),
      (long long)gt_trainer_samples_seen (trainer), 2 * ranks * BATCH);
  CHECK (state_is (trainer, all, before, count),
      "rank %d: the state changed in the step that stopped", rank);
  /* the job is over for every rank: no step, no collective load */
  status = train_step (trainer, 3, &result);
  CHECK (status == GT_ERROR_STOPPED, "rank %d: a step after the job ended: %s",
      rank, gt_status_name (status));
  status = gt_trainer_load (trainer, "/nonexistent", NULL);
  CHECK (status == GT_ERROR_STOPPED, "rank %d: a load after the job ended: %s",
      rank, gt_status_name (status));
  /* through the communicator, which outlives the job */
  CHECK (dist_same_on_all_ranks (
             comm, dist_state_hash (trainer, DIST_PARAMS | DIST_MOMENTUM))
          == 1,
      "the ranks ended with different weights or momentum");
  free (before);
  gt_trainer_free (trainer);
}

/* ---- checkpoints across jobs ---- */

/* 1 when @parts of @trainer are bitwise the tensors of @path (momentum
 * under MOMENTUM_PREFIX); each difference reported. */
static int
state_matches_file (GtTrainer *trainer, const char *path, unsigned parts)
{
  GtStFile *file;
  char why[512], name[256];
  int i, pass, same = 1;

  file = gt_st_open (path, why, sizeof (why));
  if (file == NULL)
    die ("opening a checkpoint", why);
  for (i = 0; i < gt_trainer_num_tensors (trainer); i++) {
    GtTensorInfo info;
    float *ours;

    gt_trainer_tensor_info (trainer, i, &info);
    ours = malloc ((size_t)info.numel * sizeof (float));
    for (pass = 0; pass < 2; pass++) {
      int momentum = pass == 1;
      const GtStTensor *tensor;
      int equal;

      if (info.is_parameter
              ? !(parts & (momentum ? DIST_MOMENTUM : DIST_PARAMS))
              : momentum || !(parts & DIST_STATS))
        continue;
      snprintf (name, sizeof (name), "%s%s", momentum ? MOMENTUM_PREFIX : "",
          info.name);
      tensor = gt_st_find (file, name);
      gt_trainer_read_tensor (trainer, info.name,
          momentum ? GT_TENSOR_MOMENTUM : GT_TENSOR_VALUE, ours,
          (size_t)info.numel);
      if (tensor == NULL)
        equal = 0;
      else if (tensor->dtype == GT_ST_I64)
        equal = (int64_t)ours[0] == *(const int64_t *)gt_st_data (file, tensor);
      else
        equal = tensor->dtype == GT_ST_F32
            && gt_st_numel (tensor) == (uint64_t)info.numel
            && memcmp (ours, gt_st_data (file, tensor),
                   (size_t)info.numel * sizeof (float))
                == 0;
      CHECK (equal, "rank %d: %s differs from %s", rank, name, path);
      same = same && equal;
    }
    free (ours);
  }
  gt_st_close (file);
  return same;
}

/* Checks the job metadata of checkpoint @path. */
static void
check_job_metadata (const char *path, const char *world_size,
    const char *global_batch, const char *samples_seen)
{
  const char *keys[] = { "world_size", "global_batch", "samples_seen" };
  const char *expected[] = { world_size, global_batch, samples_seen };
  GtStFile *file;
  char why[512];
  int i;

  file = gt_st_open (path, why, sizeof (why));
  if (file == NULL)
    die ("opening a checkpoint", why);
  for (i = 0; i < 3; i++) {
    const char *value = gt_st_metadata (file, keys[i]);

    CHECK (value != NULL && strcmp (value, expected[i]) == 0,
        "%s: %s is %s, expected %s", path, keys[i], value ? value : "missing",
        expected[i]);
  }
  gt_st_close (file);
}

/* DIR/NAME.safetensors, in a buffer the next call overwrites. */
static const char *
checkpoint_path (const char *dir, const char *name)
{
  static char path[1024];

  snprintf (path, sizeof (path), "%s/%s.safetensors", dir, name);
  return path;
}

/* The trainer of a 2-rank @scenario, its weights drawn from @seed. */
static GtTrainer *
two_rank_trainer (GtComm *comm, uint64_t seed, const char *scenario)
{
  CHECK (gt_comm_size (comm) == 2, "%s runs on 2 ranks", scenario);
  return make_trainer (comm, BATCH, seed, 0.f);
}

static void
save_on_rank0 (GtTrainer *trainer, const char *path)
{
  if (rank == 0 && gt_trainer_save (trainer, path, 0) != GT_OK)
    die ("saving", gt_trainer_error (trainer));
}

/* Loads @path (a collective: rank 0 reads it, the others name a file that
 * does not exist) and checks that it resumed at @step with @samples_seen. */
static void
resume (GtTrainer *trainer, const char *path, int64_t step, int64_t samples)
{
  int resumed = -1, status;

  status = gt_trainer_load (trainer,
      rank == 0 || gt_trainer_config (trainer)->comm == NULL
          ? path
          : "/nonexistent/only-rank-0-reads",
      &resumed);
  if (status != GT_OK)
    die ("resuming", gt_trainer_error (trainer));
  CHECK (resumed == 1, "rank %d: %s was not taken as a checkpoint", rank, path);
  CHECK (gt_trainer_global_step (trainer) == step
          && gt_trainer_samples_seen (trainer) == samples,
      "rank %d: resumed at step %lld with %lld samples seen; expected %lld "
      "and %lld",
      rank, (long long)gt_trainer_global_step (trainer),
      (long long)gt_trainer_samples_seen (trainer), (long long)step,
      (long long)samples);
}

static void
take_steps (GtTrainer *trainer, int64_t from, int64_t to)
{
  GtStepResult result;
  int64_t step;

  for (step = from; step < to; step++)
    if (train_step (trainer, step, &result) != GT_OK)
      die ("a training step", gt_trainer_error (trainer));
}

static void
scenario_resume_first (GtComm *comm, const char *dir)
{
  GtTrainer *trainer = two_rank_trainer (comm, 7, "resume-first");

  take_steps (trainer, 0, 2);
  save_on_rank0 (trainer, checkpoint_path (dir, "step2"));
  take_steps (trainer, 2, 4);
  save_on_rank0 (trainer, checkpoint_path (dir, "uninterrupted"));
  if (rank == 0) {
    check_job_metadata (checkpoint_path (dir, "step2"), "2", "8", "16");
    check_job_metadata (checkpoint_path (dir, "uninterrupted"), "2", "8", "32");
  }
  gt_trainer_free (trainer);
}

static void
scenario_resume_second (GtComm *comm, const char *dir)
{
  /* another seed: only the checkpoint can make the weights right */
  GtTrainer *trainer = two_rank_trainer (comm, 99, "resume-second");

  resume (trainer, checkpoint_path (dir, "step2"), 2, 16);
  take_steps (trainer, 2, 4);
  CHECK (gt_trainer_global_step (trainer) == 4
          && gt_trainer_samples_seen (trainer) == 32,
      "rank %d: at step %lld with %lld samples seen after resuming", rank,
      (long long)gt_trainer_global_step (trainer),
      (long long)gt_trainer_samples_seen (trainer));
  state_matches_file (trainer, checkpoint_path (dir, "uninterrupted"),
      DIST_PARAMS | DIST_MOMENTUM | (rank == 0 ? DIST_STATS : 0));
  gt_trainer_free (trainer);
}

static void
scenario_to_one (const char *dir)
{
  /* one process with the 2-rank job's global batch */
  GtTrainer *trainer = make_trainer (NULL, 2 * BATCH, 99, 0.f);
  unsigned all = DIST_PARAMS | DIST_MOMENTUM | DIST_STATS;
  GtStepResult result;
  Batch data;
  const char *path = checkpoint_path (dir, "step2");

  check_job_metadata (path, "2", "8", "16");
  resume (trainer, path, 2, 16);
  state_matches_file (trainer, path, all);
  make_batch (&data, 2, 0, 2 * BATCH);
  if (gt_trainer_step (trainer, &data.batch, &result) != GT_OK)
    die ("the step after resuming", gt_trainer_error (trainer));
  CHECK (result.global_samples == 2 * BATCH
          && gt_trainer_samples_seen (trainer) == 24,
      "one process: %lld samples in the step, %lld seen; expected 8 and 24",
      (long long)result.global_samples,
      (long long)gt_trainer_samples_seen (trainer));
  path = checkpoint_path (dir, "one");
  if (gt_trainer_save (trainer, path, 0) != GT_OK)
    die ("saving", gt_trainer_error (trainer));
  check_job_metadata (path, "1", "8", "24");
  gt_trainer_free (trainer);
}

static void
scenario_from_one (GtComm *comm, const char *dir)
{
  GtTrainer *trainer = two_rank_trainer (comm, 7, "from-one");
  const char *path = checkpoint_path (dir, "one");

  resume (trainer, path, 3, 24);
  /* every rank holds the file's state, rank 0's statistics included */
  state_matches_file (trainer, path, DIST_PARAMS | DIST_MOMENTUM | DIST_STATS);
  take_steps (trainer, 3, 4);
  CHECK (gt_trainer_samples_seen (trainer) == 32,
      "rank %d: %lld samples seen after a 2-rank step from 24, expected 32",
      rank, (long long)gt_trainer_samples_seen (trainer));
  path = checkpoint_path (dir, "from-one");
  save_on_rank0 (trainer, path);
  if (rank == 0)
    check_job_metadata (path, "2", "8", "32");
  gt_trainer_free (trainer);
}

int
main (int argc, char **argv)
{
  const char *scenario = argc > 1 ? argv[1] : "";
  const char *dir = argc > 2 ? argv[2] : NULL;
  GtComm *comm = NULL;
  char why[512];
  int64_t total_failures;

  dist_exit_if_asked_built (argc, argv);
  if (strcmp (scenario, "to-one") == 0 && dir != NULL) {
    scenario_to_one (dir);
    return failures ? 1 : 0;
  }
  comm = gt_comm_new (why, sizeof (why));
  if (comm == NULL)
    die ("joining the job", why);
  rank = gt_comm_rank (comm);
  if (strcmp (scenario, "nonfinite") == 0)
    scenario_nonfinite (comm);
  else if (strcmp (scenario, "uneven") == 0)
    scenario_uneven (comm);
  else if (strcmp (scenario, "resume-first") == 0 && dir != NULL)
    scenario_resume_first (comm, dir);
  else if (strcmp (scenario, "resume-second") == 0 && dir != NULL)
    scenario_resume_second (comm, dir);
  else if (strcmp (scenario, "from-one") == 0 && dir != NULL)
    scenario_from_one (comm, dir);
  else {
    fprintf (stderr,
        "usage: %s nonfinite|uneven|resume-first DIR|resume-second "
        "DIR|to-one DIR|from-one DIR|--built\n",
        argv[0]);
    gt_comm_free (comm);
    return 2;
  }
  total_failures = dist_sum (comm, failures);
  if (rank == 0)
    printf ("%s on %d ranks: %s\n", scenario, gt_comm_size (comm),
        total_failures == 0 ? "ok" : "FAILED");
  gt_comm_free (comm);
  return total_failures == 0 ? 0 : 1;
}
