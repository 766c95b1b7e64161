/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* module-loader.h: finds and opens the training library's modules (the
 * CUDA backend, the MPI communicator), which are opened at run time so
 * that the library loads and trains on machines without CUDA or MPI.
 *
 * Where a module is looked for, in order: the file named by an environment
 * variable (then only there); beside this library (the build tree); in
 * gst-train/ beside this library (installed: libdir/gst-train/). Both are
 * relative to where the library is, so a build tree or an installation can
 * move. */
#ifndef GT_MODULE_LOADER_H
#define GT_MODULE_LOADER_H

#include "trainer-env.h"

#include <pthread.h>
#include <stddef.h>

/* dlopen()s module @file_name, or the file in @env_var when set. Returns
 * the handle, or NULL with the reason in @why: @what (e.g. "the CUDA
 * backend") cannot be loaded, naming the missing library the dynamic
 * linker named, or is neither here nor there. */
void *gt_module_open (GtEnvVar env_var, const char *file_name, const char *what,
    char *why, size_t why_size);

/* A module's table of functions, as gt_module_load finds it. */
typedef struct
{
  GtEnvVar env_var;      /* names the file to open instead of looking */
  const char *file_name; /* looked for beside the library */
  const char *what;      /* in messages: what cannot be loaded */
  const char *module;    /* in the message of a module from another build */
  const char *symbol;    /* the table it exports, whose first member is */
  int abi;               /* an int that must be this */
  /* when not NULL: 1 when the table fits this build (its sizes) */
  int (*fits) (const void *table);
  /* a build without the module has no file_name (NULL): this says why */
  const char *unbuilt;
} GtModuleInfo;

/* Opens the module @info describes (gt_module_open) and returns its table,
 * kept open for the life of the process; NULL with the reason in @why when
 * this build has no such module (@info's unbuilt), when it cannot be
 * opened, or when its table is missing or does not fit ("the module FILE
 * is from another build of gst-train"). */
const void *gt_module_load (
    const GtModuleInfo *info, char *why, size_t why_size);

/* A module opened when it is first wanted (gt_module_get), once for the
 * process, and what came of it. */
typedef struct
{
  GtModuleInfo info;
  pthread_mutex_t lock;
  int tried;
  const void *table; /* its table, once it is open */
  char error[2560];  /* else why it is not */
} GtModule;

/* A GtModule described by GtModuleInfo's fields, in order. */
#define GT_MODULE_INIT(...)                                                    \
  {                                                                            \
    { __VA_ARGS__ }, PTHREAD_MUTEX_INITIALIZER, 0, NULL, ""                    \
  }

/* @module's table, opened by the first call (gt_module_load); NULL with
 * the reason in @why (when not NULL), the same on every call. */
const void *gt_module_get (GtModule *module, char *why, size_t why_size);

/* dlopen()s @path, which @env_var named (for a library opened by file, as
 * the CUDA module opens NCCL): the handle, or NULL with the reason in @why,
 * that @what is missing or cannot be loaded (the linker's message). */
void *gt_module_open_file (GtEnvVar env_var, const char *path, const char *what,
    char *why, size_t why_size);

#endif /* GT_MODULE_LOADER_H */
