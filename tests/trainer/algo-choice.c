/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* algo-choice.c: the rules by which the CUDA backend picks a convolution
 * algorithm (trainer/cuda/cuda-algo-choice.h), held to account with
 * made-up cuDNN results, so that they are tested where there is no GPU
 * and no CUDA: a deterministic algorithm whenever fp32 has one, the
 * documented one before giving determinism up, and then the fastest one
 * that runs, fits and avoids TF32, with the giving up reported. */
#include "check.h"
#include "cuda/cuda-algo-choice.h"

#include <stdio.h>

#define MiB ((size_t)1 << 20)
#define WORKSPACE (64 * MiB)
#define COUNT(array) ((int)(sizeof (array) / sizeof ((array)[0])))
/* a list of candidates as gt_algo_choose takes it, or none */
#define LIST(array) array, COUNT (array)
#define NO_LIST NULL, 0

/* A made-up cuDNN result: GtAlgoCandidate's fields in order. */
#define CANDIDATE(algo, ran, memory, deterministic, math_ok)                   \
  {                                                                            \
    algo, ran, memory, deterministic, math_ok                                  \
  }
#define FAST_NONDET(algo) CANDIDATE (algo, 1, 1 * MiB, 0, 1)
#define DET(algo) CANDIDATE (algo, 1, 1 * MiB, 1, 1)
#define FAILED_DET(algo) CANDIDATE (algo, 0, 1 * MiB, 1, 1)
#define TOO_BIG_DET(algo) CANDIDATE (algo, 1, 2 * WORKSPACE, 1, 1)
#define TF32_DET(algo) CANDIDATE (algo, 1, 1 * MiB, 1, 0)

static void
expect (const char *what, GtAlgoChoice got, GtAlgoSource source, int index,
    int gave_up)
{
  /* the index means something only for the two lists */
  int ok = got.source == source && got.gave_up_determinism == gave_up
      && (source == GT_ALGO_NONE || source == GT_ALGO_DOCUMENTED
          || got.index == index);

  CHECK (ok,
      "%s: source %d index %d gave up %d; expected source %d index %d gave "
      "up %d",
      what, got.source, got.index, got.gave_up_determinism, source, index,
      gave_up);
  printf ("%s: %s\n", what, ok ? "ok" : "wrong");
}

/* fp32 asks for determinism: a slower deterministic algorithm beats every
 * faster non-deterministic one, and candidates that failed, do not fit or
 * use TF32 never count. */
static void
test_fp32_deterministic (void)
{
  const GtAlgoCandidate predicted[] = { FAST_NONDET (1), FAILED_DET (2),
    TOO_BIG_DET (3), TF32_DET (4), DET (5), DET (6) };
  const GtAlgoCandidate exact_fit[] = { { 7, 1, WORKSPACE, 1, 1 } };

  expect ("fp32, a deterministic algorithm among the predictions",
      gt_algo_choose (NO_LIST, LIST (predicted), 1, WORKSPACE, 1),
      GT_ALGO_PREDICTED, 4, 0);
  expect ("fp32, a workspace that fits exactly",
      gt_algo_choose (NO_LIST, LIST (exact_fit), 0, WORKSPACE, 1),
      GT_ALGO_PREDICTED, 0, 0);
}

/* No deterministic prediction: the documented algorithm first; without it
 * the fastest usable non-deterministic one, measured before predicted,
 * and the choice says determinism was given up. */
static void
test_fp32_fallbacks (void)
{
  const GtAlgoCandidate predicted[] = { FAILED_DET (0), TF32_DET (1),
    TOO_BIG_DET (2), FAST_NONDET (3), FAST_NONDET (4) };
  const GtAlgoCandidate measured[] = { { 5, 1, 2 * WORKSPACE, 0, 1 },
    FAST_NONDET (6) };
  const GtAlgoCandidate measured_deterministic[] = { FAST_NONDET (7), DET (8) };
  const GtAlgoCandidate unusable[] = { FAILED_DET (0), TF32_DET (1),
    TOO_BIG_DET (2), { 3, 0, 0, 0, 1 } };

  expect ("fp32, none deterministic, the documented one fits",
      gt_algo_choose (NO_LIST, LIST (predicted), 1, WORKSPACE, 1),
      GT_ALGO_DOCUMENTED, -1, 0);
  expect ("fp32, none deterministic at all: the fastest usable prediction",
      gt_algo_choose (NO_LIST, LIST (predicted), 0, WORKSPACE, 1),
      GT_ALGO_PREDICTED, 3, 1);
  expect ("fp32, none deterministic at all: a measured one before predicted",
      gt_algo_choose (
          LIST (measured), predicted, COUNT (predicted), 0, WORKSPACE, 1),
      GT_ALGO_MEASURED, 1, 1);
  expect ("fp32, a deterministic measured one beats faster others",
      gt_algo_choose (LIST (measured_deterministic), predicted,
          COUNT (predicted), 1, WORKSPACE, 1),
      GT_ALGO_MEASURED, 1, 0);
  expect ("fp32, a deterministic prediction beats a measured non-"
          "deterministic one",
      gt_algo_choose (LIST (measured), measured_deterministic,
          COUNT (measured_deterministic), 0, WORKSPACE, 1),
      GT_ALGO_PREDICTED, 1, 0);
  expect ("fp32, nothing usable",
      gt_algo_choose (
          LIST (unusable), unusable, COUNT (unusable), 0, WORKSPACE, 1),
      GT_ALGO_NONE, -1, 0);
  expect ("fp32, no results at all, the documented one fits",
      gt_algo_choose (NO_LIST, NO_LIST, 1, WORKSPACE, 1), GT_ALGO_DOCUMENTED,
      -1, 0);
}

/* bf16 does not ask for determinism: the fastest measured one that runs
 * and fits, whatever its determinism; never "gave up". */
static void
test_bf16 (void)
{
  const GtAlgoCandidate measured[] = { FAILED_DET (0), TOO_BIG_DET (1),
    FAST_NONDET (2), DET (3) };
  const GtAlgoCandidate predicted[] = { DET (4), FAST_NONDET (5) };
  const GtAlgoCandidate unusable[] = { FAILED_DET (0), TOO_BIG_DET (1) };

  expect ("bf16, the fastest measured one",
      gt_algo_choose (
          LIST (measured), predicted, COUNT (predicted), 1, WORKSPACE, 0),
      GT_ALGO_MEASURED, 2, 0);
  expect ("bf16, the search failed: the first prediction",
      gt_algo_choose (
          LIST (unusable), predicted, COUNT (predicted), 1, WORKSPACE, 0),
      GT_ALGO_PREDICTED, 0, 0);
  expect ("bf16, nothing usable but the documented one",
      gt_algo_choose (
          LIST (unusable), unusable, COUNT (unusable), 1, WORKSPACE, 0),
      GT_ALGO_DOCUMENTED, -1, 0);
  expect ("bf16, nothing at all",
      gt_algo_choose (LIST (unusable), NULL, 0, 0, WORKSPACE, 0), GT_ALGO_NONE,
      -1, 0);
}

int
main (void)
{
  test_fp32_deterministic ();
  test_fp32_fallbacks ();
  test_bf16 ();
  if (failures) {
    fprintf (stderr, "%d failures\n", failures);
    return 1;
  }
  printf ("all passed\n");
  return 0;
}
