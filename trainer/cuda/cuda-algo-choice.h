/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cuda-algo-choice.h: which convolution algorithm cuda-cudnn.cu takes for a
 * direction, decided over plain numbers rather than cuDNN's types, so that
 * a test on a machine without a GPU or CUDA (tests/trainer/algo-choice.c)
 * can hold the rules to account with made-up results.
 *
 * The rules, in order: the fastest measured candidate that qualifies, the
 * heuristics' first one that qualifies, the algorithm cuDNN documents as
 * deterministic when it takes the shape; and when fp32 asks for
 * determinism and none of those exists, the fastest candidate that runs
 * and fits, measured first, then predicted: slower to give up bit-exact
 * reproducibility than to stop training, but said once (cuda-cudnn.cu
 * warns and counts it). Qualifies: it ran, fits the workspace, has a math
 * type the precision accepts (no TF32 in fp32) and, where determinism is
 * asked for, is deterministic. */
#ifndef GT_CUDA_ALGO_CHOICE_H
#define GT_CUDA_ALGO_CHOICE_H

#include <stddef.h>

/* One result of cuDNN's search or heuristics, reduced to what decides. */
typedef struct
{
  int algo;          /* cuDNN's algorithm number */
  int ran;           /* its status was CUDNN_STATUS_SUCCESS */
  size_t memory;     /* the workspace it needs, in bytes */
  int deterministic; /* cuDNN says CUDNN_DETERMINISTIC */
  int math_ok;       /* its math type suits the precision */
} GtAlgoCandidate;

typedef enum
{
  GT_ALGO_NONE,       /* nothing fits: the shape cannot be planned */
  GT_ALGO_MEASURED,   /* from the measured list, at index */
  GT_ALGO_PREDICTED,  /* from the heuristics' list, at index */
  GT_ALGO_DOCUMENTED, /* the documented deterministic algorithm */
} GtAlgoSource;

typedef struct
{
  GtAlgoSource source;
  int index;
  /* determinism was asked for and could not be had */
  int gave_up_determinism;
} GtAlgoChoice;

/* The index of the first candidate of @list that runs, fits in
 * @workspace_bytes and has an acceptable math type (and is deterministic
 * when @need_deterministic), or -1. The lists are sorted fastest first. */
static inline int
gt_algo_first_usable (const GtAlgoCandidate *list, int count,
    size_t workspace_bytes, int need_deterministic)
{
  int i;

  for (i = 0; list != NULL && i < count; i++)
    if (list[i].ran && list[i].memory <= workspace_bytes && list[i].math_ok
        && (!need_deterministic || list[i].deterministic))
      return i;
  return -1;
}

/* The choice for one direction by the rules above. @measured may be empty
 * (fp32 does not measure); @documented_fits: the documented deterministic
 * algorithm takes the shape within the workspace. */
static inline GtAlgoChoice
gt_algo_choose (const GtAlgoCandidate *measured, int num_measured,
    const GtAlgoCandidate *predicted, int num_predicted, int documented_fits,
    size_t workspace_bytes, int need_deterministic)
{
  GtAlgoChoice choice = { GT_ALGO_NONE, -1, 0 };

  choice.index = gt_algo_first_usable (
      measured, num_measured, workspace_bytes, need_deterministic);
  if (choice.index >= 0) {
    choice.source = GT_ALGO_MEASURED;
    return choice;
  }
  choice.index = gt_algo_first_usable (
      predicted, num_predicted, workspace_bytes, need_deterministic);
  if (choice.index >= 0) {
    choice.source = GT_ALGO_PREDICTED;
    return choice;
  }
  if (documented_fits) {
    choice.source = GT_ALGO_DOCUMENTED;
    return choice;
  }
  if (!need_deterministic)
    return choice;
  choice.gave_up_determinism = 1;
  choice.index =
      gt_algo_first_usable (measured, num_measured, workspace_bytes, 0);
  if (choice.index >= 0) {
    choice.source = GT_ALGO_MEASURED;
    return choice;
  }
  choice.index =
      gt_algo_first_usable (predicted, num_predicted, workspace_bytes, 0);
  if (choice.index >= 0) {
    choice.source = GT_ALGO_PREDICTED;
    return choice;
  }
  choice.gave_up_determinism = 0;
  return choice;
}

#endif /* GT_CUDA_ALGO_CHOICE_H */
