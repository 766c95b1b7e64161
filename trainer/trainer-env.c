/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* trainer-env.c: the one place the training library and its modules read
 * the environment (trainer-env.h says which variables, and when). */
#include "trainer-env.h"

#include <stdlib.h>
#include <string.h>

static const char *const names[] = {
  [GT_ENV_CPU_ISA] = "GT_CPU_ISA",
  [GT_ENV_CPU_NO_DIRECT_CONV] = "GT_CPU_NO_DIRECT_CONV",
  [GT_ENV_CUDA_NO_GRAPH] = "GT_CUDA_NO_GRAPH",
  [GT_ENV_CUDA_REQUIRE_GRAPH] = "GT_CUDA_REQUIRE_GRAPH",
  [GT_ENV_CUDA_PROFILE] = "GT_CUDA_PROFILE",
  [GT_ENV_CUDA_MODULE] = "GT_CUDA_MODULE",
  [GT_ENV_MPI_MODULE] = "GT_MPI_MODULE",
  [GT_ENV_NCCL_LIBRARY] = "GT_NCCL_LIBRARY",
  [GT_ENV_BLAS_KEEP_CORETYPE] = "GT_BLAS_KEEP_CORETYPE",
  [GT_ENV_OPENBLAS_CORETYPE] = "OPENBLAS_CORETYPE",
};

const char *
gt_env_name (GtEnvVar var)
{
  return names[var];
}

const char *
gt_env_get (GtEnvVar var)
{
  return getenv (names[var]);
}

int
gt_env_on (GtEnvVar var)
{
  const char *value = gt_env_get (var);

  return value != NULL && strcmp (value, "0") != 0;
}
