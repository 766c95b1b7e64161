/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* dist-buckets.c: the bucket plan of dist-buckets.h. */
#include "dist-buckets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
by_offset_descending (const void *a, const void *b)
{
  const GtDistTensor *x = a, *y = b;

  return x->offset < y->offset ? 1 : x->offset > y->offset ? -1 : 0;
}

int
gt_dist_bucket_plan_init (GtDistBucketPlan *plan, const GtDistTensor *tensors,
    int num_tensors, size_t element_bytes, size_t bucket_bytes, char *why,
    size_t why_size)
{
  GtDistBucket *bucket = NULL;
  int i;

  memset (plan, 0, sizeof (*plan));
  if (num_tensors < 1 || element_bytes == 0 || bucket_bytes == 0) {
    snprintf (why, why_size,
        "a bucket plan needs tensors, a value size and a byte budget");
    return -1;
  }
  plan->tensors = malloc (num_tensors * sizeof (GtDistTensor));
  plan->tensor_bucket = malloc (num_tensors * sizeof (int));
  plan->produced = calloc (num_tensors, 1);
  /* at most one bucket per tensor */
  plan->buckets = calloc (num_tensors, sizeof (GtDistBucket));
  plan->left = calloc (num_tensors, sizeof (int));
  if (!plan->tensors || !plan->tensor_bucket || !plan->produced
      || !plan->buckets || !plan->left) {
    gt_dist_bucket_plan_clear (plan);
    snprintf (why, why_size, "out of memory");
    return -1;
  }
  memcpy (plan->tensors, tensors, num_tensors * sizeof (GtDistTensor));
  qsort (
      plan->tensors, num_tensors, sizeof (GtDistTensor), by_offset_descending);
  plan->num_tensors = num_tensors;
  for (i = 0; i < num_tensors; i++) {
    const GtDistTensor *tensor = &plan->tensors[i];

    if (tensor->count == 0
        || (i > 0
            && tensor->offset + tensor->count > plan->tensors[i - 1].offset)) {
      snprintf (why, why_size,
          "tensor at %zu (%zu values) is empty or overlaps the next",
          tensor->offset, tensor->count);
      gt_dist_bucket_plan_clear (plan);
      return -1;
    }
    /* walking down the buffer: a new bucket at a gap, or when this tensor
     * would take the open one over its budget */
    if (bucket == NULL || tensor->offset + tensor->count != bucket->offset
        || (bucket->count + tensor->count) * element_bytes > bucket_bytes)
      bucket = &plan->buckets[plan->num_buckets++];
    bucket->offset = tensor->offset;
    bucket->count += tensor->count;
    bucket->num_tensors++;
    plan->tensor_bucket[i] = plan->num_buckets - 1;
  }
  gt_dist_bucket_plan_restart (plan);
  return 0;
}

int
gt_dist_bucket_plan_init_model (GtDistBucketPlan *plan, const GtModelSpec *spec,
    size_t element_bytes, size_t bucket_bytes, char *why, size_t why_size)
{
  GtDistTensor *tensors = malloc (spec->num_entries * sizeof (GtDistTensor));
  int count = 0, i, status;

  if (tensors == NULL) {
    snprintf (why, why_size, "out of memory");
    return -1;
  }
  for (i = 0; i < spec->num_entries; i++)
    if (gt_entry_is_parameter (&spec->entries[i])) {
      tensors[count].offset = spec->entries[i].offset;
      tensors[count].count = spec->entries[i].numel;
      count++;
    }
  status = gt_dist_bucket_plan_init (
      plan, tensors, count, element_bytes, bucket_bytes, why, why_size);
  free (tensors);
  return status;
}

void
gt_dist_bucket_plan_clear (GtDistBucketPlan *plan)
{
  free (plan->buckets);
  free (plan->tensors);
  free (plan->tensor_bucket);
  free (plan->produced);
  free (plan->left);
  memset (plan, 0, sizeof (*plan));
}

void
gt_dist_bucket_plan_restart (GtDistBucketPlan *plan)
{
  int i;

  memset (plan->produced, 0, plan->num_tensors);
  for (i = 0; i < plan->num_buckets; i++)
    plan->left[i] = plan->buckets[i].num_tensors;
  plan->next_ready = 0;
}

int
gt_dist_bucket_plan_produced (GtDistBucketPlan *plan, size_t offset)
{
  int low = 0, high = plan->num_tensors - 1, ready = 0;

  /* the tensors are sorted by offset, largest first */
  while (low <= high) {
    int middle = low + (high - low) / 2;
    size_t at = plan->tensors[middle].offset;

    if (at == offset) {
      if (plan->produced[middle])
        return -1;
      plan->produced[middle] = 1;
      plan->left[plan->tensor_bucket[middle]]--;
      while (plan->next_ready < plan->num_buckets
          && plan->left[plan->next_ready] == 0) {
        plan->next_ready++;
        ready++;
      }
      return ready;
    }
    if (at > offset)
      low = middle + 1;
    else
      high = middle - 1;
  }
  return -1;
}
