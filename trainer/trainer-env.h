/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* trainer-env.h: the environment variables the training library and its
 * modules read, every one of them, and the one file that reads them
 * (trainer-env.c).
 *
 * A variable is read when its reader asks, not once at load: a process
 * that changes one between two trainers (tests/trainer/trainer-test.c
 * does) gets the value of the moment, as from getenv, and a read keeps its
 * place relative to the library's own writes.
 *
 * The library writes two variables, each for a library it starts, and
 * only there: HWLOC_COMPONENTS before MPI_Init (dist-mpi.c; a value of
 * the user's stands) and OPENBLAS_CORETYPE around OpenBLAS's reload
 * (cpu/cpu-blas.c; the user's value read here first and put back).
 *
 * A test hook compiled into a test-only build (GT_TEST_HOOKS: the MPI
 * module's GT_TEST_DIST_STOP) reads its own variable and is not listed:
 * nothing installed knows its name. */
#ifndef GT_TRAINER_ENV_H
#define GT_TRAINER_ENV_H

typedef enum
{
  /* gt_trainer_config_apply_env: configuration a caller did not set */
  GT_ENV_CPU_ISA,            /* avx512, avx2, sse: cpu_isa */
  GT_ENV_CPU_NO_DIRECT_CONV, /* set at all: the reference kernels */
  GT_ENV_CUDA_NO_GRAPH,      /* not "0": no CUDA graphs */
  GT_ENV_CUDA_REQUIRE_GRAPH, /* not "0": fail where a graph is refused */
  GT_ENV_CUDA_PROFILE,       /* not "0": time each part of a step */
  /* module-loader.c: a module's file instead of the one beside the
   * library, read when the module is first opened */
  GT_ENV_CUDA_MODULE,
  GT_ENV_MPI_MODULE,
  /* cuda/cuda-nccl.c: NCCL's file instead of libnccl.so.2, read when the
   * CUDA module first opens it */
  GT_ENV_NCCL_LIBRARY,
  /* cpu/cpu-blas.c, once, as OpenBLAS is first opened: not "0" keeps the
   * kernels OpenBLAS chose; OPENBLAS_CORETYPE is the user's own, kept
   * across the reload with the kernels this CPU has */
  GT_ENV_BLAS_KEEP_CORETYPE,
  GT_ENV_OPENBLAS_CORETYPE,
} GtEnvVar;

/* The name of @var ("GT_CPU_ISA"), for messages. */
const char *gt_env_name (GtEnvVar var);

/* The value of @var now, or NULL when it is not set. */
const char *gt_env_get (GtEnvVar var);

/* 1 when @var is set to anything but "0". */
int gt_env_on (GtEnvVar var);

#endif /* GT_TRAINER_ENV_H */
