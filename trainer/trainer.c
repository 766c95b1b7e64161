/* trainer.c: backend-independent entry points of the training library:
 * configuration, the learning-rate schedule, steps and tensor access. */
#include "trainer-private.h"
#include "cuda-module.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const model_names[] = {
  [GT_MODEL_RESNET18] = "resnet18",
  [GT_MODEL_RESNET34] = "resnet34",
  [GT_MODEL_RESNET50] = "resnet50",
  [GT_MODEL_RESNET101] = "resnet101",
  [GT_MODEL_RESNET20] = "resnet20",
  [GT_MODEL_RESNET32] = "resnet32",
};

const char *
gt_model_name (GtModel model)
{
  if ((unsigned)model < sizeof (model_names) / sizeof (model_names[0]))
    return model_names[model];
  return "unknown";
}

int
gt_model_from_name (const char *name, GtModel *model)
{
  unsigned i;

  for (i = 0; name && i < sizeof (model_names) / sizeof (model_names[0]); i++)
    if (strcmp (name, model_names[i]) == 0) {
      *model = (GtModel)i;
      return 0;
    }
  return -1;
}

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
  }
  return "unknown";
}

void
gt_trainer_config_init (GtTrainerConfig *config)
{
  static const float imagenet_mean[3] = { 0.485f, 0.456f, 0.406f };
  static const float imagenet_std[3] = { 0.229f, 0.224f, 0.225f };

  memset (config, 0, sizeof (*config));
  config->model = GT_MODEL_RESNET50;
  config->num_classes = 1000;
  config->batch_size = 256;
  config->height = 224;
  config->width = 224;
  config->backend = GT_BACKEND_CPU;
  config->precision = GT_PRECISION_FP32;
  memcpy (config->mean, imagenet_mean, sizeof (imagenet_mean));
  memcpy (config->std, imagenet_std, sizeof (imagenet_std));
  config->lr = 0.1f;
  config->momentum = 0.9f;
  config->weight_decay = 1e-4f;
  config->label_smoothing = 0.1f;
  config->lr_schedule = GT_LR_COSINE;
  config->lr_step_size = 1;
  config->lr_gamma = 0.1f;
  config->lr_power = 2.f;
  config->seed = 0;
}

int
gt_trainer_fail (GtTrainer *trainer, int status, const char *format, ...)
{
  va_list args;

  va_start (args, format);
  vsnprintf (trainer->error, sizeof (trainer->error), format, args);
  va_end (args);
  return status;
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
  return 0;
}

GtTrainer *
gt_trainer_new (const GtTrainerConfig *config, char *why, size_t why_size)
{
  GtTrainer *trainer;

  if (config == NULL) {
    snprintf (why, why_size, "no configuration");
    return NULL;
  }
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
  if (gt_model_spec_init (
          &trainer->spec, config->model, config->num_classes, why, why_size)
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
  trainer->backend =
      trainer->ops->create (&trainer->spec, config, why, why_size);
  if (trainer->backend == NULL) {
    gt_model_spec_clear (&trainer->spec);
    free (trainer);
    return NULL;
  }
  gt_random_init (&trainer->rng, config->seed, 1);
  return trainer;
}

void
gt_trainer_free (GtTrainer *trainer)
{
  int i;

  if (trainer == NULL)
    return;
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

int
gt_trainer_step_begin (GtTrainer *trainer, const GtBatch *batch)
{
  int status;

  if (trainer->step_pending)
    return gt_trainer_fail (
        trainer, GT_ERROR_INVALID, "a step is already running: end it first");
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
  if (status == GT_OK)
    trainer->step++;
  else if (status == GT_ERROR_NONFINITE) {
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
  if (trainer->step_pending)
    return gt_trainer_fail (trainer, GT_ERROR_INVALID,
        "a step is running: end it before evaluating");
  return trainer->ops->eval (
      trainer->backend, batch, totals, trainer->error, sizeof (trainer->error));
}

size_t
gt_trainer_read_logits (GtTrainer *trainer, float *out, size_t count)
{
  return trainer->ops->read_logits (trainer->backend, out, count);
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
  int height, width;

  gt_model_output_size (&trainer->spec, trainer->config.height,
      trainer->config.width, &height, &width);
  return height * width > 1 ? 1 : 2;
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
