/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cuda-nccl.c: opens NCCL on first need and checks that it is new enough
 * (cuda-nccl.h says where it looks and why it is not linked). */
#define _GNU_SOURCE /* dladdr */
#include "cuda-nccl.h"

#include <stdio.h>

#ifdef GT_HAVE_NCCL
#include "module-loader.h"
#include "trainer-env.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#define NCCL_SONAME "libnccl.so.2"
#define NCCL_ENV_VAR "GT_NCCL_LIBRARY"

static pthread_once_t open_once = PTHREAD_ONCE_INIT;
static GtNccl nccl;
static int nccl_usable;
static char open_error[1536];

/* The major, minor and patch levels of an NCCL_VERSION code: MAJOR*10000 +
 * MINOR*100 + PATCH since 2.9, MAJOR*1000 + MINOR*100 + PATCH before. */
static void
split_version (int code, int *major, int *minor, int *patch)
{
  int wide = code >= 10000;

  *major = code / (wide ? 10000 : 1000);
  *minor = code / 100 % (wide ? 100 : 10);
  *patch = code % 100;
}

/* dlopen()s NCCL from the module, so that the module's RUNPATH is searched
 * (a dlopen from the training library would search the library's; under
 * AddressSanitizer, which intercepts dlopen, neither is); its name in
 * nccl.path. */
static void *
open_library (void)
{
  const char *path = gt_env_get (GT_ENV_NCCL_LIBRARY);
  void *handle;

  if (path != NULL && *path != '\0') {
    snprintf (nccl.path, sizeof (nccl.path), "%s", path);
    return gt_module_open_file (
        GT_ENV_NCCL_LIBRARY, path, "NCCL", open_error, sizeof (open_error));
  }
  snprintf (nccl.path, sizeof (nccl.path), NCCL_SONAME);
  handle = dlopen (NCCL_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL)
    snprintf (open_error, sizeof (open_error),
        "NCCL (" NCCL_SONAME ") cannot be loaded: %s; " NCCL_ENV_VAR
        " may name one, such as PyTorch's nvidia/nccl/lib/" NCCL_SONAME,
        dlerror ());
  return handle;
}

#define RESOLVE(name)                                                          \
  do {                                                                         \
    nccl.name = (__typeof__ (nccl.name))dlsym (handle, #name);                 \
    if (nccl.name == NULL) {                                                   \
      snprintf (open_error, sizeof (open_error),                               \
          "%s is not a usable NCCL: %s", nccl.path, dlerror ());               \
      return;                                                                  \
    }                                                                          \
  } while (0)

/* The library stays open for the life of the process, as the module does;
 * a refused one too: its constructors have run, closing it gains nothing. */
static void
load_nccl (void)
{
  void *handle = open_library ();
  int major, minor, patch;
  Dl_info info;

  if (handle == NULL)
    return;
  RESOLVE (ncclGetVersion);
  /* the file the linker chose, for the messages and the probe */
  if (dladdr ((void *)nccl.ncclGetVersion, &info) != 0
      && info.dli_fname != NULL)
    snprintf (nccl.path, sizeof (nccl.path), "%s", info.dli_fname);
  if (nccl.ncclGetVersion (&nccl.version) != ncclSuccess) {
    snprintf (open_error, sizeof (open_error),
        "NCCL from %s: ncclGetVersion failed", nccl.path);
    return;
  }
  /* before the other functions: an old NCCL lacks some, and its version
   * says more than the first missing name */
  split_version (nccl.version, &major, &minor, &patch);
  if (major < GT_NCCL_MIN_MAJOR
      || (major == GT_NCCL_MIN_MAJOR && minor < GT_NCCL_MIN_MINOR)) {
    snprintf (open_error, sizeof (open_error),
        "NCCL %d.%d.%d from %s is too old: gst-train needs NCCL %d.%d or "
        "later",
        major, minor, patch, nccl.path, GT_NCCL_MIN_MAJOR, GT_NCCL_MIN_MINOR);
    return;
  }
  RESOLVE (ncclGetErrorString);
  RESOLVE (ncclGetLastError);
  RESOLVE (ncclGetUniqueId);
  RESOLVE (ncclCommInitRank);
  RESOLVE (ncclCommGetAsyncError);
  RESOLVE (ncclCommAbort);
  RESOLVE (ncclCommDestroy);
  RESOLVE (ncclAllReduce);
  nccl_usable = 1;
}

const GtNccl *
gt_nccl_open (char *why, size_t why_size)
{
  pthread_once (&open_once, load_nccl);
  if (!nccl_usable && why != NULL && why_size > 0)
    snprintf (why, why_size, "%s", open_error);
  return nccl_usable ? &nccl : NULL;
}

int
gt_nccl_version (char *path, size_t path_size, char *why, size_t why_size)
{
  const GtNccl *found = gt_nccl_open (why, why_size);

  if (found == NULL)
    return 0;
  snprintf (path, path_size, "%s", found->path);
  return found->version;
}

#else /* !GT_HAVE_NCCL */

int
gt_nccl_version (char *path, size_t path_size, char *why, size_t why_size)
{
  (void)path;
  (void)path_size;
  snprintf (why, why_size,
      "this CUDA backend was built without NCCL (nccl.h was not found under "
      "the CUDA root)");
  return 0;
}

#endif
