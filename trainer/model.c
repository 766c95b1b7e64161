/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* model.c: builds the ResNet descriptions of model.h and their initial
 * weights, following torchvision's resnet.py (v1.5: the stride of a
 * bottleneck is on its 3x3) and, for resnet20/32, the CIFAR layout of He et
 * al. 2016 with torchvision's BasicBlock and projection shortcuts. */
#include "model.h"

#include "gt-random.h"

#include <math.h>
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

typedef struct
{
  GtModelSpec *spec;
  int capacity;
  int failed;
} SpecBuilder;

static GtTensorEntry *
add_entry (SpecBuilder *builder, const char *prefix, const char *suffix,
    GtEntryKind kind, int ndim, const int64_t *shape)
{
  GtModelSpec *spec = builder->spec;
  GtTensorEntry *entry;
  int i;

  if (spec->num_entries == builder->capacity) {
    int capacity = builder->capacity ? builder->capacity * 2 : 64;
    GtTensorEntry *entries =
        realloc (spec->entries, capacity * sizeof (GtTensorEntry));

    if (entries == NULL) {
      builder->failed = 1;
      return NULL;
    }
    spec->entries = entries;
    builder->capacity = capacity;
  }
  entry = &spec->entries[spec->num_entries++];
  memset (entry, 0, sizeof (*entry));
  snprintf (entry->name, sizeof (entry->name), "%s%s%s", prefix,
      prefix[0] ? "." : "", suffix);
  entry->kind = kind;
  entry->ndim = ndim;
  entry->numel = 1;
  for (i = 0; i < ndim; i++) {
    entry->shape[i] = shape[i];
    entry->numel *= (size_t)shape[i];
  }
  if (kind == GT_ENTRY_RUNNING_MEAN || kind == GT_ENTRY_RUNNING_VAR) {
    entry->offset = spec->num_stats;
    spec->num_stats += entry->numel;
  } else if (kind != GT_ENTRY_NUM_BATCHES_TRACKED) {
    entry->offset = spec->num_params;
    spec->num_params += entry->numel;
  }
  return entry;
}

static void
add_conv (SpecBuilder *builder, GtConvSpec *conv, const char *prefix,
    int in_channels, int out_channels, int kernel, int stride, int padding)
{
  int64_t shape[4] = { out_channels, in_channels, kernel, kernel };
  GtTensorEntry *entry =
      add_entry (builder, prefix, "weight", GT_ENTRY_CONV_WEIGHT, 4, shape);

  conv->in_channels = in_channels;
  conv->out_channels = out_channels;
  conv->kernel = kernel;
  conv->stride = stride;
  conv->padding = padding;
  conv->weight = entry ? entry->offset : 0;
}

static void
add_norm (
    SpecBuilder *builder, GtNormSpec *norm, const char *prefix, int channels)
{
  int64_t shape[1] = { channels };
  GtTensorEntry *entry;

  norm->channels = channels;
  if ((entry = add_entry (
           builder, prefix, "weight", GT_ENTRY_NORM_WEIGHT, 1, shape)))
    norm->weight = entry->offset;
  if ((entry = add_entry (
           builder, prefix, "bias", GT_ENTRY_NORM_BIAS, 1, shape)))
    norm->bias = entry->offset;
  if ((entry = add_entry (
           builder, prefix, "running_mean", GT_ENTRY_RUNNING_MEAN, 1, shape)))
    norm->mean = entry->offset;
  if ((entry = add_entry (
           builder, prefix, "running_var", GT_ENTRY_RUNNING_VAR, 1, shape)))
    norm->var = entry->offset;
  add_entry (builder, prefix, "num_batches_tracked",
      GT_ENTRY_NUM_BATCHES_TRACKED, 0, NULL);
  builder->spec->num_norms++;
}

static void
add_block (SpecBuilder *builder, GtBlockSpec *block, const char *prefix,
    int bottleneck, int in_channels, int width, int stride)
{
  /* bottleneck: 1x1 to width, 3x3 strided, 1x1 to 4 x width;
   * basic: 3x3 strided to width, 3x3 */
  static const int bottleneck_kernels[GT_MAX_BLOCK_UNITS] = { 1, 3, 1 };
  static const int basic_kernels[GT_MAX_BLOCK_UNITS] = { 3, 3, 0 };
  int expansion = bottleneck ? 4 : 1;
  int out_channels = width * expansion;
  int strided = bottleneck ? 1 : 0;
  const int *kernels = bottleneck ? bottleneck_kernels : basic_kernels;
  int channels = in_channels, k;
  char name[64];

  block->bottleneck = bottleneck;
  block->stride = stride;
  block->num_units = bottleneck ? 3 : 2;
  for (k = 0; k < block->num_units; k++) {
    int last = k == block->num_units - 1;
    int unit_out = last ? out_channels : width;

    snprintf (name, sizeof (name), "%s.conv%d", prefix, k + 1);
    add_conv (builder, &block->convs[k], name, channels, unit_out, kernels[k],
        k == strided ? stride : 1, kernels[k] / 2);
    snprintf (name, sizeof (name), "%s.bn%d", prefix, k + 1);
    add_norm (builder, &block->norms[k], name, unit_out);
    channels = unit_out;
  }
  block->has_downsample = stride != 1 || in_channels != out_channels;
  if (block->has_downsample) {
    snprintf (name, sizeof (name), "%s.downsample.0", prefix);
    add_conv (builder, &block->down_conv, name, in_channels, out_channels, 1,
        stride, 0);
    snprintf (name, sizeof (name), "%s.downsample.1", prefix);
    add_norm (builder, &block->down_norm, name, out_channels);
  }
}

/* Sets @conv's input size and works out its output size; 0 when the
 * output is empty. */
static int
plan_conv (GtModelSpec *spec, GtConvSpec *conv, int in_h, int in_w)
{
  size_t values;

  conv->in_h = in_h;
  conv->in_w = in_w;
  conv->out_h = gt_conv_output_size (conv, in_h);
  conv->out_w = gt_conv_output_size (conv, in_w);
  if (conv->out_h < 1 || conv->out_w < 1)
    return 0;
  values = gt_conv_output_values (conv, 1);
  if (values > spec->max_activation)
    spec->max_activation = values;
  return 1;
}

/* The plan: every convolution's sizes for @height x @width inputs, the
 * last stage's size and the largest activation. 0 when the images are too
 * small for the model. */
static int
plan_shapes (GtModelSpec *spec, int height, int width)
{
  int h, w, i, k;

  spec->height = height;
  spec->width = width;
  if (!plan_conv (spec, &spec->stem, height, width))
    return 0;
  h = spec->stem.out_h;
  w = spec->stem.out_w;
  if (spec->has_maxpool) {
    size_t values;

    h = spec->pooled_h = gt_maxpool_output_size (h);
    w = spec->pooled_w = gt_maxpool_output_size (w);
    values = (size_t)h * w * spec->stem.out_channels;
    if (values > spec->max_activation)
      spec->max_activation = values;
  }
  for (i = 0; i < spec->num_blocks; i++) {
    GtBlockSpec *block = &spec->blocks[i];

    if (block->has_downsample && !plan_conv (spec, &block->down_conv, h, w))
      return 0;
    for (k = 0; k < block->num_units; k++) {
      if (!plan_conv (spec, &block->convs[k], h, w))
        return 0;
      h = block->convs[k].out_h;
      w = block->convs[k].out_w;
    }
  }
  spec->last_h = h;
  spec->last_w = w;
  for (i = 0; i < spec->num_entries; i++) {
    const GtTensorEntry *entry = &spec->entries[i];

    if (entry->kind == GT_ENTRY_NORM_WEIGHT
        && entry->shape[0] > spec->max_norm_channels)
      spec->max_norm_channels = (int)entry->shape[0];
  }
  return 1;
}

int
gt_model_spec_init (GtModelSpec *spec, GtModel model, int num_classes,
    int height, int width, char *why, size_t why_size)
{
  static const int imagenet_depths[4][4] = {
    { 2, 2, 2, 2 },  /* resnet18 */
    { 3, 4, 6, 3 },  /* resnet34 */
    { 3, 4, 6, 3 },  /* resnet50 */
    { 3, 4, 23, 3 }, /* resnet101 */
  };
  SpecBuilder builder = { spec, 0, 0 };
  const int *depths;
  int num_stages, stage_width, bottleneck, cifar, channels, stage, i;
  int cifar_depths[3];
  int64_t fc_shape[2];
  GtTensorEntry *entry;

  memset (spec, 0, sizeof (*spec));
  if (num_classes < 1 || num_classes > (1 << 20)) {
    snprintf (
        why, why_size, "num-classes %d is outside 1..%d", num_classes, 1 << 20);
    return -1;
  }
  switch (model) {
    case GT_MODEL_RESNET18:
    case GT_MODEL_RESNET34:
    case GT_MODEL_RESNET50:
    case GT_MODEL_RESNET101:
      depths = imagenet_depths[model - GT_MODEL_RESNET18];
      num_stages = 4;
      stage_width = 64;
      bottleneck = model >= GT_MODEL_RESNET50;
      cifar = 0;
      break;
    case GT_MODEL_RESNET20:
    case GT_MODEL_RESNET32:
      for (i = 0; i < 3; i++)
        cifar_depths[i] = model == GT_MODEL_RESNET20 ? 3 : 5;
      depths = cifar_depths;
      num_stages = 3;
      stage_width = 16;
      bottleneck = 0;
      cifar = 1;
      break;
    default:
      snprintf (why, why_size, "unknown model %d", (int)model);
      return -1;
  }

  spec->model = model;
  spec->num_classes = num_classes;
  spec->input_channels = 3;
  if (cifar) {
    add_conv (&builder, &spec->stem, "conv1", 3, stage_width, 3, 1, 1);
    spec->has_maxpool = 0;
  } else {
    add_conv (&builder, &spec->stem, "conv1", 3, stage_width, 7, 2, 3);
    spec->has_maxpool = 1;
  }
  add_norm (&builder, &spec->stem_norm, "bn1", stage_width);

  for (stage = 0; stage < num_stages; stage++)
    spec->num_blocks += depths[stage];
  spec->blocks = calloc (spec->num_blocks, sizeof (GtBlockSpec));
  if (spec->blocks == NULL)
    builder.failed = 1;

  channels = stage_width;
  for (stage = 0, i = 0; stage < num_stages && !builder.failed; stage++) {
    int block_width = stage_width << stage;
    int block;

    for (block = 0; block < depths[stage]; block++, i++) {
      char prefix[32];

      snprintf (prefix, sizeof (prefix), "layer%d.%d", stage + 1, block);
      add_block (&builder, &spec->blocks[i], prefix, bottleneck, channels,
          block_width, block == 0 && stage > 0 ? 2 : 1);
      channels = block_width * (bottleneck ? 4 : 1);
    }
  }

  spec->features = channels;
  fc_shape[0] = num_classes;
  fc_shape[1] = channels;
  if ((entry = add_entry (
           &builder, "fc", "weight", GT_ENTRY_FC_WEIGHT, 2, fc_shape)))
    spec->fc_weight = entry->offset;
  if ((entry = add_entry (
           &builder, "fc", "bias", GT_ENTRY_FC_BIAS, 1, fc_shape)))
    spec->fc_bias = entry->offset;

  if (builder.failed) {
    gt_model_spec_clear (spec);
    snprintf (
        why, why_size, "out of memory describing %s", gt_model_name (model));
    return -1;
  }
  if (!plan_shapes (spec, height, width)) {
    gt_model_spec_clear (spec);
    snprintf (why, why_size, "%dx%d images are too small for %s", width, height,
        gt_model_name (model));
    return -1;
  }
  return 0;
}

void
gt_model_spec_clear (GtModelSpec *spec)
{
  free (spec->blocks);
  free (spec->entries);
  memset (spec, 0, sizeof (*spec));
}

void
gt_model_init_weights (const GtModelSpec *spec, float *params, float *stats,
    uint64_t seed, int zero_init_residual)
{
  GtRandom rng;
  int i;

  gt_random_init (&rng, seed, 0);
  for (i = 0; i < spec->num_entries; i++) {
    const GtTensorEntry *entry = &spec->entries[i];
    float *values = params + entry->offset;
    size_t j;

    switch (entry->kind) {
      case GT_ENTRY_CONV_WEIGHT: {
        /* kaiming_normal_(mode="fan_out", nonlinearity="relu") */
        double fan_out =
            (double)entry->shape[0] * entry->shape[2] * entry->shape[3];
        double std = sqrt (2.0 / fan_out);

        for (j = 0; j < entry->numel; j++)
          values[j] = (float)(std * gt_random_normal (&rng));
        break;
      }
      case GT_ENTRY_NORM_WEIGHT: {
        for (j = 0; j < entry->numel; j++)
          values[j] = 1.f;
        break;
      }
      case GT_ENTRY_NORM_BIAS:
        memset (values, 0, entry->numel * sizeof (float));
        break;
      case GT_ENTRY_FC_WEIGHT:
      case GT_ENTRY_FC_BIAS: {
        /* nn.Linear: kaiming_uniform_(a=sqrt(5)) for the weight and
         * U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the bias, the same bound */
        double bound = 1.0 / sqrt ((double)spec->features);

        for (j = 0; j < entry->numel; j++)
          values[j] = (float)((2.0 * gt_random_double (&rng) - 1.0) * bound);
        break;
      }
      case GT_ENTRY_RUNNING_MEAN:
        memset (stats + entry->offset, 0, entry->numel * sizeof (float));
        break;
      case GT_ENTRY_RUNNING_VAR:
        for (j = 0; j < entry->numel; j++)
          stats[entry->offset + j] = 1.f;
        break;
      case GT_ENTRY_NUM_BATCHES_TRACKED:
        break;
    }
  }

  /* Each residual branch then starts as zero and each block as identity. */
  for (i = 0; zero_init_residual && i < spec->num_blocks; i++) {
    const GtBlockSpec *block = &spec->blocks[i];
    const GtNormSpec *last = &block->norms[block->num_units - 1];

    memset (params + last->weight, 0, last->channels * sizeof (float));
  }
}

int
gt_entry_decays (const GtTensorEntry *entry)
{
  return entry->kind == GT_ENTRY_CONV_WEIGHT
      || entry->kind == GT_ENTRY_FC_WEIGHT;
}

int
gt_entry_is_parameter (const GtTensorEntry *entry)
{
  return entry->kind != GT_ENTRY_RUNNING_MEAN
      && entry->kind != GT_ENTRY_RUNNING_VAR
      && entry->kind != GT_ENTRY_NUM_BATCHES_TRACKED;
}

const GtTensorEntry *
gt_model_find_entry (const GtModelSpec *spec, const char *name)
{
  int i;

  for (i = 0; i < spec->num_entries; i++)
    if (strcmp (spec->entries[i].name, name) == 0)
      return &spec->entries[i];
  return NULL;
}

/* Copies a convolution weight between OHWI (ours) and OIHW (PyTorch's),
 * in the direction @to_torch says; other tensors are the same either way. */
static void
entry_reorder (
    const GtTensorEntry *entry, const float *from, float *to, int to_torch)
{
  size_t o, i, k, out_c, in_c, taps;

  if (entry->kind != GT_ENTRY_CONV_WEIGHT) {
    memcpy (to, from, entry->numel * sizeof (float));
    return;
  }
  out_c = entry->shape[0];
  in_c = entry->shape[1];
  taps = entry->shape[2] * entry->shape[3];
  for (o = 0; o < out_c; o++)
    for (k = 0; k < taps; k++)
      for (i = 0; i < in_c; i++) {
        size_t ours = (o * taps + k) * in_c + i;
        size_t torch_index = (o * in_c + i) * taps + k;

        if (to_torch)
          to[torch_index] = from[ours];
        else
          to[ours] = from[torch_index];
      }
}

void
gt_entry_to_torch (
    const GtTensorEntry *entry, const float *ours, float *torch_layout)
{
  entry_reorder (entry, ours, torch_layout, 1);
}

void
gt_entry_from_torch (
    const GtTensorEntry *entry, const float *torch_layout, float *ours)
{
  entry_reorder (entry, torch_layout, ours, 0);
}
