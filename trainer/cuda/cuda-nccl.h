/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cuda-nccl.h: NCCL, opened when a data-parallel CUDA trainer first wants a
 * communicator (cuda-dist.cu) or someone asks which NCCL there is
 * (gt_cuda_nccl_version), never when the module loads. The module is built
 * against nccl.h for its types but does not link libnccl, so a single-GPU
 * run loads and trains where NCCL is missing or too old; only the NCCL
 * reduction fails, saying why.
 *
 * Where NCCL is looked for: the file named by GT_NCCL_LIBRARY (then only
 * there), else libnccl.so.2 as the dynamic linker finds it from the module
 * (its RUNPATH, the CUDA root's lib64, then LD_LIBRARY_PATH and the system
 * cache): a PyTorch wheel's NCCL serves through GT_NCCL_LIBRARY or
 * LD_LIBRARY_PATH. */
#ifndef GT_CUDA_NCCL_H
#define GT_CUDA_NCCL_H

#include <stddef.h>

#ifdef GT_HAVE_NCCL
/* nccl.h declares f() functions, which C reads as unprototyped */
#ifndef __cplusplus
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#endif
#include <nccl.h>
#ifndef __cplusplus
#pragma GCC diagnostic pop
#endif

/* The oldest NCCL the module uses: ncclGetLastError, in every error
 * message, came with 2.13 (ncclAvg and ncclBfloat16 with 2.10, graph
 * capture of collectives with 2.9). */
#define GT_NCCL_MIN_MAJOR 2
#define GT_NCCL_MIN_MINOR 13

/* A member that holds nccl.h's function @name (C++ names the function by
 * its qualified name: the member's own name would hide it). */
#ifdef __cplusplus
#define GT_NCCL_FUNCTION(name) __typeof__ (::name) *name
#else
#define GT_NCCL_FUNCTION(name) __typeof__ (name) *name
#endif

/* The NCCL functions the module calls, resolved from the library, each
 * under its name in nccl.h. */
typedef struct
{
  int version; /* ncclGetVersion's code, NCCL_VERSION (major, minor, patch) */
  char path[1024]; /* the file it came from */
  GT_NCCL_FUNCTION (ncclGetVersion);
  GT_NCCL_FUNCTION (ncclGetErrorString);
  GT_NCCL_FUNCTION (ncclGetLastError);
  GT_NCCL_FUNCTION (ncclGetUniqueId);
  GT_NCCL_FUNCTION (ncclCommInitRank);
  GT_NCCL_FUNCTION (ncclCommGetAsyncError);
  GT_NCCL_FUNCTION (ncclCommAbort);
  GT_NCCL_FUNCTION (ncclCommDestroy);
  GT_NCCL_FUNCTION (ncclAllReduce);
} GtNccl;

#ifdef __cplusplus
extern "C" {
#endif

/* NCCL's functions, the library opened on the first call (later calls
 * answer the same); NULL with the reason in @why: libnccl.so.2 or the file
 * of GT_NCCL_LIBRARY missing (the dynamic linker's message), a function
 * missing from it, or a version older than GT_NCCL_MIN_*. */
__attribute__ ((visibility ("hidden"))) const GtNccl *gt_nccl_open (
    char *why, size_t why_size);

#ifdef __cplusplus
}
#endif
#endif /* GT_HAVE_NCCL */

#ifdef __cplusplus
extern "C" {
#endif

/* GtCudaModule's nccl_version: the version code of the NCCL that
 * gt_nccl_open finds, with its file in @path, or 0 with the reason in @why
 * (also when the module was built without nccl.h). */
__attribute__ ((visibility ("hidden"))) int gt_nccl_version (
    char *path, size_t path_size, char *why, size_t why_size);

#ifdef __cplusplus
}
#endif

#endif /* GT_CUDA_NCCL_H */
