/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* model.h: what a ResNet is made of, independent of where it runs.
 *
 * A GtModelSpec lists the stem, the residual blocks and the classifier with
 * the offsets of their weights in one flat parameter buffer (so that the
 * optimiser is one loop, or one kernel, and an all-reduce one call) and of
 * their running statistics in one flat statistics buffer. Both backends
 * build their layers from it; checkpoints walk its tensor table, which is
 * torchvision's state_dict in torchvision's order.
 *
 * The spec is built for one input size and is the one authority on shapes:
 * every convolution carries its input and output size (the plan), so that
 * neither backend walks the network to work them out.
 *
 * Convolution weights are stored OHWI (output channel, kernel row, kernel
 * column, input channel), the layout NHWC convolutions want on the CPU and
 * in cuDNN; the tensor table converts to and from PyTorch's OIHW.
 */
#ifndef GT_MODEL_H
#define GT_MODEL_H

#include "trainer.h"

typedef struct
{
  int in_channels;
  int out_channels;
  int kernel;
  int stride;
  int padding;
  size_t weight; /* offset in the parameters, OHWI */
  /* the plan: spatial sizes for the spec's input size */
  int in_h, in_w;
  int out_h, out_w;
} GtConvSpec;

typedef struct
{
  int channels;
  size_t weight; /* offsets in the parameters */
  size_t bias;
  size_t mean; /* offsets in the running statistics */
  size_t var;
} GtNormSpec;

/* The main path of a block is num_units convolutions, each followed by
 * its batch-norm: convs[k] and norms[k] are torchvision's conv<k+1> and
 * bn<k+1>. */
#define GT_MAX_BLOCK_UNITS 3

typedef struct
{
  int bottleneck; /* 1x1, 3x3, 1x1 (resnet50/101) or 3x3, 3x3 */
  int stride;     /* on conv2 for bottlenecks (v1.5), on conv1 otherwise */
  int num_units;  /* 3 (bottleneck) or 2 */
  GtConvSpec convs[GT_MAX_BLOCK_UNITS];
  GtNormSpec norms[GT_MAX_BLOCK_UNITS];
  int has_downsample;
  GtConvSpec down_conv;
  GtNormSpec down_norm;
} GtBlockSpec;

typedef enum
{
  GT_ENTRY_CONV_WEIGHT,
  GT_ENTRY_NORM_WEIGHT,
  GT_ENTRY_NORM_BIAS,
  GT_ENTRY_FC_WEIGHT,
  GT_ENTRY_FC_BIAS,
  GT_ENTRY_RUNNING_MEAN,
  GT_ENTRY_RUNNING_VAR,
  GT_ENTRY_NUM_BATCHES_TRACKED,
} GtEntryKind;

typedef struct
{
  char name[64];
  GtEntryKind kind;
  int ndim;
  int64_t shape[4]; /* PyTorch's order */
  size_t numel;
  size_t offset; /* in the parameters, or in the statistics */
} GtTensorEntry;

typedef struct
{
  GtModel model;
  int num_classes;
  int input_channels;
  GtConvSpec stem;
  GtNormSpec stem_norm;
  int has_maxpool; /* 3x3, stride 2, padding 1 after the stem */
  int num_blocks;
  GtBlockSpec *blocks;
  int features; /* channels into the classifier */
  /* The plan for height x width inputs: the max-pool's output (when there
   * is one), the last stage's size, and the most values one sample's
   * largest activation (a convolution's or the max-pool's output) holds. */
  int height, width;
  int pooled_h, pooled_w;
  int last_h, last_w;
  size_t max_activation;
  int max_norm_channels; /* widest batch-norm */
  size_t fc_weight;      /* [num_classes][features] */
  size_t fc_bias;

  size_t num_params; /* floats in the parameter buffer */
  size_t num_stats;  /* floats in the statistics buffer */
  int num_norms;
  int num_entries;
  GtTensorEntry *entries;
} GtModelSpec;

/* Builds the description of @model with @num_classes outputs, planned
 * for @height x @width inputs; 0, or -1 with the reason in @why (an
 * unknown model, no memory, or images too small for the model). */
int gt_model_spec_init (GtModelSpec *spec, GtModel model, int num_classes,
    int height, int width, char *why, size_t why_size);
void gt_model_spec_clear (GtModelSpec *spec);

/* The output size of @conv for an input of @size along one axis. */
static inline int
gt_conv_output_size (const GtConvSpec *conv, int size)
{
  return (size + 2 * conv->padding - conv->kernel) / conv->stride + 1;
}

/* The output size of the stem's max-pool (3x3, stride 2, padding 1). */
static inline int
gt_maxpool_output_size (int size)
{
  return (size + 2 - 3) / 2 + 1;
}

/* The values of @conv's output for @batch_size samples. */
static inline size_t
gt_conv_output_values (const GtConvSpec *conv, int batch_size)
{
  return (size_t)batch_size * conv->out_h * conv->out_w * conv->out_channels;
}

/* Draws the initial weights as torchvision does (Kaiming normal fan-out for
 * convolutions, batch-norm 1 and 0, nn.Linear's uniform for the classifier)
 * and sets the running statistics to mean 0, variance 1. */
void gt_model_init_weights (const GtModelSpec *spec, float *params,
    float *stats, uint64_t seed, int zero_init_residual);

/* 1 when weight decay applies to @entry by default (convolution and
 * classifier weights; not batch-norm parameters or biases). */
int gt_entry_decays (const GtTensorEntry *entry);
int gt_entry_is_parameter (const GtTensorEntry *entry);
const GtTensorEntry *gt_model_find_entry (
    const GtModelSpec *spec, const char *name);

/* Copies @entry between our storage and PyTorch's layout (OHWI <-> OIHW
 * for convolution weights, a plain copy otherwise). */
void gt_entry_to_torch (
    const GtTensorEntry *entry, const float *ours, float *torch_layout);
void gt_entry_from_torch (
    const GtTensorEntry *entry, const float *torch_layout, float *ours);

#endif /* GT_MODEL_H */
