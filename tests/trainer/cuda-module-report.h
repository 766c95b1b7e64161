/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cuda-module-report.h: what the GPU tests (cuda-parity.c, parity.c) ask
 * the CUDA backend module directly, because trainer.h has no call for it:
 * whether cuDNN had to give up determinism in fp32. The test finds the
 * module the library loaded and reads its interface (cuda-module.h).
 * The including file defines _GNU_SOURCE before its first include
 * (dl_iterate_phdr); GT_HAVE_CUDA_BACKEND and GT_CUDA_MODULE_FILE come
 * from tests/meson.build. */
#ifndef GT_TEST_CUDA_MODULE_REPORT_H
#define GT_TEST_CUDA_MODULE_REPORT_H

#include <stddef.h>

#ifdef GT_HAVE_CUDA_BACKEND
#include "cuda-module.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#define GT_TEST_PATH_BYTES 1024

/* dl_iterate_phdr's callback: the path of the CUDA module, if loaded. */
static int
gt_test_find_module (struct dl_phdr_info *info, size_t size, void *data)
{
  const char *suffix = "/" GT_CUDA_MODULE_FILE;
  size_t length = strlen (info->dlpi_name), suffix_length = strlen (suffix);

  if (length < suffix_length
      || strcmp (info->dlpi_name + length - suffix_length, suffix) != 0)
    return 0;
  snprintf ((char *)data, GT_TEST_PATH_BYTES, "%s", info->dlpi_name);
  return 1;
}
#endif

/* How many fp32 convolution directions of this process took a
 * non-deterministic algorithm (the last described in @last), as the CUDA
 * module reports it; -1 when that report cannot be reached (no module
 * built or loaded yet, or one from another build). */
static int
gt_test_nondeterministic_choices (char *last, size_t last_size)
{
#ifdef GT_HAVE_CUDA_BACKEND
  const GtCudaModule *module;
  char path[GT_TEST_PATH_BYTES] = "";
  void *handle;
  int count = -1;

  dl_iterate_phdr (gt_test_find_module, path);
  handle = *path ? dlopen (path, RTLD_NOW | RTLD_NOLOAD) : NULL;
  if (handle == NULL)
    return -1;
  module = (const GtCudaModule *)dlsym (handle, GT_CUDA_MODULE_SYMBOL);
  if (module != NULL && module->abi == GT_CUDA_MODULE_ABI)
    count = module->nondeterministic_choices (last, last_size);
  dlclose (handle); /* the library keeps it open */
  return count;
#else
  (void)last;
  (void)last_size;
  return -1;
#endif
}

#endif /* GT_TEST_CUDA_MODULE_REPORT_H */
