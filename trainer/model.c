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
  int expansion = bottleneck ? 4 : 1;
  int out_channels = width * expansion;
  char name[64];

  block->bottleneck = bottleneck;
  block->stride = stride;
  if (bottleneck) {
    snprintf (name, sizeof (name), "%s.conv1", prefix);
    add_conv (builder, &block->conv1, name, in_channels, width, 1, 1, 0);
    snprintf (name, sizeof (name), "%s.bn1", prefix);
    add_norm (builder, &block->norm1, name, width);
    snprintf (name, sizeof (name), "%s.conv2", prefix);
    add_conv (builder, &block->conv2, name, width, width, 3, stride, 1);
    snprintf (name, sizeof (name), "%s.bn2", prefix);
    add_norm (builder, &block->norm2, name, width);
    snprintf (name, sizeof (name), "%s.conv3", prefix);
    add_conv (builder, &block->conv3, name, width, out_channels, 1, 1, 0);
    snprintf (name, sizeof (name), "%s.bn3", prefix);
    add_norm (builder, &block->norm3, name, out_channels);
  } else {
    snprintf (name, sizeof (name), "%s.conv1", prefix);
    add_conv (builder, &block->conv1, name, in_channels, width, 3, stride, 1);
    snprintf (name, sizeof (name), "%s.bn1", prefix);
    add_norm (builder, &block->norm1, name, width);
    snprintf (name, sizeof (name), "%s.conv2", prefix);
    add_conv (builder, &block->conv2, name, width, width, 3, 1, 1);
    snprintf (name, sizeof (name), "%s.bn2", prefix);
    add_norm (builder, &block->norm2, name, width);
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

int
gt_model_spec_init (GtModelSpec *spec, GtModel model, int num_classes,
    char *why, size_t why_size)
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
    int width = stage_width << stage;
    int block;

    for (block = 0; block < depths[stage]; block++, i++) {
      char prefix[32];

      snprintf (prefix, sizeof (prefix), "layer%d.%d", stage + 1, block);
      add_block (&builder, &spec->blocks[i], prefix, bottleneck, channels,
          width, block == 0 && stage > 0 ? 2 : 1);
      channels = width * (bottleneck ? 4 : 1);
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
  return 0;
}

void
gt_model_spec_clear (GtModelSpec *spec)
{
  free (spec->blocks);
  free (spec->entries);
  memset (spec, 0, sizeof (*spec));
}

static int
conv_output (const GtConvSpec *conv, int size)
{
  return (size + 2 * conv->padding - conv->kernel) / conv->stride + 1;
}

void
gt_model_output_size (const GtModelSpec *spec, int height, int width,
    int *out_height, int *out_width)
{
  int i;

  height = conv_output (&spec->stem, height);
  width = conv_output (&spec->stem, width);
  if (spec->has_maxpool) {
    height = gt_maxpool_output_size (height);
    width = gt_maxpool_output_size (width);
  }
  /* only the strided convolution of a block changes the size */
  for (i = 0; i < spec->num_blocks; i++) {
    const GtConvSpec *strided = spec->blocks[i].bottleneck
        ? &spec->blocks[i].conv2
        : &spec->blocks[i].conv1;

    height = conv_output (strided, height);
    width = conv_output (strided, width);
  }
  *out_height = height;
  *out_width = width;
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
    const GtNormSpec *last = block->bottleneck ? &block->norm3 : &block->norm2;

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
