/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpu-blas-test.c: the CPU backend's BLAS runs kernels that match the
 * CPU's features (trainer/cpu/cpu-blas.h). On a CPU with AVX2 or AVX-512,
 * fails when the kernels in use are older ones; with --expect-reload (run
 * with OPENBLAS_CORETYPE=Prescott, OpenBLAS's fallback for CPU models it
 * does not know), fails unless the backend noticed and reloaded it. A
 * CPU trainer's first step then runs on those kernels. The batch-norm and
 * other streaming passes must run the widest vector unit too. */
#include "check.h"
#include "cpu-blas.h"
#include "trainer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
main (int argc, char **argv)
{
  int expect_reload = argc > 1 && strcmp (argv[1], "--expect-reload") == 0;
  const char *wanted = gt_cpu_blas_wanted_core ();
  char why[512], text[512];

  CHECK (gt_cpu_blas_init (why, sizeof (why)) == 0, "%s", why);
  CHECK (gt_cpu_describe (
             GT_CPU_KERNELS_FAST, GT_CPU_ISA_AUTO, text, sizeof (text))
          == 0,
      "%s", text);
  printf ("CPU features call for %s kernels; in use: %s\n",
      wanted ? wanted : "(no AVX2: OpenBLAS's own choice)", text);
  CHECK (gt_cpu_blas_core_is_enough (gt_cpu_blas_core (), wanted),
      "OpenBLAS runs %s kernels on a CPU with %s", gt_cpu_blas_core (), wanted);
  /* the batch-norm, add and SGD passes: built for the CPU's vector unit */
  __builtin_cpu_init ();
  if (__builtin_cpu_supports ("avx512f") && __builtin_cpu_supports ("avx512bw")
      && __builtin_cpu_supports ("avx512vl")
      && __builtin_cpu_supports ("avx512dq"))
    CHECK (strstr (text, "streaming passes: avx512") != NULL,
        "an AVX-512 CPU runs older streaming passes: %s", text);
  else if (__builtin_cpu_supports ("avx2") && __builtin_cpu_supports ("fma"))
    CHECK (strstr (text, "streaming passes: avx2") != NULL,
        "an AVX2 CPU runs pre-AVX streaming passes: %s", text);
  /* the classification itself, whatever this CPU is */
  CHECK (!gt_cpu_blas_core_is_enough ("Prescott", "Haswell"), "Prescott");
  CHECK (!gt_cpu_blas_core_is_enough ("Sandybridge", "Haswell"), "AVX only");
  CHECK (!gt_cpu_blas_core_is_enough ("Haswell", "SkylakeX"), "AVX2 only");
  CHECK (gt_cpu_blas_core_is_enough ("Zen", "Haswell"), "Zen");
  CHECK (gt_cpu_blas_core_is_enough ("COOPERLAKE", "SkylakeX"), "case");
  CHECK (gt_cpu_blas_core_is_enough ("Prescott", NULL), "no AVX2 CPU");
  if (expect_reload) {
    if (wanted == NULL) {
      printf ("SKIP: this CPU has no AVX2: Prescott kernels are its own\n");
      return 77;
    }
    CHECK (strstr (text, "reloaded: it chose Prescott") != NULL,
        "with OPENBLAS_CORETYPE=Prescott: %s", text);
  }
  {
    /* a step on those kernels */
    GtTrainerConfig config;
    GtTrainer *trainer;
    GtStepResult result;
    uint8_t images[4 * 8 * 8 * 3];
    int32_t labels[4] = { 0, 1, 2, 3 };
    GtBatch batch = { images, labels, 4, 8, 8, 3, 0, 0 };

    memset (images, 90, sizeof (images));
    gt_trainer_config_init (&config);
    config.model = GT_MODEL_RESNET20;
    config.num_classes = 4;
    config.height = config.width = 8;
    config.batch_size = 4;
    trainer = gt_trainer_new (&config, why, sizeof (why));
    CHECK (trainer != NULL, "%s", why);
    if (trainer) {
      CHECK (gt_trainer_step (trainer, &batch, &result) == GT_OK, "%s",
          gt_trainer_error (trainer));
      gt_trainer_free (trainer);
    }
  }
  return failures ? 1 : 0;
}
