/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* dist-buckets-test.c: the bucket plan of data-parallel steps
 * (trainer/dist-buckets.h): which ranges of the flat gradient buffer form
 * buckets, and when the backward pass makes each ready. Plain logic, run
 * everywhere; the CUDA backend launches its reductions from it. */
#include "check.h"
#include "dist-buckets.h"

#include <stdio.h>
#include <string.h>

static void
check_bucket (const GtDistBucketPlan *plan, int index, size_t offset,
    size_t count, int num_tensors)
{
  const GtDistBucket *bucket = &plan->buckets[index];

  CHECK (bucket->offset == offset && bucket->count == count
          && bucket->num_tensors == num_tensors,
      "bucket %d is (%zu, %zu, %d tensors), expected (%zu, %zu, %d)", index,
      bucket->offset, bucket->count, bucket->num_tensors, offset, count,
      num_tensors);
}

/* Four tensors of 10, 20, 30 and 40 values. */
static const GtDistTensor four_tensors[] = { { 0, 10 }, { 10, 20 }, { 30, 30 },
  { 60, 40 } };

/* @plan of four_tensors, @element_bytes a value, @budget bytes a bucket. */
static void
plan_four (GtDistBucketPlan *plan, size_t element_bytes, size_t budget)
{
  char why[256];

  CHECK (gt_dist_bucket_plan_init (
             plan, four_tensors, 4, element_bytes, budget, why, sizeof (why))
          == 0,
      "%s", why);
}

/* A budget of 50 fp32 values. */
static void
test_cutting (void)
{
  GtDistBucketPlan plan;

  plan_four (&plan, 4, 200);
  /* from the end: 40 alone (70 would be over), 30 + 20, then 10 */
  CHECK (plan.num_buckets == 3, "%d buckets", plan.num_buckets);
  check_bucket (&plan, 0, 60, 40, 1);
  check_bucket (&plan, 1, 10, 50, 2);
  check_bucket (&plan, 2, 0, 10, 1);
  gt_dist_bucket_plan_clear (&plan);

  /* 70 bf16 values in 140 bytes: 40 + 30, then 20 + 10 */
  plan_four (&plan, 2, 140);
  CHECK (plan.num_buckets == 2, "%d buckets", plan.num_buckets);
  check_bucket (&plan, 0, 30, 70, 2);
  check_bucket (&plan, 1, 0, 30, 2);
  gt_dist_bucket_plan_clear (&plan);

  /* a tensor over the budget is a bucket of its own */
  plan_four (&plan, 4, 40);
  CHECK (plan.num_buckets == 4, "%d buckets", plan.num_buckets);
  check_bucket (&plan, 0, 60, 40, 1);
  gt_dist_bucket_plan_clear (&plan);
  printf ("cutting: checked\n");
}

static void
test_gaps_and_errors (void)
{
  /* given out of order; a gap between 20 and 25 */
  const GtDistTensor gapped[] = { { 25, 5 }, { 0, 10 }, { 10, 10 } };
  const GtDistTensor overlapping[] = { { 0, 10 }, { 5, 10 } };
  const GtDistTensor empty[] = { { 0, 0 } };
  GtDistBucketPlan plan;
  char why[256];

  CHECK (gt_dist_bucket_plan_init (&plan, gapped, 3, 4, 1 << 20, why, 256) == 0,
      "%s", why);
  CHECK (plan.num_buckets == 2, "%d buckets", plan.num_buckets);
  check_bucket (&plan, 0, 25, 5, 1);
  check_bucket (&plan, 1, 0, 20, 2);
  gt_dist_bucket_plan_clear (&plan);
  why[0] = '\0';
  CHECK (
      gt_dist_bucket_plan_init (&plan, overlapping, 2, 4, 100, why, 256) == -1
          && strstr (why, "overlaps"),
      "overlap: %s", why);
  CHECK (gt_dist_bucket_plan_init (&plan, empty, 1, 4, 100, why, 256) == -1,
      "an empty tensor was taken");
  CHECK (gt_dist_bucket_plan_init (&plan, gapped, 3, 4, 0, why, 256) == -1,
      "a zero budget was taken");
  printf ("gaps and errors: checked\n");
}

/* Buckets are handed out in order, each once all its tensors and all
 * earlier buckets are done. */
static void
test_ready_order (void)
{
  GtDistBucketPlan plan;

  plan_four (&plan, 4, 200);
  /* the backward pass in buffer order from the end */
  CHECK (gt_dist_bucket_plan_produced (&plan, 60) == 1, "60 readies bucket 0");
  CHECK (gt_dist_bucket_plan_produced (&plan, 10) == 0, "10 readies nothing");
  CHECK (gt_dist_bucket_plan_produced (&plan, 30) == 1, "30 readies bucket 1");
  CHECK (plan.next_ready == 2, "next %d", plan.next_ready);
  CHECK (gt_dist_bucket_plan_produced (&plan, 0) == 1, "0 readies bucket 2");
  CHECK (gt_dist_bucket_plan_produced (&plan, 0) == -1, "0 produced twice");
  CHECK (gt_dist_bucket_plan_produced (&plan, 5) == -1, "5 starts no tensor");

  /* out of order: the last bucket waits for the ones before it */
  gt_dist_bucket_plan_restart (&plan);
  CHECK (plan.next_ready == 0, "restart: next %d", plan.next_ready);
  CHECK (gt_dist_bucket_plan_produced (&plan, 0) == 0, "0 must wait");
  CHECK (gt_dist_bucket_plan_produced (&plan, 60) == 1, "60 readies bucket 0");
  CHECK (gt_dist_bucket_plan_produced (&plan, 30) == 0, "30 readies nothing");
  CHECK (gt_dist_bucket_plan_produced (&plan, 10) == 2, "10 readies 1 and 2");
  CHECK (plan.next_ready == 3, "next %d", plan.next_ready);
  gt_dist_bucket_plan_clear (&plan);
  printf ("ready order: checked\n");
}

/* The parameters of a unit, as its backward pass produces them. */
static int
produce_unit (GtDistBucketPlan *plan, const GtConvSpec *conv,
    const GtNormSpec *norm, int *handed_out)
{
  int a = gt_dist_bucket_plan_produced (plan, norm->weight);
  int b = gt_dist_bucket_plan_produced (plan, norm->bias);
  int c = gt_dist_bucket_plan_produced (plan, conv->weight);

  if (a < 0 || b < 0 || c < 0)
    return -1;
  *handed_out += a + b + c;
  return 0;
}

/* A real model, walked in the order of the backward passes of both
 * backends (cuda-step.cu's network_backward): the classifier, then each
 * block from the last (its last unit, its projection, its other units
 * from the last), then the stem. */
static void
test_model (GtModel model, int size, size_t element_bytes, size_t budget)
{
  GtModelSpec spec;
  GtDistBucketPlan plan;
  char why[256];
  size_t end, bytes;
  int i, k, handed_out = 0, ready_before_stage1 = 0, oversized = 0;

  if (gt_model_spec_init (&spec, model, 1000, size, size, why, sizeof (why))
      < 0) {
    CHECK (0, "%s", why);
    return;
  }
  CHECK (gt_dist_bucket_plan_init_model (
             &plan, &spec, element_bytes, budget, why, sizeof (why))
          == 0,
      "%s", why);
  /* the buckets tile the buffer from its end, within the budget */
  end = spec.num_params;
  for (i = 0; i < plan.num_buckets; i++) {
    const GtDistBucket *bucket = &plan.buckets[i];

    CHECK (bucket->offset + bucket->count == end,
        "bucket %d ends at %zu, not %zu", i, bucket->offset + bucket->count,
        end);
    bytes = bucket->count * element_bytes;
    if (bytes > budget) {
      CHECK (bucket->num_tensors == 1,
          "bucket %d is %zu bytes over %zu with %d tensors", i, bytes, budget,
          bucket->num_tensors);
      oversized++;
    }
    end = bucket->offset;
  }
  CHECK (end == 0, "the buckets stop at %zu", end);

  CHECK (gt_dist_bucket_plan_produced (&plan, spec.fc_weight) >= 0
          && gt_dist_bucket_plan_produced (&plan, spec.fc_bias) >= 0,
      "the classifier");
  handed_out = plan.next_ready;
  for (i = spec.num_blocks - 1; i >= 0; i--) {
    const GtBlockSpec *block = &spec.blocks[i];
    int last = block->num_units - 1;

    if (i == 0)
      ready_before_stage1 = handed_out;
    CHECK (produce_unit (
               &plan, &block->convs[last], &block->norms[last], &handed_out)
            == 0,
        "block %d", i);
    if (block->has_downsample)
      CHECK (produce_unit (
                 &plan, &block->down_conv, &block->down_norm, &handed_out)
              == 0,
          "block %d's projection", i);
    for (k = last - 1; k >= 0; k--)
      CHECK (
          produce_unit (&plan, &block->convs[k], &block->norms[k], &handed_out)
              == 0,
          "block %d unit %d", i, k);
  }
  CHECK (produce_unit (&plan, &spec.stem, &spec.stem_norm, &handed_out) == 0,
      "the stem");
  CHECK (handed_out == plan.num_buckets && plan.next_ready == plan.num_buckets,
      "%d of %d buckets handed out", handed_out, plan.num_buckets);
  /* the point of buckets: most reductions start before the backward pass
   * reaches the first block */
  if (plan.num_buckets > 1)
    CHECK (ready_before_stage1 >= 1, "no bucket ready before the first block");
  printf ("%s at %d, %zu-byte values, %zu-byte buckets: %d buckets (%d of "
          "one tensor over the budget), %d ready before the first block\n",
      gt_model_name (model), size, element_bytes, budget, plan.num_buckets,
      oversized, ready_before_stage1);
  gt_dist_bucket_plan_clear (&plan);
  gt_model_spec_clear (&spec);
}

int
main (void)
{
  test_cutting ();
  test_gaps_and_errors ();
  test_ready_order ();
  test_model (GT_MODEL_RESNET50, 224, 4, 25u << 20);
  test_model (GT_MODEL_RESNET50, 224, 2, 25u << 20);
  test_model (GT_MODEL_RESNET18, 64, 4, 1u << 20);
  test_model (GT_MODEL_RESNET20, 16, 4, 16u << 10);
  /* one bucket for everything */
  test_model (GT_MODEL_RESNET20, 16, 4, (size_t)1 << 40);
  if (failures > 0) {
    fprintf (stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf ("all checked\n");
  return 0;
}
