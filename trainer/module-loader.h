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

#include <stddef.h>

/* dlopen()s module @file_name, or the file in @env_var when set. Returns
 * the handle, or NULL with the reason in @why: @what (e.g. "the CUDA
 * backend") cannot be loaded, naming the missing library the dynamic
 * linker named, or is neither here nor there. */
void *gt_module_open (const char *env_var, const char *file_name,
    const char *what, char *why, size_t why_size);

/* dlopen()s @path, which @env_var named (for a library opened by file, as
 * the CUDA module opens NCCL): the handle, or NULL with the reason in @why,
 * that @what is missing or cannot be loaded (the linker's message). */
void *gt_module_open_file (const char *env_var, const char *path,
    const char *what, char *why, size_t why_size);

#endif /* GT_MODULE_LOADER_H */
