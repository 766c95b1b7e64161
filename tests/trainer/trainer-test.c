/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* trainer-test.c: the training library's own behaviour, without PyTorch:
 * parameter counts, the learning-rate schedule, bad input, non-finite
 * losses, checkpoint errors, exact resume from a checkpoint (momentum
 * included), and that resnet20 learns (it overfits 64 fixed images to 100%
 * training accuracy).
 *
 *   trainer-test SCRATCH_DIR */
#include "check.h"
#include "gt-clock.h"
#include "gt-random.h"
#include "safetensors.h"
#include "trainer-tensors.h"
#include "trainer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *scratch_dir;

/* The default configuration for @model at @size x @size. */
static void
init_config (GtTrainerConfig *config, GtModel model, int classes, int size,
    int batch_size)
{
  gt_trainer_config_init (config);
  config->model = model;
  config->num_classes = classes;
  config->height = config->width = size;
  config->batch_size = batch_size;
}

static GtTrainer *
new_trainer (GtModel model, int classes, int size, int batch_size)
{
  GtTrainerConfig config;
  GtTrainer *trainer;
  char why[512];

  init_config (&config, model, classes, size, batch_size);
  config.seed = 42;
  trainer = gt_trainer_new (&config, why, sizeof (why));
  if (trainer == NULL) {
    fprintf (stderr, "FAIL: creating %s: %s\n", gt_model_name (model), why);
    exit (1);
  }
  return trainer;
}

/* A copy of tensor @name's values (free it). */
static float *
read_all (GtTrainer *trainer, const char *name, size_t *count)
{
  GtTensorInfo info;
  float *values;
  int i;

  for (i = 0; i < gt_trainer_num_tensors (trainer); i++) {
    gt_trainer_tensor_info (trainer, i, &info);
    if (strcmp (info.name, name) == 0)
      break;
  }
  *count = (size_t)info.numel;
  values = malloc (*count * sizeof (float));
  if (gt_trainer_read_tensor (trainer, name, GT_TENSOR_VALUE, values, *count))
    fprintf (stderr, "FAIL: %s\n", gt_trainer_error (trainer));
  return values;
}

static void
test_parameter_counts (void)
{
  static const struct
  {
    GtModel model;
    int classes;
    size_t parameters; /* sum(p.numel()) in torchvision / torch_reference */
  } expected[] = {
    { GT_MODEL_RESNET18, 1000, 11689512 },
    { GT_MODEL_RESNET34, 1000, 21797672 },
    { GT_MODEL_RESNET50, 1000, 25557032 },
    { GT_MODEL_RESNET101, 1000, 44549160 },
    { GT_MODEL_RESNET20, 10, 272474 },
    { GT_MODEL_RESNET32, 10, 466906 },
  };
  size_t i;

  for (i = 0; i < sizeof (expected) / sizeof (expected[0]); i++) {
    /* the smallest input that goes through: counts do not depend on it */
    GtTrainer *trainer = new_trainer (expected[i].model, expected[i].classes,
        expected[i].model >= GT_MODEL_RESNET20 ? 8 : 32, 2);

    CHECK (gt_trainer_num_parameters (trainer) == expected[i].parameters,
        "%s: %zu parameters, torchvision has %zu",
        gt_model_name (expected[i].model), gt_trainer_num_parameters (trainer),
        expected[i].parameters);
    gt_trainer_free (trainer);
  }
}

static void
test_names_and_config (void)
{
  GtTrainerConfig config;
  GtModel model;
  char why[512];

  CHECK (gt_model_from_name ("resnet101", &model) == 0
          && model == GT_MODEL_RESNET101,
      "resnet101 by name");
  CHECK (gt_model_from_name ("resnet51", &model) < 0, "unknown name");

  gt_trainer_config_init (&config);
  config.num_classes = 0;
  CHECK (gt_trainer_new (&config, why, sizeof (why)) == NULL
          && strstr (why, "num-classes"),
      "num-classes 0: %s", why);
  gt_trainer_config_init (&config);
  config.momentum = 1.5f;
  CHECK (gt_trainer_new (&config, why, sizeof (why)) == NULL
          && strstr (why, "momentum"),
      "momentum 1.5: %s", why);
  gt_trainer_config_init (&config);
  config.std[1] = 0.f;
  CHECK (gt_trainer_new (&config, why, sizeof (why)) == NULL
          && strstr (why, "std[1]"),
      "std 0: %s", why);
}

/* The backend settings: today's fast paths by default, overridden from the
 * environment only where a variable asks for it. */
static void
test_backend_settings (void)
{
  GtTrainerConfig config;
  GtTrainer *trainer;
  char why[512];

  gt_trainer_config_init (&config);
  CHECK (config.cpu_kernels == GT_CPU_KERNELS_FAST
          && config.cpu_isa == GT_CPU_ISA_AUTO && config.cuda_graphs == 1
          && !config.cuda_require_graph && !config.cuda_profile,
      "defaults");
  setenv ("GT_CPU_NO_DIRECT_CONV", "1", 1);
  setenv ("GT_CPU_ISA", "sse", 1);
  setenv ("GT_CUDA_NO_GRAPH", "1", 1);
  setenv ("GT_CUDA_PROFILE", "0", 1);
  gt_trainer_config_apply_env (&config);
  CHECK (config.cpu_kernels == GT_CPU_KERNELS_REFERENCE
          && config.cpu_isa == GT_CPU_ISA_SSE && config.cuda_graphs == 0
          && !config.cuda_profile,
      "overridden from the environment");
  /* gt_trainer_new applies them to its copy */
  gt_trainer_config_init (&config);
  trainer = new_trainer (GT_MODEL_RESNET20, 10, 8, 2);
  CHECK (gt_trainer_config (trainer)->cpu_kernels == GT_CPU_KERNELS_REFERENCE
          && gt_trainer_config (trainer)->cpu_isa == GT_CPU_ISA_SSE,
      "gt_trainer_new applies the environment");
  gt_trainer_free (trainer);
  unsetenv ("GT_CPU_NO_DIRECT_CONV");
  unsetenv ("GT_CPU_ISA");
  unsetenv ("GT_CUDA_NO_GRAPH");
  unsetenv ("GT_CUDA_PROFILE");
  gt_trainer_config_apply_env (&config);
  CHECK (config.cpu_kernels == GT_CPU_KERNELS_FAST
          && config.cpu_isa == GT_CPU_ISA_AUTO && config.cuda_graphs == 1,
      "unset variables change nothing");
  config.cpu_isa = (GtCpuIsa)17;
  CHECK (gt_trainer_new (&config, why, sizeof (why)) == NULL
          && strstr (why, "instruction set"),
      "an unknown ISA: %s", why);
}

/* Batch-norm needs two values per channel to train: a batch of one is
 * refused where the last stage is 1x1 (resnet18 at 32x32), fine elsewhere. */
static void
test_min_train_batch (void)
{
  GtTrainerConfig config;
  GtTrainer *trainer;
  char why[512];

  init_config (&config, GT_MODEL_RESNET18, 10, 32, 1);
  CHECK (gt_trainer_new (&config, why, sizeof (why)) == NULL
          && strstr (why, "batch size 1"),
      "resnet18, 32x32, batch 1: %s", why);
  config.batch_size = 4;
  trainer = gt_trainer_new (&config, why, sizeof (why));
  CHECK (trainer && gt_trainer_min_train_batch (trainer) == 2, "%s", why);
  gt_trainer_free (trainer);
  trainer = new_trainer (GT_MODEL_RESNET20, 10, 8, 1);
  CHECK (gt_trainer_min_train_batch (trainer) == 1, "resnet20 at 8x8 is 2x2");
  gt_trainer_free (trainer);
}

/* Expected values written out from the definitions in trainer.h. */
static void
test_schedule (void)
{
  GtTrainerConfig config;
  double lr;
  struct
  {
    GtLrSchedule schedule;
    int64_t step;
    double lr;
  } cases[] = {
    { GT_LR_COSINE, 0, 0.1 * 1 / 10 },
    { GT_LR_COSINE, 9, 0.1 },
    { GT_LR_COSINE, 10, 0.1 },
    { GT_LR_COSINE, 60, 0.1 * 0.5 * (1 + cos (M_PI * 0.5)) },
    { GT_LR_COSINE, 110, 0.0 },
    { GT_LR_COSINE, 500, 0.0 },
    { GT_LR_STEP, 39, 0.1 * 0.1 },
    { GT_LR_STEP, 50, 0.1 * 0.01 },
    { GT_LR_POLY, 60, 0.1 * 0.25 },
    { GT_LR_CONSTANT, 100, 0.1 },
  };
  size_t i;

  for (i = 0; i < sizeof (cases) / sizeof (cases[0]); i++) {
    gt_trainer_config_init (&config);
    config.model = GT_MODEL_RESNET20;
    config.num_classes = 10;
    config.height = config.width = config.batch_size = 8;
    config.lr = 0.1f;
    config.warmup_steps = 10;
    config.total_steps = 110;
    config.lr_schedule = cases[i].schedule;
    config.lr_step_size = 20;
    config.lr_gamma = 0.1f;
    config.lr_power = 2.f;
    lr = gt_lr_schedule (&config, cases[i].step);
    CHECK (fabs (lr - cases[i].lr) <= 1e-6 * 0.1,
        "schedule %d, step %lld: %g, expected %g", (int)cases[i].schedule,
        (long long)cases[i].step, lr, cases[i].lr);
  }
}

static void
fill_batch (GtBatch *batch, uint8_t *images, int32_t *labels, int n, int size,
    int classes, uint64_t seed)
{
  GtRandom rng;
  size_t i;

  gt_random_init (&rng, seed, 0);
  for (i = 0; i < (size_t)n * size * size * 3; i++)
    images[i] = (uint8_t)gt_random_below (&rng, 256);
  for (i = 0; i < (size_t)n; i++)
    labels[i] = (int32_t)gt_random_below (&rng, classes);
  memset (batch, 0, sizeof (*batch));
  batch->images = images;
  batch->labels = labels;
  batch->num_samples = n;
  batch->height = batch->width = size;
  batch->channels = 3;
}

static void
test_bad_input (void)
{
  GtTrainer *trainer = new_trainer (GT_MODEL_RESNET20, 10, 8, 4);
  uint8_t images[4 * 8 * 8 * 3];
  int32_t labels[4];
  GtBatch batch;
  GtStepResult result;

  fill_batch (&batch, images, labels, 4, 8, 10, 1);
  labels[2] = 10;
  CHECK (gt_trainer_step (trainer, &batch, &result) == GT_ERROR_INVALID
          && strstr (gt_trainer_error (trainer), "label 10 of sample 2"),
      "label out of range: %s", gt_trainer_error (trainer));
  labels[2] = 3;
  batch.width = 16;
  CHECK (gt_trainer_step (trainer, &batch, &result) == GT_ERROR_INVALID
          && strstr (gt_trainer_error (trainer), "16x8"),
      "wrong size: %s", gt_trainer_error (trainer));
  batch.width = 8;
  batch.num_samples = 5;
  CHECK (gt_trainer_step (trainer, &batch, &result) == GT_ERROR_INVALID,
      "too many samples");
  batch.num_samples = 4;
  CHECK (gt_trainer_step_end (trainer, &result) == GT_ERROR_INVALID,
      "end without begin");
  CHECK (gt_trainer_global_step (trainer) == 0, "no step counted");
  CHECK (gt_trainer_step (trainer, &batch, &result) == GT_OK, "%s",
      gt_trainer_error (trainer));
  CHECK (result.step == 1 && gt_trainer_global_step (trainer) == 1,
      "one step counted");
  gt_trainer_free (trainer);
}

/* A loss that is not finite leaves weights, momentum and statistics as
 * they were and names the step. */
static void
test_nonfinite_loss (void)
{
  GtTrainerConfig config;
  GtTrainer *trainer;
  uint8_t images[4 * 8 * 8 * 3];
  int32_t labels[4];
  float *before, *after, *stats_before, *stats_after;
  size_t count, stats_count;
  GtBatch batch;
  GtStepResult result;
  char why[512];

  init_config (&config, GT_MODEL_RESNET20, 10, 8, 4);
  config.std[0] = 1e-45f; /* red: 0 * inf = NaN on the first layer */
  trainer = gt_trainer_new (&config, why, sizeof (why));
  fill_batch (&batch, images, labels, 4, 8, 10, 2);
  images[0] = 0;
  before = read_all (trainer, "conv1.weight", &count);
  stats_before = read_all (trainer, "bn1.running_mean", &stats_count);
  CHECK (gt_trainer_step (trainer, &batch, &result) == GT_ERROR_NONFINITE,
      "huge input");
  CHECK (strstr (gt_trainer_error (trainer), "step 1"), "names the step: %s",
      gt_trainer_error (trainer));
  after = read_all (trainer, "conv1.weight", &count);
  stats_after = read_all (trainer, "bn1.running_mean", &stats_count);
  CHECK (
      memcmp (before, after, count * sizeof (float)) == 0, "weights unchanged");
  CHECK (memcmp (stats_before, stats_after, stats_count * sizeof (float)) == 0,
      "statistics unchanged");
  CHECK (gt_trainer_global_step (trainer) == 0, "step not counted");
  free (before);
  free (after);
  free (stats_before);
  free (stats_after);
  gt_trainer_free (trainer);
}

static void
write_file (const char *path, const void *data, size_t size)
{
  FILE *file = fopen (path, "wb");

  if (file == NULL || fwrite (data, 1, size, file) != size) {
    fprintf (stderr, "FAIL: writing %s\n", path);
    exit (1);
  }
  fclose (file);
}

static void *
read_file (const char *path, size_t *size)
{
  FILE *file = fopen (path, "rb");
  void *data;

  if (file == NULL) {
    fprintf (stderr, "FAIL: reading %s\n", path);
    exit (1);
  }
  fseek (file, 0, SEEK_END);
  *size = (size_t)ftell (file);
  fseek (file, 0, SEEK_SET);
  data = malloc (*size);
  if (fread (data, 1, *size, file) != *size)
    exit (1);
  fclose (file);
  return data;
}

static void
test_checkpoint_errors (void)
{
  GtTrainer *small = new_trainer (GT_MODEL_RESNET20, 10, 8, 2);
  GtTrainer *other = new_trainer (GT_MODEL_RESNET32, 10, 8, 2);
  GtTrainer *classes = new_trainer (GT_MODEL_RESNET20, 5, 8, 2);
  char path[1024], broken[1024];
  float *before, *after;
  size_t size, cut, count;
  char *data;
  int resumed = -1;

  snprintf (path, sizeof (path), "%s/resnet20.safetensors", scratch_dir);
  snprintf (broken, sizeof (broken), "%s/broken.safetensors", scratch_dir);
  CHECK (gt_trainer_save (small, path, 0) == GT_OK, "%s",
      gt_trainer_error (small));

  CHECK (
      gt_trainer_load (small, "/nonexistent/x.safetensors", NULL) == GT_ERROR_IO
          && strstr (gt_trainer_error (small), "/nonexistent/x.safetensors"),
      "missing file: %s", gt_trainer_error (small));

  before = read_all (other, "conv1.weight", &count);
  CHECK (gt_trainer_load (other, path, NULL) == GT_ERROR_MISMATCH
          && strstr (gt_trainer_error (other), "missing layer1.3"),
      "resnet20 into resnet32: %s", gt_trainer_error (other));
  after = read_all (other, "conv1.weight", &count);
  CHECK (memcmp (before, after, count * sizeof (float)) == 0,
      "a failed load leaves the weights");
  free (before);
  free (after);

  CHECK (gt_trainer_load (classes, path, NULL) == GT_ERROR_MISMATCH
          && strstr (gt_trainer_error (classes),
              "fc.weight is [10, 64] in the file, [5, 64] in the model"),
      "10 classes into 5: %s", gt_trainer_error (classes));

  /* every truncation is an error, never a crash or a partial load */
  data = read_file (path, &size);
  for (cut = 0; cut < size; cut += cut < 4096 ? 97 : size / 13) {
    write_file (broken, data, cut);
    CHECK (gt_trainer_load (small, broken, &resumed) == GT_ERROR_IO,
        "truncated at %zu of %zu: %s", cut, size, gt_trainer_error (small));
  }
  /* a corrupt header */
  data[12] = '!';
  write_file (broken, data, size);
  CHECK (gt_trainer_load (small, broken, NULL) == GT_ERROR_IO,
      "corrupt header: %s", gt_trainer_error (small));
  free (data);

  CHECK (gt_trainer_load (small, path, &resumed) == GT_OK && resumed == 1,
      "the good file still loads: %s", gt_trainer_error (small));
  CHECK (gt_trainer_save (small, "/nonexistent/dir/x.safetensors", 0)
          == GT_ERROR_IO,
      "saving into a missing folder");
  gt_trainer_free (small);
  gt_trainer_free (other);
  gt_trainer_free (classes);
}

/* A PartReport for the resume checks: the first tensor that differs, as a
 * failure. */
static const char *resume_stage;

static void
report_resume_difference (const GtTensorInfo *info, GtTensorPart part,
    double tolerance, double distance)
{
  fprintf (stderr, "FAIL: %s: %s%s differs\n", resume_stage, info->name,
      part == GT_TENSOR_MOMENTUM ? " (momentum)" : "");
  failures++;
}

/* A PartReport for a difference that is expected. */
static void
report_quietly (const GtTensorInfo *info, GtTensorPart part, double tolerance,
    double distance)
{}

/* 1 when every parameter's momentum buffer of @trainer is zero. */
static int
momentum_all_zero (GtTrainer *trainer)
{
  GtTensorInfo info;
  int i, zero = 1;

  for (i = 0; i < gt_trainer_num_tensors (trainer) && zero; i++) {
    float *momentum;
    size_t j;

    gt_trainer_tensor_info (trainer, i, &info);
    if (!info.is_parameter)
      continue;
    momentum = read_part (trainer, &info, GT_TENSOR_MOMENTUM);
    for (j = 0; j < (size_t)info.numel; j++)
      zero &= momentum[j] == 0.f;
    free (momentum);
  }
  return zero;
}

/* The file at @path holds "optimizer.momentum.<name>" for every parameter
 * of @trainer, as F32 in PyTorch's layout, bit for bit its momentum. */
static void
check_saved_momentum (GtTrainer *trainer, const char *path)
{
  char why[512], name[160];
  GtStFile *file = gt_st_open (path, why, sizeof (why));
  const GtStTensor *tensor;
  GtTensorInfo info;
  int i, checked = 0;

  CHECK (file != NULL, "opening %s: %s", path, why);
  if (file == NULL)
    return;
  for (i = 0; i < gt_trainer_num_tensors (trainer); i++) {
    float *momentum;

    gt_trainer_tensor_info (trainer, i, &info);
    if (!info.is_parameter)
      continue;
    snprintf (name, sizeof (name), "optimizer.momentum.%s", info.name);
    tensor = gt_st_find (file, name);
    CHECK (tensor != NULL && tensor->dtype == GT_ST_F32
            && gt_st_numel (tensor) == (uint64_t)info.numel,
        "%s: missing, or not %lld F32 values", name, (long long)info.numel);
    if (tensor == NULL || tensor->dtype != GT_ST_F32
        || gt_st_numel (tensor) != (uint64_t)info.numel)
      continue;
    momentum = read_part (trainer, &info, GT_TENSOR_MOMENTUM);
    CHECK (memcmp (gt_st_data (file, tensor), momentum,
               (size_t)info.numel * sizeof (float))
            == 0,
        "%s is not the trainer's momentum", name);
    free (momentum);
    checked++;
  }
  CHECK (checked > 0, "no parameter in %s", path);
  gt_st_close (file);
}

/* Two steps, save, load into a fresh trainer, one step: bit for bit three
 * uninterrupted steps, weights, statistics and momentum. SGD's next update
 * reads the momentum buffer (buf = momentum * buf + g), so the third step
 * only matches when the buffers were saved and restored exactly; they are
 * also checked directly, in the file and after the load. A weights-only
 * file starts the momentum from zero, and the same three steps then
 * differ: the comparison can tell. */
static void
test_checkpoint_resume (void)
{
  enum
  {
    SIZE = 8,
    BATCH = 4,
    CLASSES = 10
  };
  GtTrainer *uninterrupted =
      new_trainer (GT_MODEL_RESNET20, CLASSES, SIZE, BATCH);
  GtTrainer *saved = new_trainer (GT_MODEL_RESNET20, CLASSES, SIZE, BATCH);
  GtTrainer *resumed, *weights_only;
  GtTrainerConfig config;
  uint8_t images[3][BATCH * SIZE * SIZE * 3];
  int32_t labels[3][BATCH];
  GtBatch batch[3];
  GtStepResult result;
  char path[1024], weights_path[1024], why[512];
  int i, kind = -1;

  for (i = 0; i < 3; i++)
    fill_batch (&batch[i], images[i], labels[i], BATCH, SIZE, CLASSES, 20 + i);
  for (i = 0; i < 3; i++)
    CHECK (gt_trainer_step (uninterrupted, &batch[i], &result) == GT_OK, "%s",
        gt_trainer_error (uninterrupted));
  for (i = 0; i < 2; i++)
    CHECK (gt_trainer_step (saved, &batch[i], &result) == GT_OK, "%s",
        gt_trainer_error (saved));
  CHECK (!momentum_all_zero (saved), "two steps left the momentum zero");

  snprintf (path, sizeof (path), "%s/resume.safetensors", scratch_dir);
  snprintf (weights_path, sizeof (weights_path),
      "%s/resume-weights.safetensors", scratch_dir);
  CHECK (gt_trainer_save (saved, path, 0) == GT_OK, "%s",
      gt_trainer_error (saved));
  CHECK (gt_trainer_save (saved, weights_path, 1) == GT_OK, "%s",
      gt_trainer_error (saved));
  check_saved_momentum (saved, path);

  /* another seed: the load, not the initialisation, makes them equal */
  init_config (&config, GT_MODEL_RESNET20, CLASSES, SIZE, BATCH);
  config.seed = 43;
  resumed = gt_trainer_new (&config, why, sizeof (why));
  weights_only = gt_trainer_new (&config, why, sizeof (why));
  CHECK (resumed && weights_only, "%s", why);
  if (!resumed || !weights_only)
    exit (1);
  CHECK (gt_trainer_load (resumed, path, &kind) == GT_OK && kind == 1, "%s",
      gt_trainer_error (resumed));
  CHECK (gt_trainer_global_step (resumed) == 2, "resumed at step %lld, not 2",
      (long long)gt_trainer_global_step (resumed));
  resume_stage = "after the load";
  same_tensors (saved, resumed,
      PART_BIT (GT_TENSOR_VALUE) | PART_BIT (GT_TENSOR_MOMENTUM), 1, 0, 0,
      report_resume_difference);
  CHECK (gt_trainer_step (resumed, &batch[2], &result) == GT_OK, "%s",
      gt_trainer_error (resumed));
  resume_stage = "2 steps, save, load, 1 step against 3 steps";
  same_tensors (uninterrupted, resumed,
      PART_BIT (GT_TENSOR_VALUE) | PART_BIT (GT_TENSOR_MOMENTUM), 1, 0, 0,
      report_resume_difference);

  CHECK (
      gt_trainer_load (weights_only, weights_path, &kind) == GT_OK && kind == 0,
      "%s", gt_trainer_error (weights_only));
  CHECK (momentum_all_zero (weights_only),
      "weights alone: the momentum is not zero");
  CHECK (gt_trainer_step (weights_only, &batch[2], &result) == GT_OK, "%s",
      gt_trainer_error (weights_only));
  CHECK (!same_tensors (uninterrupted, weights_only,
             PART_BIT (GT_TENSOR_MOMENTUM), 0, 0, 0, report_quietly),
      "weights alone, then a step: the momentum is the uninterrupted run's");

  gt_trainer_free (uninterrupted);
  gt_trainer_free (saved);
  gt_trainer_free (resumed);
  gt_trainer_free (weights_only);
}

/* resnet20 learns: 64 fixed random images with random labels are
 * memorised to 100% training accuracy. */
static void
test_overfit (void)
{
  enum
  {
    N = 64,
    SIZE = 16,
    CLASSES = 10,
    MAX_STEPS = 150
  };
  GtTrainerConfig config;
  GtTrainer *trainer;
  uint8_t *images = malloc ((size_t)N * SIZE * SIZE * 3);
  int32_t labels[N];
  GtBatch batch;
  GtStepResult result;
  GtEvalTotals totals;
  char why[512];
  float first_loss = 0;
  int step, top1 = 0;

  init_config (&config, GT_MODEL_RESNET20, CLASSES, SIZE, N);
  config.lr = 0.05f;
  config.weight_decay = 0.f;
  config.label_smoothing = 0.f;
  config.lr_schedule = GT_LR_CONSTANT;
  config.seed = 7;
  trainer = gt_trainer_new (&config, why, sizeof (why));
  fill_batch (&batch, images, labels, N, SIZE, CLASSES, 3);
  for (step = 0; step < MAX_STEPS; step++) {
    double start = gt_seconds_now (), wall;

    if (gt_trainer_step (trainer, &batch, &result) != GT_OK) {
      CHECK (0, "step %d: %s", step, gt_trainer_error (trainer));
      break;
    }
    wall = gt_seconds_now () - start;
    /* the CPU's busy time is this step's computation: within the call */
    CHECK (result.busy_seconds > 0 && result.busy_seconds <= wall,
        "step %d: busy %.6f s, the call took %.6f s", step, result.busy_seconds,
        wall);
    if (step == 0)
      first_loss = result.loss;
    if (step % 10 == 9) {
      memset (&totals, 0, sizeof (totals));
      gt_trainer_eval (trainer, &batch, &totals);
      top1 = (int)totals.correct_top1;
      if (top1 == N)
        break;
    }
  }
  printf ("overfit: %d of %d right after %d steps (loss %.3f -> %.3f)\n", top1,
      N, step + 1, first_loss, result.loss);
  CHECK (top1 == N, "%d of %d after %d steps", top1, N, MAX_STEPS);
  gt_trainer_free (trainer);
  free (images);
}

int
main (int argc, char **argv)
{
  if (argc != 2) {
    fprintf (stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
    return 2;
  }
  scratch_dir = argv[1];
  mkdir (scratch_dir, 0755);
  test_parameter_counts ();
  test_names_and_config ();
  test_backend_settings ();
  test_schedule ();
  test_min_train_batch ();
  test_bad_input ();
  test_nonfinite_loss ();
  test_checkpoint_errors ();
  test_checkpoint_resume ();
  test_overfit ();
  if (failures)
    printf ("%d failures\n", failures);
  return failures ? 1 : 0;
}
