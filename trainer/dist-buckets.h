/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* dist-buckets.h: how a data-parallel step cuts its flat gradient buffer
 * into buckets that are reduced while the backward pass goes on, as
 * PyTorch DDP's reducer does.
 *
 * The backward pass produces gradients roughly from the end of the buffer
 * to its start (the classifier first, the stem last), so buckets are cut
 * from the end: whole tensors, contiguous in the buffer, each bucket at
 * most the byte budget unless one tensor alone is larger. A bucket is
 * ready once the backward pass has produced every tensor in it and every
 * bucket before it is ready: buckets are handed out in order, since the
 * reductions of every rank must come in the same order. The plan knows
 * nothing of devices; the CUDA backend launches a bucket's reduction when
 * gt_dist_bucket_plan_produced says it is ready. */
#ifndef GT_DIST_BUCKETS_H
#define GT_DIST_BUCKETS_H

#include "model.h"

/* One tensor of the flat buffer, in values. */
typedef struct
{
  size_t offset;
  size_t count;
} GtDistTensor;

typedef struct
{
  size_t offset; /* the bucket's first value in the flat buffer */
  size_t count;  /* values */
  int num_tensors;
} GtDistBucket;

typedef struct
{
  GtDistBucket *buckets; /* in reduction order: from the end of the buffer */
  int num_buckets;
  /* the tensors from the end of the buffer, the bucket of each, and
   * whether this backward pass produced it yet */
  GtDistTensor *tensors;
  int *tensor_bucket;
  unsigned char *produced;
  int num_tensors;
  int *left;      /* per bucket: tensors not produced yet */
  int next_ready; /* buckets [0, next_ready) have been handed out */
} GtDistBucketPlan;

/* Cuts @num_tensors tensors (any order; none may overlap) into buckets of
 * at most @bucket_bytes, counting @element_bytes per value; a gap between
 * two tensors closes a bucket too. 0, or -1 with the reason in @why. */
int gt_dist_bucket_plan_init (GtDistBucketPlan *plan,
    const GtDistTensor *tensors, int num_tensors, size_t element_bytes,
    size_t bucket_bytes, char *why, size_t why_size);
/* The same over the parameter tensors of @spec. */
int gt_dist_bucket_plan_init_model (GtDistBucketPlan *plan,
    const GtModelSpec *spec, size_t element_bytes, size_t bucket_bytes,
    char *why, size_t why_size);
void gt_dist_bucket_plan_clear (GtDistBucketPlan *plan);

/* A new backward pass: nothing produced, nothing handed out. */
void gt_dist_bucket_plan_restart (GtDistBucketPlan *plan);
/* The backward pass produced the gradient of the tensor at @offset.
 * Returns how many buckets became ready, in order from plan->next_ready as
 * it was before the call (which then moves past them); -1 when no tensor
 * of the plan starts at @offset or it was produced already. */
int gt_dist_bucket_plan_produced (GtDistBucketPlan *plan, size_t offset);

#endif /* GT_DIST_BUCKETS_H */
