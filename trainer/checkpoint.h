/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* checkpoint.h: a model's host state as a safetensors file, and back.
 *
 * Below the trainer: it knows the model's spec and its host state, never a
 * GtTrainer. trainer.c hands gt_checkpoint_write what to save and applies
 * what gt_checkpoint_read filled in (gt_trainer_save, gt_trainer_load). */
#ifndef GT_CHECKPOINT_H
#define GT_CHECKPOINT_H

#include "backend.h"
#include "gt-random.h"

typedef struct
{
  char *key;
  char *value;
} GtMetadataEntry;

/* What a checkpoint holds beside the tensors. */
typedef struct
{
  int64_t step;
  GtRandom rng;
  /* the caller's metadata (gt_trainer_set_metadata) */
  const GtMetadataEntry *metadata;
  int num_metadata;
} GtCheckpointHeader;

/* Writes @state (our layouts) to @path under torchvision's names and
 * layouts: with @header a checkpoint (momentum, step, RNG, metadata),
 * without (NULL) the weights alone. GT_OK, or a GtStatus with the reason
 * in @why. */
int gt_checkpoint_write (const char *path, const GtModelSpec *spec,
    const GtHostState *state, const GtCheckpointHeader *header, char *why,
    size_t why_size);

/* What gt_checkpoint_read found in a file, in our layouts, for the trainer
 * to take. */
typedef struct
{
  int full; /* a checkpoint: momentum, step, RNG and metadata are its own */
  float *params;   /* spec->num_params */
  float *momentum; /* spec->num_params, zero for weights alone */
  float *stats;    /* spec->num_stats */
  int64_t num_batches_tracked;
  int64_t step;         /* 0 for weights alone */
  GtRandom rng;         /* when full */
  int64_t samples_seen; /* the metadata's, 0 without */
  /* the caller's metadata (all but "format" and gst_train.*), when full */
  GtMetadataEntry *metadata;
  int num_metadata;
} GtCheckpoint;

/* Reads and checks @path against @spec into @checkpoint (cleared first;
 * free it with gt_checkpoint_clear, whatever the outcome). GT_OK, or a
 * GtStatus with the reason in @why: GT_ERROR_MISMATCH names what does not
 * fit. */
int gt_checkpoint_read (const char *path, const GtModelSpec *spec,
    GtCheckpoint *checkpoint, char *why, size_t why_size);
void gt_checkpoint_clear (GtCheckpoint *checkpoint);

#endif /* GT_CHECKPOINT_H */
