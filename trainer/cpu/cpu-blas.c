/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpu-blas.c: opens OpenBLAS with kernels that match the CPU's features
 * (cpu-blas.h says why). */
#include "cpu-blas.h"
#include "trainer-env.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define OPENBLAS_LIBRARY "libopenblas.so.0"

typedef void (*SgemmFunc) (CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, int,
    int, int, float, const float *, int, const float *, int, float, float *,
    int);

static struct
{
  void *handle;
  SgemmFunc sgemm;
  void (*set_num_threads) (int);
  char *(*get_corename) (void);
  char *(*get_config) (void);
  char core[64];
  /* what describe() writes, whole: the version, core and note at their
   * longest (-Wformat-truncation at -O3) */
  char description[288];
  char error[256];
} blas;

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

/* 3: AVX-512 kernels, 2: AVX2 kernels, 0: older or unknown. */
static int
core_level (const char *core)
{
  static const char *const avx512[] = { "SkylakeX", "Cooperlake",
    "SapphireRapids" };
  static const char *const avx2[] = { "Haswell", "Zen" };
  unsigned i;

  for (i = 0; core && i < sizeof (avx512) / sizeof (avx512[0]); i++)
    if (strcasecmp (core, avx512[i]) == 0)
      return 3;
  for (i = 0; core && i < sizeof (avx2) / sizeof (avx2[0]); i++)
    if (strcasecmp (core, avx2[i]) == 0)
      return 2;
  return 0;
}

const char *
gt_cpu_blas_wanted_core (void)
{
  __builtin_cpu_init ();
  if (__builtin_cpu_supports ("avx512f") && __builtin_cpu_supports ("avx512bw")
      && __builtin_cpu_supports ("avx512vl")
      && __builtin_cpu_supports ("avx512dq"))
    return __builtin_cpu_supports ("avx512bf16") ? "Cooperlake" : "SkylakeX";
  if (__builtin_cpu_supports ("avx2") && __builtin_cpu_supports ("fma"))
    return "Haswell";
  return NULL;
}

int
gt_cpu_blas_core_is_enough (const char *core, const char *wanted)
{
  return wanted == NULL || core_level (core) >= core_level (wanted);
}

/* Opens the library and finds its functions; 0 or -1 with blas.error. */
static int
open_library (void)
{
  const char *core;

  blas.handle = dlopen (OPENBLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (blas.handle == NULL) {
    snprintf (blas.error, sizeof (blas.error), "cannot open %s: %s",
        OPENBLAS_LIBRARY, dlerror ());
    return -1;
  }
  blas.sgemm = (SgemmFunc)dlsym (blas.handle, "cblas_sgemm");
  blas.set_num_threads =
      (void (*) (int))dlsym (blas.handle, "openblas_set_num_threads");
  blas.get_corename =
      (char *(*)(void))dlsym (blas.handle, "openblas_get_corename");
  blas.get_config = (char *(*)(void))dlsym (blas.handle, "openblas_get_config");
  if (blas.sgemm == NULL || blas.set_num_threads == NULL
      || blas.get_corename == NULL || blas.get_config == NULL) {
    snprintf (blas.error, sizeof (blas.error),
        "%s lacks cblas_sgemm or the openblas_* functions: not OpenBLAS?",
        OPENBLAS_LIBRARY);
    dlclose (blas.handle);
    blas.handle = NULL;
    return -1;
  }
  core = blas.get_corename ();
  snprintf (blas.core, sizeof (blas.core), "%s", core ? core : "unknown");
  return 0;
}

/* The version from "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ...". */
static void
describe (const char *note)
{
  const char *config = blas.get_config ();
  char version[32] = "";

  if (config != NULL)
    sscanf (config, "OpenBLAS %31s", version);
  snprintf (blas.description, sizeof (blas.description),
      "OpenBLAS %s, %s kernels%s", version[0] ? version : "(unknown version)",
      blas.core, note);
}

static void
init_once (void)
{
  const char *wanted = gt_cpu_blas_wanted_core (), *user;
  int keep = gt_env_on (GT_ENV_BLAS_KEEP_CORETYPE);
  char first[64], note[160], *previous;

  if (open_library () < 0)
    return;
  if (gt_cpu_blas_core_is_enough (blas.core, wanted) || keep) {
    describe ("");
    return;
  }
  /* A fallback: open it again, told which kernels to use. The library
   * reads OPENBLAS_CORETYPE when it loads; nothing else in the process
   * holds this copy (RTLD_LOCAL, and the trainer does not link it), so
   * closing it unloads it. */
  snprintf (first, sizeof (first), "%s", blas.core);
  user = gt_env_get (GT_ENV_OPENBLAS_CORETYPE);
  previous = user ? strdup (user) : NULL;
  dlclose (blas.handle);
  blas.handle = NULL;
  setenv ("OPENBLAS_CORETYPE", wanted, 1);
  if (open_library () < 0) {
    free (previous);
    return;
  }
  if (previous != NULL)
    setenv ("OPENBLAS_CORETYPE", previous, 1);
  else
    unsetenv ("OPENBLAS_CORETYPE");
  free (previous);
  if (gt_cpu_blas_core_is_enough (blas.core, wanted))
    snprintf (note, sizeof (note),
        " (reloaded: it chose %s kernels, below what this CPU has)", first);
  else
    snprintf (note, sizeof (note),
        " (it chose %s kernels and could not be reloaded with %s ones: "
        "another part of the process holds it)",
        first, wanted);
  describe (note);
}

int
gt_cpu_blas_init (char *why, size_t why_size)
{
  pthread_once (&blas_once, init_once);
  if (blas.handle == NULL) {
    snprintf (why, why_size, "%s", blas.error);
    return -1;
  }
  return 0;
}

void
gt_cpu_sgemm (CBLAS_ORDER order, CBLAS_TRANSPOSE trans_a,
    CBLAS_TRANSPOSE trans_b, int m, int n, int k, float alpha, const float *a,
    int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
  blas.sgemm (
      order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void
gt_cpu_blas_set_num_threads (int num_threads)
{
  blas.set_num_threads (num_threads);
}

const char *
gt_cpu_blas_describe (void)
{
  return blas.description;
}

const char *
gt_cpu_blas_core (void)
{
  return blas.core;
}
