/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpu-backend.c: the fp32 reference backend. It runs a GtModelSpec layer
 * by layer with the kernels of cpu-conv.c, cpu-norm.c and cpu-layers.c,
 * keeping every activation of the forward pass for the backward pass, and
 * applies SGD to the flat parameter buffer. Read next to the CUDA backend: the same steps, in the
 * same order, with the same names. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "backend.h"
#include "cpu-blas.h"
#include "cpu-conv.h"
#include "cpu-direct-conv.h"
#include "cpu-layers.h"
#include "cpu-norm.h"
#include "cpu-streaming.h"
#include "gt-clock.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <unistd.h>

/* Floats of im2col columns per thread: large enough that the matrix
 * products stay efficient, small enough to stay near the caches. */
#define COLUMN_BUDGET_FLOATS (2u << 20)

#define MAX_SIZE(a, b) ((a) > (b) ? (a) : (b))

/* backend.h's units and blocks, activations in float */
typedef GtUnit Unit;
typedef GtBlock Block;

typedef struct
{
  const GtModelSpec *spec;
  GtTrainerConfig config;
  GtCpuPool *pool;
  GtCpuScratch scratch;

  float *params;
  float *grads;
  float *momentum;
  float *stats;
  float *saved_stats; /* restored when a step's loss is not finite */
  int64_t num_batches_tracked;

  float *input;
  Unit stem;
  float *pooled;
  int *argmax;
  Block *blocks;
  const float *last_out; /* the last block's output */
  float *features;
  float *logits;
  float *dlogits;
  float *dfeatures;
  float *grad_buffers[4];
  int logits_samples;

  int pending_status;
  GtStepResult pending_result;
  char pending_why[512];
} CpuBackend;

static int
unit_setup (
    Unit *unit, const GtConvSpec *conv, const GtNormSpec *norm, int batch_size)
{
  size_t floats = gt_conv_output_values (conv, batch_size);

  unit->conv = conv;
  unit->norm = norm;
  unit->conv_out = malloc (floats * sizeof (float));
  unit->out = malloc (floats * sizeof (float));
  unit->mean = malloc (conv->out_channels * sizeof (float));
  unit->invstd = malloc (conv->out_channels * sizeof (float));
  return unit->conv_out && unit->out && unit->mean && unit->invstd ? 0 : -1;
}

static void
unit_clear (Unit *unit)
{
  free (unit->conv_out);
  free (unit->out);
  free (unit->mean);
  free (unit->invstd);
}

static void cpu_destroy (void *data);

/* The cores this process may run on (its affinity mask: taskset, cpusets),
 * the same count the data elements' thread budget starts from. */
static int
cpu_usable_cores (void)
{
  cpu_set_t set;

  if (sched_getaffinity (0, sizeof (set), &set) == 0 && CPU_COUNT (&set) > 0)
    return CPU_COUNT (&set);
  return (int)sysconf (_SC_NPROCESSORS_ONLN);
}

static void *
cpu_create (const GtModelSpec *spec, const GtTrainerConfig *config, char *why,
    size_t why_size)
{
  CpuBackend *cpu = calloc (1, sizeof (CpuBackend));
  int batch_size = config->batch_size;
  size_t max_activation = 0, max_columns = 0, max_weights = 0;
  size_t max_pad = 0;
  int num_threads = config->num_threads, i, k, max_channels;

  if (cpu == NULL)
    goto no_memory;
  cpu->spec = spec;
  cpu->config = *config;
  if (num_threads <= 0)
    num_threads = cpu_usable_cores () / gt_comm_local_size (config->comm);
  if (num_threads <= 0)
    num_threads = 1;
  if (gt_cpu_blas_init (why, why_size) < 0) {
    cpu_destroy (cpu);
    return NULL;
  }
  /* Our threads split every product by rows (cpu-pool.h says why). */
  gt_cpu_blas_set_num_threads (1);
  cpu->pool = gt_cpu_pool_new (num_threads);
  if (cpu->pool == NULL) {
    snprintf (why, why_size, "could not start %d CPU threads", num_threads);
    cpu_destroy (cpu);
    return NULL;
  }

  cpu->params = calloc (spec->num_params, sizeof (float));
  /* data-parallel steps reduce the gradients and a trailer in one go */
  cpu->grads = calloc (spec->num_params + GT_DIST_TRAILER, sizeof (float));
  cpu->momentum = calloc (spec->num_params, sizeof (float));
  cpu->stats = calloc (spec->num_stats, sizeof (float));
  cpu->saved_stats = calloc (spec->num_stats, sizeof (float));
  cpu->input = malloc (
      (size_t)batch_size * config->height * config->width * 3 * sizeof (float));
  cpu->blocks = calloc (spec->num_blocks, sizeof (Block));
  if (!cpu->params || !cpu->grads || !cpu->momentum || !cpu->stats
      || !cpu->saved_stats || !cpu->input || !cpu->blocks)
    goto no_memory;

  /* the model's plan gives every size */
  max_activation = spec->max_activation * batch_size;
  if (unit_setup (&cpu->stem, &spec->stem, &spec->stem_norm, batch_size) < 0)
    goto no_memory;
  if (spec->has_maxpool) {
    size_t floats = (size_t)batch_size * spec->pooled_h * spec->pooled_w
        * spec->stem.out_channels;

    cpu->pooled = malloc (floats * sizeof (float));
    cpu->argmax = malloc (floats * sizeof (int));
    if (!cpu->pooled || !cpu->argmax)
      goto no_memory;
  }
  for (i = 0; i < spec->num_blocks; i++) {
    const GtBlockSpec *block_spec = &spec->blocks[i];
    Block *block = &cpu->blocks[i];

    block->spec = block_spec;
    block->num_units = block_spec->num_units;
    for (k = 0; k < block->num_units; k++)
      if (unit_setup (&block->units[k], &block_spec->convs[k],
              &block_spec->norms[k], batch_size)
          < 0)
        goto no_memory;
    if (block_spec->has_downsample
        && unit_setup (&block->down, &block_spec->down_conv,
               &block_spec->down_norm, batch_size)
            < 0)
      goto no_memory;
  }

  for (i = 0; i < 4; i++)
    if (!(cpu->grad_buffers[i] = malloc (max_activation * sizeof (float))))
      goto no_memory;
  cpu->features = malloc ((size_t)batch_size * spec->features * sizeof (float));
  cpu->dfeatures =
      malloc ((size_t)batch_size * spec->features * sizeof (float));
  cpu->logits =
      malloc ((size_t)batch_size * spec->num_classes * sizeof (float));
  cpu->dlogits =
      malloc ((size_t)batch_size * spec->num_classes * sizeof (float));
  if (!cpu->features || !cpu->dfeatures || !cpu->logits || !cpu->dlogits)
    goto no_memory;

  /* Scratch sized for the largest convolution. */
  max_channels = spec->max_norm_channels;
  for (i = 0; i < spec->num_entries; i++) {
    const GtTensorEntry *entry = &spec->entries[i];

    if (entry->kind == GT_ENTRY_CONV_WEIGHT) {
      size_t width = entry->shape[1] * entry->shape[2] * entry->shape[3];
      size_t rows = (size_t)batch_size * config->height * config->width;

      if (entry->numel > max_weights)
        max_weights = entry->numel;
      if (rows * width > max_columns)
        max_columns = rows * width;
      if (width > max_columns)
        max_columns = width;
    }
  }
  if (max_columns > COLUMN_BUDGET_FLOATS)
    max_columns = COLUMN_BUDGET_FLOATS;
  /* a padded image for the direct 3x3 kernels, where they apply and the
   * configuration asks for them */
  max_pad = gt_cpu_direct_conv_needs (&spec->stem);
  for (i = 0; i < spec->num_blocks; i++)
    for (k = 0; k < cpu->blocks[i].num_units; k++)
      max_pad = MAX_SIZE (
          max_pad, gt_cpu_direct_conv_needs (cpu->blocks[i].units[k].conv));
  if (config->cpu_kernels == GT_CPU_KERNELS_REFERENCE)
    max_pad = 0;
  if (gt_cpu_scratch_init (&cpu->scratch, num_threads, max_columns, max_weights,
          max_channels, max_pad)
      < 0)
    goto no_memory;
  if (config->cpu_kernels == GT_CPU_KERNELS_FAST)
    cpu->scratch.direct_kernels = gt_cpu_direct_conv_kernels (config->cpu_isa);

  gt_model_init_weights (
      spec, cpu->params, cpu->stats, config->seed, config->zero_init_residual);
  return cpu;

no_memory:
  snprintf (why, why_size,
      "out of memory allocating %s for batch %d at %dx%d on the CPU",
      gt_model_name (spec->model), batch_size, config->width, config->height);
  cpu_destroy (cpu);
  return NULL;
}

static void
cpu_destroy (void *data)
{
  CpuBackend *cpu = data;
  int i, k;

  if (cpu == NULL)
    return;
  if (cpu->blocks)
    for (i = 0; i < cpu->spec->num_blocks; i++) {
      for (k = 0; k < GT_MAX_BLOCK_UNITS; k++)
        unit_clear (&cpu->blocks[i].units[k]);
      unit_clear (&cpu->blocks[i].down);
    }
  free (cpu->blocks);
  unit_clear (&cpu->stem);
  for (i = 0; i < 4; i++)
    free (cpu->grad_buffers[i]);
  gt_cpu_scratch_clear (&cpu->scratch);
  gt_cpu_pool_free (cpu->pool);
  free (cpu->params);
  free (cpu->grads);
  free (cpu->momentum);
  free (cpu->stats);
  free (cpu->saved_stats);
  free (cpu->input);
  free (cpu->pooled);
  free (cpu->argmax);
  free (cpu->features);
  free (cpu->dfeatures);
  free (cpu->logits);
  free (cpu->dlogits);
  free (cpu);
}

/* ---- forward ---- */

static void
unit_forward (CpuBackend *cpu, Unit *unit, const float *x, int n,
    const float *residual, int relu, int training)
{
  const GtNormSpec *norm = unit->norm;
  size_t rows = (size_t)n * unit->conv->out_h * unit->conv->out_w;
  double mean[norm->channels], m2[norm->channels];
  int have_moments = 0;

  /* in training, the direct kernels also give batch-norm its moments */
  if (training)
    have_moments =
        gt_cpu_conv_forward_moments (cpu->pool, &cpu->scratch, unit->conv, x, n,
            cpu->params + unit->conv->weight, unit->conv_out, mean, m2);
  else
    gt_cpu_conv_forward (cpu->pool, &cpu->scratch, unit->conv, x, n,
        cpu->params + unit->conv->weight, unit->conv_out);
  if (have_moments)
    gt_cpu_norm_forward_train_moments (cpu->pool, rows, norm->channels,
        unit->conv_out, mean, m2, cpu->params + norm->weight,
        cpu->params + norm->bias, residual, relu, unit->out, unit->mean,
        unit->invstd, cpu->stats + norm->mean, cpu->stats + norm->var);
  else if (training)
    gt_cpu_norm_forward_train (cpu->pool, &cpu->scratch, rows, norm->channels,
        unit->conv_out, cpu->params + norm->weight, cpu->params + norm->bias,
        residual, relu, unit->out, unit->mean, unit->invstd,
        cpu->stats + norm->mean, cpu->stats + norm->var);
  else
    gt_cpu_norm_forward_eval (cpu->pool, rows, norm->channels, unit->conv_out,
        cpu->params + norm->weight, cpu->params + norm->bias,
        cpu->stats + norm->mean, cpu->stats + norm->var, residual, relu,
        unit->out);
}

/* out = relu(main path + shortcut), the shortcut being the input or its
 * 1x1 projection. */
static void
block_forward (
    CpuBackend *cpu, Block *block, const float *x, int n, int training)
{
  const float *in = x;
  const float *shortcut = x;
  int k;

  if (block->spec->has_downsample) {
    unit_forward (cpu, &block->down, x, n, NULL, 0, training);
    shortcut = block->down.out;
  }
  for (k = 0; k < block->num_units; k++) {
    int last = k == block->num_units - 1;

    unit_forward (
        cpu, &block->units[k], in, n, last ? shortcut : NULL, 1, training);
    in = block->units[k].out;
  }
}

static void
network_forward (CpuBackend *cpu, int n, int training)
{
  const GtModelSpec *spec = cpu->spec;
  const float *x;
  int i;

  unit_forward (cpu, &cpu->stem, cpu->input, n, NULL, 1, training);
  x = cpu->stem.out;
  if (spec->has_maxpool) {
    gt_cpu_maxpool_forward (cpu->pool, x, n, spec->stem.out_h, spec->stem.out_w,
        spec->stem.out_channels, cpu->pooled, cpu->argmax);
    x = cpu->pooled;
  }
  for (i = 0; i < spec->num_blocks; i++) {
    block_forward (cpu, &cpu->blocks[i], x, n, training);
    x = cpu->blocks[i].units[cpu->blocks[i].num_units - 1].out;
  }
  cpu->last_out = x;
  gt_cpu_avgpool_forward (
      x, n, spec->last_h * spec->last_w, spec->features, cpu->features);
  gt_cpu_linear_forward (cpu->features, n, spec->features, spec->num_classes,
      cpu->params + spec->fc_weight, cpu->params + spec->fc_bias, cpu->logits);
  cpu->logits_samples = n;
}

/* ---- backward ---- */

typedef struct
{
  float *target;
  const float *addend;
  size_t count;
} AddTask;

GT_CPU_STREAMING static void
add_task (void *data, int thread, int num_threads)
{
  AddTask *task = data;
  size_t begin, end, i;

  gt_cpu_split (task->count, thread, num_threads, &begin, &end);
  for (i = begin; i < end; i++)
    task->target[i] += task->addend[i];
}

/* Gradients of the unit's weights from @dy (at the unit's output); the
 * gradient at its input goes to @dx when not NULL, @dconv is scratch. */
static void
unit_backward (CpuBackend *cpu, Unit *unit, const float *x, int n, int relu,
    const float *dy, float *dconv, float *dx, float *dresidual)
{
  const GtNormSpec *norm = unit->norm;
  size_t rows = (size_t)n * unit->conv->out_h * unit->conv->out_w;

  gt_cpu_norm_backward (cpu->pool, &cpu->scratch, rows, norm->channels,
      unit->conv_out, unit->mean, unit->invstd, cpu->params + norm->weight,
      relu ? unit->out : NULL, dy, dconv, cpu->grads + norm->weight,
      cpu->grads + norm->bias, dresidual);
  gt_cpu_conv_backward (cpu->pool, &cpu->scratch, unit->conv, x, n,
      cpu->params + unit->conv->weight, dconv, dx,
      cpu->grads + unit->conv->weight);
}

/* @grad[*at] holds the gradient at the block's output; on return it holds
 * the gradient at its input. The four buffers rotate so that no layer reads
 * and writes the same one. */
static void
block_backward (CpuBackend *cpu, Block *block, const float *x, int n, int *at)
{
  float **grad = cpu->grad_buffers;
  int out = *at, conv = (out + 1) % 4, shortcut = (out + 2) % 4,
      in = (out + 3) % 4;
  int k;

  for (k = block->num_units - 1; k >= 0; k--) {
    const float *unit_in = k > 0 ? block->units[k - 1].out : x;
    int last = k == block->num_units - 1;

    unit_backward (cpu, &block->units[k], unit_in, n, 1,
        last ? grad[out] : grad[in], grad[conv], grad[in],
        last ? grad[shortcut] : NULL);
  }
  if (block->spec->has_downsample) {
    /* the output gradient is spent: its buffer takes the projection's */
    unit_backward (cpu, &block->down, x, n, 0, grad[shortcut], grad[conv],
        grad[out], NULL);
    shortcut = out;
  }
  {
    AddTask task = { grad[in], grad[shortcut],
      (size_t)n * block->units[0].conv->in_h * block->units[0].conv->in_w
          * block->units[0].conv->in_channels };

    gt_cpu_pool_run (cpu->pool, add_task, &task);
  }
  *at = in;
}

static void
network_backward (CpuBackend *cpu, int n)
{
  const GtModelSpec *spec = cpu->spec;
  float **grad = cpu->grad_buffers;
  int at = 0, i;

  gt_cpu_linear_backward (cpu->features, n, spec->features, spec->num_classes,
      cpu->params + spec->fc_weight, cpu->dlogits, cpu->dfeatures,
      cpu->grads + spec->fc_weight, cpu->grads + spec->fc_bias);
  gt_cpu_avgpool_backward (cpu->pool, cpu->dfeatures, n,
      spec->last_h * spec->last_w, spec->features, grad[at]);
  for (i = spec->num_blocks - 1; i >= 0; i--) {
    const float *x = i > 0
        ? cpu->blocks[i - 1].units[cpu->blocks[i - 1].num_units - 1].out
        : (spec->has_maxpool ? cpu->pooled : cpu->stem.out);

    block_backward (cpu, &cpu->blocks[i], x, n, &at);
  }
  if (spec->has_maxpool) {
    int to = (at + 1) % 4;

    gt_cpu_maxpool_backward (cpu->pool, grad[at], n, spec->stem.out_h,
        spec->stem.out_w, spec->stem.out_channels, cpu->argmax, grad[to]);
    at = to;
  }
  /* The input needs no gradient. */
  unit_backward (cpu, &cpu->stem, cpu->input, n, 1, grad[at],
      grad[(at + 1) % 4], NULL, NULL);
}

/* ---- optimiser ---- */

/* torch.optim.SGD: g = grad + wd * w; buf = m * buf + g;
 * w -= lr * (nesterov ? g + m * buf : buf), at the step's lr (in its
 * pending result). Every thread takes its share of every tensor, so that
 * one pass covers the flat buffer. */
GT_CPU_STREAMING static void
sgd_task (void *data, int thread, int num_threads)
{
  CpuBackend *cpu = data;
  const GtTrainerConfig *config = &cpu->config;
  float momentum = config->momentum, lr = cpu->pending_result.lr;
  int i;

  for (i = 0; i < cpu->spec->num_entries; i++) {
    const GtTensorEntry *entry = &cpu->spec->entries[i];
    float decay;
    size_t begin, end, j;

    if (!gt_entry_is_parameter (entry))
      continue;
    decay = gt_entry_decays (entry) || config->decay_norm_and_bias
        ? config->weight_decay
        : 0.f;
    gt_cpu_split (entry->numel, thread, num_threads, &begin, &end);
    for (j = entry->offset + begin; j < entry->offset + end; j++) {
      float g = cpu->grads[j] + decay * cpu->params[j];
      float buf = momentum * cpu->momentum[j] + g;

      cpu->momentum[j] = buf;
      cpu->params[j] -= lr * (config->nesterov ? g + momentum * buf : buf);
    }
  }
}

/* ---- entry points ---- */

static int
cpu_step_begin (
    void *data, const GtBatch *batch, float lr, char *why, size_t why_size)
{
  CpuBackend *cpu = data;
  const GtModelSpec *spec = cpu->spec;
  GtStepResult *result = &cpu->pending_result;
  int n = batch->num_samples;
  double loss_sum, start = gt_seconds_now ();
  int nonfinite;

  (void)why;
  (void)why_size;
  memset (result, 0, sizeof (*result));
  cpu->pending_why[0] = '\0';
  memcpy (cpu->saved_stats, cpu->stats, spec->num_stats * sizeof (float));

  gt_cpu_normalize_input (
      cpu->pool, batch, cpu->config.mean, cpu->config.std, cpu->input);
  network_forward (cpu, n, 1);
  loss_sum = gt_cpu_cross_entropy (cpu->logits, batch->labels, n,
      spec->num_classes, cpu->config.label_smoothing, cpu->dlogits,
      &result->correct_top1, &result->correct_top5);
  result->loss = (float)(loss_sum / n);
  result->lr = lr;
  result->num_samples = n;
  nonfinite = !isfinite (result->loss);
  if (nonfinite && cpu->config.comm == NULL) {
    memcpy (cpu->stats, cpu->saved_stats, spec->num_stats * sizeof (float));
    snprintf (cpu->pending_why, sizeof (cpu->pending_why),
        "the loss is %s: the step was not applied",
        isnan (result->loss) ? "NaN" : "infinite");
    cpu->pending_status = GT_ERROR_NONFINITE;
    return GT_OK;
  }
  if (nonfinite)
    memset (cpu->grads, 0, spec->num_params * sizeof (float));
  else
    network_backward (cpu, n);
  if (cpu->config.comm != NULL) {
    /* DDP: the mean of every rank's gradients, one reduction */
    int status;

    gt_dist_trailer_fill (cpu->grads + spec->num_params, loss_sum,
        result->correct_top1, result->correct_top5, n, nonfinite, 1);
    status =
        gt_dist_reduce_step (cpu->config.comm, cpu->grads, spec->num_params,
            nonfinite, 1, result, cpu->pending_why, sizeof (cpu->pending_why));
    if (status != GT_OK) {
      memcpy (cpu->stats, cpu->saved_stats, spec->num_stats * sizeof (float));
      cpu->pending_status = status;
      return GT_OK;
    }
  }
  gt_cpu_pool_run (cpu->pool, sgd_task, cpu);
  cpu->num_batches_tracked++;
  cpu->pending_status = GT_OK;
  result->busy_seconds = gt_seconds_now () - start;
  return GT_OK;
}

static int
cpu_step_end (void *data, GtStepResult *result, char *why, size_t why_size)
{
  CpuBackend *cpu = data;

  *result = cpu->pending_result;
  if (cpu->pending_status != GT_OK)
    snprintf (why, why_size, "%s", cpu->pending_why);
  return cpu->pending_status;
}

static int
cpu_eval (void *data, const GtBatch *batch, GtEvalTotals *totals, char *why,
    size_t why_size)
{
  CpuBackend *cpu = data;
  int top1, top5;
  double loss_sum;

  (void)why;
  (void)why_size;
  gt_cpu_normalize_input (
      cpu->pool, batch, cpu->config.mean, cpu->config.std, cpu->input);
  network_forward (cpu, batch->num_samples, 0);
  loss_sum = gt_cpu_cross_entropy (cpu->logits, batch->labels,
      batch->num_samples, cpu->spec->num_classes, cpu->config.label_smoothing,
      NULL, &top1, &top5);
  totals->loss_sum += loss_sum;
  totals->num_samples += batch->num_samples;
  totals->correct_top1 += top1;
  totals->correct_top5 += top5;
  return GT_OK;
}

static size_t
cpu_read_logits (void *data, float *out, size_t count)
{
  CpuBackend *cpu = data;
  size_t available = (size_t)cpu->logits_samples * cpu->spec->num_classes;

  if (count > available)
    count = available;
  memcpy (out, cpu->logits, count * sizeof (float));
  return count;
}

static int
cpu_sync_to_host (void *data, GtHostState *state)
{
  CpuBackend *cpu = data;

  state->params = cpu->params;
  state->grads = cpu->grads;
  state->momentum = cpu->momentum;
  state->stats = cpu->stats;
  state->num_batches_tracked = &cpu->num_batches_tracked;
  return GT_OK;
}

static int
cpu_sync_from_host (void *data)
{
  (void)data;
  return GT_OK;
}

/* The peers' reduction, with nothing in it. */
static int
cpu_leave (void *data, char *why, size_t why_size)
{
  CpuBackend *cpu = data;
  GtStepResult ignored = { 0 };
  size_t num_params = cpu->spec->num_params;

  memset (cpu->grads, 0, num_params * sizeof (float));
  gt_dist_trailer_fill (cpu->grads + num_params, 0, 0, 0, 0, 0, 0);
  return gt_dist_reduce_step (
      cpu->config.comm, cpu->grads, num_params, 0, 0, &ignored, why, why_size);
}

const GtBackendOps gt_cpu_backend = {
  "cpu",
  cpu_create,
  cpu_destroy,
  cpu_step_begin,
  cpu_step_end,
  cpu_eval,
  cpu_read_logits,
  cpu_sync_to_host,
  cpu_sync_from_host,
  NULL,
  NULL,
  cpu_leave,
  NULL,
};

int
gt_cpu_describe (GtCpuKernels kernels, GtCpuIsa isa, char *out, size_t size)
{
  char why[256];

  if (gt_cpu_blas_init (why, sizeof (why)) < 0) {
    snprintf (out, size, "no BLAS: %s", why);
    return -1;
  }
  if (kernels == GT_CPU_KERNELS_REFERENCE)
    snprintf (out, size,
        "%s; no direct 3x3 kernels (reference path); streaming passes: %s",
        gt_cpu_blas_describe (), gt_cpu_streaming_isa_name ());
  else
    snprintf (out, size,
        "%s; direct 3x3 convolutions: %s; streaming passes: %s",
        gt_cpu_blas_describe (),
        gt_cpu_direct_conv_kernels_name (gt_cpu_direct_conv_kernels (isa)),
        gt_cpu_streaming_isa_name ());
  return 0;
}
