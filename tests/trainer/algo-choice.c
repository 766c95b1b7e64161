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

/* One case: the candidates gt_algo_choose is given (the workspace is
 * always WORKSPACE), and what it should choose. */
typedef struct
{
  const char *what;
  const GtAlgoCandidate *measured;
  int num_measured;
  const GtAlgoCandidate *predicted;
  int num_predicted;
  int documented_fits;
  int want_deterministic;
  GtAlgoSource source;
  int index; /* means something only for the two lists */
  int gave_up;
} Case;

static void
run_cases (const Case *cases, int count)
{
  int i;

  for (i = 0; i < count; i++) {
    const Case *c = &cases[i];
    GtAlgoChoice got = gt_algo_choose (c->measured, c->num_measured,
        c->predicted, c->num_predicted, c->documented_fits, WORKSPACE,
        c->want_deterministic);
    int ok = got.source == c->source && got.gave_up_determinism == c->gave_up
        && (c->source == GT_ALGO_NONE || c->source == GT_ALGO_DOCUMENTED
            || got.index == c->index);

    CHECK (ok,
        "%s: source %d index %d gave up %d; expected source %d index %d gave "
        "up %d",
        c->what, got.source, got.index, got.gave_up_determinism, c->source,
        c->index, c->gave_up);
    printf ("%s: %s\n", c->what, ok ? "ok" : "wrong");
  }
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
  const Case cases[] = {
    { "fp32, a deterministic algorithm among the predictions", NO_LIST,
        LIST (predicted), 1, 1, GT_ALGO_PREDICTED, 4, 0 },
    { "fp32, a workspace that fits exactly", NO_LIST, LIST (exact_fit), 0, 1,
        GT_ALGO_PREDICTED, 0, 0 },
  };

  run_cases (LIST (cases));
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
  const Case cases[] = {
    { "fp32, none deterministic, the documented one fits", NO_LIST,
        LIST (predicted), 1, 1, GT_ALGO_DOCUMENTED, -1, 0 },
    { "fp32, none deterministic at all: the fastest usable prediction", NO_LIST,
        LIST (predicted), 0, 1, GT_ALGO_PREDICTED, 3, 1 },
    { "fp32, none deterministic at all: a measured one before predicted",
        LIST (measured), LIST (predicted), 0, 1, GT_ALGO_MEASURED, 1, 1 },
    { "fp32, a deterministic measured one beats faster others",
        LIST (measured_deterministic), LIST (predicted), 1, 1, GT_ALGO_MEASURED,
        1, 0 },
    { "fp32, a deterministic prediction beats a measured non-deterministic "
      "one",
        LIST (measured), LIST (measured_deterministic), 0, 1, GT_ALGO_PREDICTED,
        1, 0 },
    { "fp32, nothing usable", LIST (unusable), LIST (unusable), 0, 1,
        GT_ALGO_NONE, -1, 0 },
    { "fp32, no results at all, the documented one fits", NO_LIST, NO_LIST, 1,
        1, GT_ALGO_DOCUMENTED, -1, 0 },
  };

  run_cases (LIST (cases));
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
  const Case cases[] = {
    { "bf16, the fastest measured one", LIST (measured), LIST (predicted), 1, 0,
        GT_ALGO_MEASURED, 2, 0 },
    { "bf16, the search failed: the first prediction", LIST (unusable),
        LIST (predicted), 1, 0, GT_ALGO_PREDICTED, 0, 0 },
    { "bf16, nothing usable but the documented one", LIST (unusable),
        LIST (unusable), 1, 0, GT_ALGO_DOCUMENTED, -1, 0 },
    { "bf16, nothing at all", LIST (unusable), NO_LIST, 0, 0, GT_ALGO_NONE, -1,
        0 },
  };

  run_cases (LIST (cases));
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
