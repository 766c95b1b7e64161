/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* trainer.c: backend-independent entry points of the training library:
 * configuration, the learning-rate schedule, steps, tensor access, and
 * saving and loading the trainer (checkpoint.c writes and reads the
 * files). */
#include "trainer-private.h"
#include "cuda-module.h"
#include "trainer-env.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *
gt_status_name (GtStatus status)
{
  switch (status) {
    case GT_OK:
      return "ok";
    case GT_ERROR_INVALID:
      return "invalid";
    case GT_ERROR_IO:
      return "i/o error";
    case GT_ERROR_NO_MEMORY:
      return "out of memory";
    case GT_ERROR_DEVICE:
      return "device error";
    case GT_ERROR_NONFINITE:
      return "non-finite loss";
    case GT_ERROR_MISMATCH:
      return "checkpoint mismatch";
    case GT_ERROR_STOPPED:
      return "stopped: a rank left";
    case GT_ERROR_TIMEOUT:
      return "collective timed out";
  }
  return "unknown";
}

void
gt_trainer_config_init (GtTrainerConfig *config)
{
  static const GtTrainerConfig defaults = {
    /* the model and its input */
    .model = GT_MODEL_RESNET50,
    .num_classes = 1000,
    .batch_size = 256,
    .height = 224,
    .width = 224,
    /* where it runs */
    .backend = GT_BACKEND_CPU,
    .precision = GT_PRECISION_FP32,
    /* ImageNet's statistics */
    .mean = { 0.485f, 0.456f, 0.406f },
    .std = { 0.229f, 0.224f, 0.225f },
    /* the optimiser */
    .lr = 0.1f,
    .momentum = 0.9f,
    .weight_decay = 1e-4f,
    .label_smoothing = 0.1f,
    /* its schedule */
    .lr_schedule = GT_LR_COSINE,
    .lr_step_size = 1,
    .lr_gamma = 0.1f,
    .lr_power = 2.f,
    /* the backends' fast paths: the direct CPU kernels for the widest
     * vector unit, CUDA graphs */
    .cpu_kernels = GT_CPU_KERNELS_FAST,
    .cpu_isa = GT_CPU_ISA_AUTO,
    .cuda_graphs = 1,
    /* everything else 0: seed 0, no warmup, total_steps unknown, no
     * nesterov, no CUDA profile, messages to stderr (no log_func) */
  };

  *config = defaults;
}

void
gt_trainer_config_apply_env (GtTrainerConfig *config)
{
  const char *isa = gt_env_get (GT_ENV_CPU_ISA);

  /* set at all, as the direct kernels have always read it */
  if (gt_env_get (GT_ENV_CPU_NO_DIRECT_CONV) != NULL)
    config->cpu_kernels = GT_CPU_KERNELS_REFERENCE;
  if (isa != NULL && strcmp (isa, "avx512") == 0)
    config->cpu_isa = GT_CPU_ISA_AVX512;
  else if (isa != NULL && strcmp (isa, "avx2") == 0)
    config->cpu_isa = GT_CPU_ISA_AVX2;
  else if (isa != NULL && strcmp (isa, "sse") == 0)
    config->cpu_isa = GT_CPU_ISA_SSE;
  if (gt_env_on (GT_ENV_CUDA_NO_GRAPH))
    config->cuda_graphs = 0;
  if (gt_env_on (GT_ENV_CUDA_REQUIRE_GRAPH))
    config->cuda_require_graph = 1;
  if (gt_env_on (GT_ENV_CUDA_PROFILE))
    config->cuda_profile = 1;
}

static int
check_config (const GtTrainerConfig *config, char *why, size_t why_size)
{
  int c;

  if (config->num_classes < 1 || config->batch_size < 1 || config->height < 1
      || config->width < 1 || config->height > 8192 || config->width > 8192) {
    snprintf (why, why_size,
        "num-classes %d, batch size %d and image size %dx%d must be "
        "positive (and at most 8192 pixels a side)",
        config->num_classes, config->batch_size, config->width, config->height);
    return -1;
  }
  for (c = 0; c < 3; c++)
    if (!(config->std[c] > 0.f) || !isfinite (config->mean[c])) {
      snprintf (
          why, why_size, "std[%d] = %g must be positive", c, config->std[c]);
      return -1;
    }
  if (!(config->lr >= 0.f) || !isfinite (config->lr)
      || !(config->momentum >= 0.f && config->momentum < 1.f)
      || !(config->weight_decay >= 0.f) || !isfinite (config->weight_decay)
      || !(config->label_smoothing >= 0.f && config->label_smoothing < 1.f)) {
    snprintf (why, why_size,
        "lr %g, momentum %g, weight decay %g or label smoothing %g out of "
        "range (lr >= 0, 0 <= momentum < 1, weight decay >= 0, 0 <= label "
        "smoothing < 1)",
        config->lr, config->momentum, config->weight_decay,
        config->label_smoothing);
    return -1;
  }
  if (config->warmup_steps < 0 || config->total_steps < 0
      || (config->lr_schedule == GT_LR_STEP && config->lr_step_size < 1)
      || !isfinite (config->lr_gamma) || !isfinite (config->lr_power)
      || config->lr_schedule < GT_LR_CONSTANT
      || config->lr_schedule > GT_LR_POLY) {
    snprintf (why, why_size,
        "bad schedule: warmup %lld, total %lld steps, step size %lld",
        (long long)config->warmup_steps, (long long)config->total_steps,
        (long long)config->lr_step_size);
    return -1;
  }
  if (config->cpu_kernels < GT_CPU_KERNELS_FAST
      || config->cpu_kernels > GT_CPU_KERNELS_REFERENCE
      || config->cpu_isa < GT_CPU_ISA_AUTO
      || config->cpu_isa > GT_CPU_ISA_SSE) {
    snprintf (why, why_size, "unknown CPU kernels %d or instruction set %d",
        (int)config->cpu_kernels, (int)config->cpu_isa);
    return -1;
  }
  return 0;
}

/* ---- data-parallel state ---- */

static void
leave_job (GtTrainer *trainer)
{
  if (trainer->in_job) {
    trainer->in_job = 0;
    gt_dist_trainer_left ();
  }
}

/* The status of a failed collective: its timeout, or a device error. */
static int
comm_status (int status)
{
  return status == GT_ERROR_TIMEOUT ? status : GT_ERROR_DEVICE;
}

/* Broadcasts rank 0's whole state (weights, momentum, statistics, step,
 * RNG, samples seen, metadata) to every rank: a collective. */
static int
share_state (GtTrainer *trainer)
{
  GtComm *comm = trainer->config.comm;
  const GtModelSpec *spec = &trainer->spec;
  GtHostState state;
  char why[768], *text = NULL;
  int64_t numbers[3], length = 0;
  int status, i;

  if ((status = trainer->ops->sync_to_host (trainer->backend, &state)))
    return status;
  numbers[0] = trainer->step;
  numbers[1] = trainer->samples_seen;
  numbers[2] = *state.num_batches_tracked;
  if (gt_comm_rank (comm) == 0) {
    /* the metadata as key NUL value NUL ... */
    for (i = 0; i < trainer->num_metadata; i++)
      length += (int64_t)strlen (trainer->metadata[i].key)
          + (int64_t)strlen (trainer->metadata[i].value) + 2;
    text = malloc (length + 1);
    if (text == NULL)
      length = 0;
    for (i = 0, length = 0; text && i < trainer->num_metadata; i++) {
      length += sprintf (text + length, "%s", trainer->metadata[i].key) + 1;
      length += sprintf (text + length, "%s", trainer->metadata[i].value) + 1;
    }
  }
  if ((status = gt_comm_broadcast (comm, state.params,
           spec->num_params * sizeof (float), 0, why, sizeof (why)))
      || (status = gt_comm_broadcast (comm, state.momentum,
              spec->num_params * sizeof (float), 0, why, sizeof (why)))
      || (status = gt_comm_broadcast (comm, state.stats,
              spec->num_stats * sizeof (float), 0, why, sizeof (why)))
      || (status = gt_comm_broadcast (
              comm, numbers, sizeof (numbers), 0, why, sizeof (why)))
      || (status = gt_comm_broadcast (
              comm, &trainer->rng, sizeof (trainer->rng), 0, why, sizeof (why)))
      || (status = gt_comm_broadcast (
              comm, &length, sizeof (length), 0, why, sizeof (why)))) {
    free (text);
    return gt_trainer_fail (
        trainer, comm_status (status), "sharing rank 0's state: %s", why);
  }
  if (text == NULL && (text = malloc (length + 1)) == NULL)
    gt_comm_abort (comm, 1, "out of memory receiving rank 0's metadata");
  if ((status = gt_comm_broadcast (
           comm, text, (size_t)length, 0, why, sizeof (why)))) {
    free (text);
    return gt_trainer_fail (
        trainer, comm_status (status), "sharing rank 0's metadata: %s", why);
  }
  trainer->step = numbers[0];
  trainer->samples_seen = numbers[1];
  *state.num_batches_tracked = numbers[2];
  if (gt_comm_rank (comm) != 0) {
    int64_t at = 0;

    while (at < length) {
      const char *key = text + at, *value = key + strlen (key) + 1;

      gt_trainer_set_metadata (trainer, key, value);
      at = (value - text) + (int64_t)strlen (value) + 1;
    }
  }
  free (text);
  return trainer->ops->sync_from_host (trainer->backend);
}

int
gt_trainer_leave (GtTrainer *trainer)
{
  int status;

  if (trainer == NULL || !trainer->in_job)
    return GT_OK;
  if (trainer->step_pending) {
    GtStepResult ignored;

    gt_trainer_step_end (trainer, &ignored);
    if (!trainer->in_job)
      return GT_OK;
  }
  gt_comm_set_activity (trainer->config.comm,
      "gradient all-reduce (this rank leaving)", trainer->step + 1);
  status = trainer->ops->leave (
      trainer->backend, trainer->error, sizeof (trainer->error));
  leave_job (trainer);
  return status == GT_ERROR_STOPPED ? GT_OK : status;
}

int
gt_trainer_rank (const GtTrainer *trainer)
{
  return gt_comm_rank (trainer->config.comm);
}

int
gt_trainer_world_size (const GtTrainer *trainer)
{
  return gt_comm_size (trainer->config.comm);
}

int64_t
gt_trainer_samples_seen (const GtTrainer *trainer)
{
  return trainer->samples_seen;
}

/* ---- checkpoints (checkpoint.c reads and writes the files) ---- */

int
gt_trainer_save (GtTrainer *trainer, const char *path, int weights_only)
{
  GtCheckpointHeader header;
  GtHostState state;
  char text[64];
  int status;

  if (trainer->step_pending)
    return gt_trainer_fail (
        trainer, GT_ERROR_INVALID, "a step is running: end it before saving");
  if ((status = trainer->ops->sync_to_host (trainer->backend, &state)))
    return status;
  if (!weights_only) {
    /* the job's shape, for a resume on another number of ranks */
    snprintf (text, sizeof (text), "%d", gt_trainer_world_size (trainer));
    gt_trainer_set_metadata (trainer, "world_size", text);
    snprintf (text, sizeof (text), "%lld",
        (long long)trainer->config.batch_size
            * gt_trainer_world_size (trainer));
    gt_trainer_set_metadata (trainer, "global_batch", text);
    snprintf (text, sizeof (text), "%" PRId64, trainer->samples_seen);
    gt_trainer_set_metadata (trainer, "samples_seen", text);
  }
  header.step = trainer->step;
  header.rng = trainer->rng;
  header.metadata = trainer->metadata;
  header.num_metadata = trainer->num_metadata;
  return gt_checkpoint_write (path, &trainer->spec, &state,
      weights_only ? NULL : &header, trainer->error, sizeof (trainer->error));
}

/* gt_trainer_load in one process: the trainer takes what the file holds,
 * or stays as it was when anything in it does not fit. */
static int
load_file (GtTrainer *trainer, const char *path, int *resumed)
{
  const GtModelSpec *spec = &trainer->spec;
  GtCheckpoint checkpoint;
  GtHostState state;
  int status, i;

  if (trainer->step_pending)
    return gt_trainer_fail (
        trainer, GT_ERROR_INVALID, "a step is running: end it before loading");
  status = gt_checkpoint_read (
      path, spec, &checkpoint, trainer->error, sizeof (trainer->error));
  if (status == GT_OK
      && !(status = trainer->ops->sync_to_host (trainer->backend, &state))) {
    memcpy (state.params, checkpoint.params, spec->num_params * sizeof (float));
    memcpy (
        state.momentum, checkpoint.momentum, spec->num_params * sizeof (float));
    memcpy (state.stats, checkpoint.stats, spec->num_stats * sizeof (float));
    *state.num_batches_tracked = checkpoint.num_batches_tracked;
    status = trainer->ops->sync_from_host (trainer->backend);
  }
  if (status == GT_OK) {
    trainer->step = checkpoint.step;
    if (checkpoint.full)
      trainer->rng = checkpoint.rng;
    trainer->samples_seen = checkpoint.samples_seen;
    for (i = 0; i < checkpoint.num_metadata; i++)
      gt_trainer_set_metadata (
          trainer, checkpoint.metadata[i].key, checkpoint.metadata[i].value);
    if (resumed)
      *resumed = checkpoint.full;
  }
  gt_checkpoint_clear (&checkpoint);
  return status;
}

int
gt_trainer_load (GtTrainer *trainer, const char *path, int *resumed)
{
  GtComm *comm = trainer->config.comm;
  int64_t outcome[2] = { GT_OK, 0 };
  char why[768];
  int local_resumed = 0, status;

  if (comm == NULL)
    return load_file (trainer, path, resumed);
  if (!trainer->in_job)
    return gt_trainer_fail (trainer, GT_ERROR_STOPPED,
        "this rank has left its job: it loads no checkpoint");
  if (gt_comm_rank (comm) == 0) {
    outcome[0] = load_file (trainer, path, &local_resumed);
    outcome[1] = local_resumed;
  }
  gt_comm_set_activity (comm, "checkpoint broadcast of the resume", -1);
  if ((status = gt_comm_broadcast (
           comm, outcome, sizeof (outcome), 0, why, sizeof (why)))
      || (status = gt_comm_broadcast (comm, trainer->error,
              sizeof (trainer->error), 0, why, sizeof (why))))
    return gt_trainer_fail (
        trainer, comm_status (status), "sharing the checkpoint: %s", why);
  if (outcome[0] != GT_OK)
    return (int)outcome[0]; /* with rank 0's message */
  if (resumed)
    *resumed = (int)outcome[1];
  return share_state (trainer);
}

GtTrainer *
gt_trainer_new (
    const GtTrainerConfig *caller_config, char *why, size_t why_size)
{
  GtTrainerConfig effective;
  const GtTrainerConfig *config = &effective;
  GtTrainer *trainer;

  if (caller_config == NULL) {
    snprintf (why, why_size, "no configuration");
    return NULL;
  }
  effective = *caller_config;
  gt_trainer_config_apply_env (&effective);
  if (check_config (config, why, why_size) < 0)
    return NULL;
  if (config->backend != GT_BACKEND_CPU && config->backend != GT_BACKEND_CUDA) {
    snprintf (why, why_size, "unknown backend %d", (int)config->backend);
    return NULL;
  }
  trainer = calloc (1, sizeof (GtTrainer));
  if (trainer == NULL) {
    snprintf (why, why_size, "out of memory");
    return NULL;
  }
  trainer->config = *config;
  if (gt_model_spec_init (&trainer->spec, config->model, config->num_classes,
          config->height, config->width, why, why_size)
      < 0) {
    free (trainer);
    return NULL;
  }
  if (config->batch_size < gt_trainer_min_train_batch (trainer)) {
    snprintf (why, why_size,
        "batch size 1 with %dx%d images leaves batch-norm one value per "
        "channel in the last stage: use a batch of 2 or more",
        config->width, config->height);
    gt_model_spec_clear (&trainer->spec);
    free (trainer);
    return NULL;
  }
  trainer->ops = &gt_cpu_backend;
  if (config->backend == GT_BACKEND_CUDA
      && (trainer->ops = gt_cuda_backend_ops (why, why_size)) == NULL) {
    gt_model_spec_clear (&trainer->spec);
    free (trainer);
    return NULL;
  }
  /* the CUDA backend's set-up is a collective in a job */
  gt_comm_set_activity (config->comm, "trainer set-up", -1);
  trainer->backend =
      trainer->ops->create (&trainer->spec, config, why, why_size);
  if (trainer->backend == NULL) {
    gt_model_spec_clear (&trainer->spec);
    free (trainer);
    return NULL;
  }
  gt_random_init (&trainer->rng, config->seed, 1);
  if (config->comm != NULL && trainer->ops->leave == NULL) {
    snprintf (why, why_size,
        "the %s backend cannot train data-parallel in this build",
        trainer->ops->name);
    gt_trainer_free (trainer);
    return NULL;
  }
  if (config->comm != NULL) {
    /* every rank starts from rank 0's weights, as DDP broadcasts them */
    gt_comm_set_activity (config->comm, "broadcast of the initial weights", -1);
    trainer->in_job = 1;
    gt_dist_trainer_joined ();
    if (share_state (trainer) != GT_OK) {
      snprintf (why, why_size, "%s", trainer->error);
      gt_trainer_free (trainer);
      return NULL;
    }
  }
  return trainer;
}

void
gt_trainer_free (GtTrainer *trainer)
{
  int i;

  if (trainer == NULL)
    return;
  /* a rank that goes away without leaving would make its peers wait in
   * their next step for ever */
  gt_trainer_leave (trainer);
  trainer->ops->destroy (trainer->backend);
  gt_model_spec_clear (&trainer->spec);
  for (i = 0; i < trainer->num_metadata; i++) {
    free (trainer->metadata[i].key);
    free (trainer->metadata[i].value);
  }
  free (trainer->metadata);
  free (trainer);
}

const char *
gt_trainer_error (const GtTrainer *trainer)
{
  return trainer->error;
}

const GtTrainerConfig *
gt_trainer_config (const GtTrainer *trainer)
{
  return &trainer->config;
}

float
gt_lr_schedule (const GtTrainerConfig *config, int64_t step)
{
  double progress, lr = config->lr;
  int64_t span = config->total_steps - config->warmup_steps;

  if (step < config->warmup_steps)
    return (float)(lr * (step + 1) / config->warmup_steps);
  step -= config->warmup_steps;
  progress = span > 0 ? (double)step / span : 0.0;
  if (progress > 1.0)
    progress = 1.0;
  switch (config->lr_schedule) {
    case GT_LR_CONSTANT:
      break;
    case GT_LR_COSINE:
      /* total_steps 0 (unknown): constant after the warmup */
      if (span > 0)
        lr *= 0.5 * (1.0 + cos (M_PI * progress));
      break;
    case GT_LR_STEP:
      lr *= pow (config->lr_gamma, (double)(step / config->lr_step_size));
      break;
    case GT_LR_POLY:
      if (span > 0)
        lr *= pow (1.0 - progress, config->lr_power);
      break;
  }
  return (float)lr;
}

float
gt_trainer_current_lr (const GtTrainer *trainer)
{
  return gt_lr_schedule (&trainer->config, trainer->step);
}

int64_t
gt_trainer_global_step (const GtTrainer *trainer)
{
  return trainer->step;
}

/* The one check of a batch against the configuration: the backends take
 * what passes as it is. */
static int
check_batch (GtTrainer *trainer, const GtBatch *batch, int training)
{
  const GtTrainerConfig *config = &trainer->config;
  int i;

  if (batch == NULL || batch->images == NULL || batch->labels == NULL)
    return gt_trainer_fail (trainer, GT_ERROR_INVALID, "no batch");
  if (batch->num_samples < 1 || batch->num_samples > config->batch_size)
    return gt_trainer_fail (trainer, GT_ERROR_INVALID,
        "batch of %d samples: expected 1 to %d", batch->num_samples,
        config->batch_size);
  if (batch->height != config->height || batch->width != config->width
      || (batch->channels != 1 && batch->channels != 3))
    return gt_trainer_fail (trainer, GT_ERROR_INVALID,
        "batch of %dx%d images with %d channels: the trainer takes %dx%d "
        "with 1 or 3",
        batch->width, batch->height, batch->channels, config->width,
        config->height);
  for (i = 0; i < batch->num_samples; i++)
    if (batch->labels[i] < 0 || batch->labels[i] >= config->num_classes)
      return gt_trainer_fail (trainer, GT_ERROR_INVALID,
          "label %d of sample %d is outside the model's %d classes",
          (int)batch->labels[i], i, config->num_classes);
  if (training
      && (size_t)batch->num_samples * trainer->spec.last_h
              * trainer->spec.last_w
          < 2)
    return gt_trainer_fail (trainer, GT_ERROR_INVALID,
        "a batch of one %dx%d image leaves batch-norm one value per channel "
        "(PyTorch refuses it too): use a larger batch or larger images",
        config->width, config->height);
  return GT_OK;
}

int
gt_trainer_step_begin (GtTrainer *trainer, const GtBatch *batch)
{
  int status;

  if (trainer->step_pending)
    return gt_trainer_fail (
        trainer, GT_ERROR_INVALID, "a step is already running: end it first");
  if (trainer->config.comm != NULL && !trainer->in_job)
    return gt_trainer_fail (trainer, GT_ERROR_STOPPED,
        "this rank's job has stopped: it takes no more steps");
  if ((status = check_batch (trainer, batch, 1)) != GT_OK)
    return status;
  gt_comm_set_activity (
      trainer->config.comm, "gradient all-reduce", trainer->step + 1);
  status = trainer->ops->step_begin (trainer->backend, batch,
      gt_trainer_current_lr (trainer), trainer->error, sizeof (trainer->error));
  if (status == GT_OK)
    trainer->step_pending = 1;
  return status;
}

int
gt_trainer_step_end (GtTrainer *trainer, GtStepResult *result)
{
  GtStepResult ignored;
  int status;

  if (!trainer->step_pending)
    return gt_trainer_fail (trainer, GT_ERROR_INVALID, "no step is running");
  trainer->step_pending = 0;
  if (result == NULL)
    result = &ignored;
  status = trainer->ops->step_end (
      trainer->backend, result, trainer->error, sizeof (trainer->error));
  if (trainer->config.comm == NULL)
    result->global_samples = result->num_samples;
  if (status == GT_ERROR_STOPPED)
    leave_job (trainer);
  if (status == GT_OK) {
    trainer->step++;
    trainer->samples_seen += result->global_samples;
  } else if (status == GT_ERROR_NONFINITE || status == GT_ERROR_STOPPED) {
    /* name the step as a user counts them, from 1 */
    char reason[sizeof (trainer->error)];

    snprintf (reason, sizeof (reason), "%s", trainer->error);
    gt_trainer_fail (
        trainer, status, "step %lld: %s", (long long)trainer->step + 1, reason);
  }
  result->step = trainer->step;
  return status;
}

int
gt_trainer_step (GtTrainer *trainer, const GtBatch *batch, GtStepResult *result)
{
  int status = gt_trainer_step_begin (trainer, batch);

  if (status != GT_OK)
    return status;
  return gt_trainer_step_end (trainer, result);
}

int
gt_trainer_eval (GtTrainer *trainer, const GtBatch *batch, GtEvalTotals *totals)
{
  int status;

  if (trainer->step_pending)
    return gt_trainer_fail (trainer, GT_ERROR_INVALID,
        "a step is running: end it before evaluating");
  if ((status = check_batch (trainer, batch, 0)) != GT_OK)
    return status;
  return trainer->ops->eval (
      trainer->backend, batch, totals, trainer->error, sizeof (trainer->error));
}

size_t
gt_trainer_read_logits (GtTrainer *trainer, float *out, size_t count)
{
  return trainer->ops->read_logits (trainer->backend, out, count);
}

void
gt_trainer_backend_report (GtTrainer *trainer, GtBackendReport *report)
{
  memset (report, 0, sizeof (*report));
  if (trainer->ops->report != NULL)
    trainer->ops->report (trainer->backend, report);
  else
    snprintf (report->graphs_off, sizeof (report->graphs_off), "%s backend",
        trainer->ops->name);
}

void *
gt_trainer_host_alloc (GtTrainer *trainer, size_t size)
{
  if (trainer->ops->host_alloc != NULL)
    return trainer->ops->host_alloc (trainer->backend, size);
  return malloc (size > 0 ? size : 1);
}

void
gt_trainer_host_free (GtTrainer *trainer, void *memory)
{
  if (memory == NULL)
    return;
  if (trainer->ops->host_free != NULL)
    trainer->ops->host_free (trainer->backend, memory);
  else
    free (memory);
}

int
gt_trainer_min_train_batch (const GtTrainer *trainer)
{
  return trainer->spec.last_h * trainer->spec.last_w > 1 ? 1 : 2;
}

size_t
gt_trainer_num_parameters (const GtTrainer *trainer)
{
  return trainer->spec.num_params;
}

int
gt_trainer_num_tensors (const GtTrainer *trainer)
{
  return trainer->spec.num_entries;
}

int
gt_trainer_tensor_info (const GtTrainer *trainer, int index, GtTensorInfo *info)
{
  const GtTensorEntry *entry;
  int i;

  if (index < 0 || index >= trainer->spec.num_entries)
    return GT_ERROR_INVALID;
  entry = &trainer->spec.entries[index];
  info->name = entry->name;
  info->ndim = entry->ndim;
  for (i = 0; i < 4; i++)
    info->shape[i] = i < entry->ndim ? entry->shape[i] : 0;
  info->numel = (int64_t)entry->numel;
  info->is_parameter = gt_entry_is_parameter (entry);
  return GT_OK;
}

int
gt_trainer_read_tensor (GtTrainer *trainer, const char *name, GtTensorPart part,
    float *out, size_t count)
{
  const GtTensorEntry *entry = gt_model_find_entry (&trainer->spec, name);
  GtHostState state;
  int status;

  if (entry == NULL)
    return gt_trainer_fail (trainer, GT_ERROR_INVALID,
        "%s has no tensor named '%s'", gt_model_name (trainer->config.model),
        name ? name : "(null)");
  if (count < entry->numel)
    return gt_trainer_fail (trainer, GT_ERROR_INVALID,
        "%s has %zu values, room for %zu", name, entry->numel, count);
  if (part != GT_TENSOR_VALUE && !gt_entry_is_parameter (entry))
    return gt_trainer_fail (trainer, GT_ERROR_INVALID,
        "%s is a statistic: it has no gradient or momentum", name);
  if ((status = trainer->ops->sync_to_host (trainer->backend, &state)))
    return status;
  switch (entry->kind) {
    case GT_ENTRY_RUNNING_MEAN:
    case GT_ENTRY_RUNNING_VAR:
      memcpy (out, state.stats + entry->offset, entry->numel * sizeof (float));
      break;
    case GT_ENTRY_NUM_BATCHES_TRACKED:
      out[0] = (float)*state.num_batches_tracked;
      break;
    default:
      gt_entry_to_torch (entry,
          (part == GT_TENSOR_GRAD              ? state.grads
                  : part == GT_TENSOR_MOMENTUM ? state.momentum
                                               : state.params)
              + entry->offset,
          out);
      break;
  }
  return GT_OK;
}

int
gt_trainer_set_metadata (GtTrainer *trainer, const char *key, const char *value)
{
  GtMetadataEntry *entries;
  char *copy;
  int i;

  if (key == NULL || value == NULL || strncmp (key, "gst_train.", 10) == 0)
    return gt_trainer_fail (trainer, GT_ERROR_INVALID,
        "metadata key '%s' is missing or reserved", key ? key : "(null)");
  if ((copy = strdup (value)) == NULL)
    return gt_trainer_fail (trainer, GT_ERROR_NO_MEMORY, "out of memory");
  for (i = 0; i < trainer->num_metadata; i++)
    if (strcmp (trainer->metadata[i].key, key) == 0) {
      free (trainer->metadata[i].value);
      trainer->metadata[i].value = copy;
      return GT_OK;
    }
  entries = realloc (trainer->metadata,
      (trainer->num_metadata + 1) * sizeof (GtMetadataEntry));
  if (entries == NULL
      || (entries[trainer->num_metadata].key = strdup (key)) == NULL) {
    if (entries)
      trainer->metadata = entries;
    free (copy);
    return gt_trainer_fail (trainer, GT_ERROR_NO_MEMORY, "out of memory");
  }
  entries[trainer->num_metadata++].value = copy;
  trainer->metadata = entries;
  return GT_OK;
}

const char *
gt_trainer_get_metadata (const GtTrainer *trainer, const char *key)
{
  int i;

  for (i = 0; key && i < trainer->num_metadata; i++)
    if (strcmp (trainer->metadata[i].key, key) == 0)
      return trainer->metadata[i].value;
  return NULL;
}
