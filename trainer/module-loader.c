/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* module-loader.c: finds and opens the library's modules (module-loader.h
 * says where it looks). */
#define _GNU_SOURCE /* dladdr */
#include "module-loader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The handle of @path; NULL with *@tried 0 when there is no such file, or
 * NULL with the linker's message and *@tried 1 when it does not load. */
static void *
try_open (
    const char *path, const char *what, int *tried, char *why, size_t why_size)
{
  void *handle;

  *tried = access (path, F_OK) == 0;
  if (!*tried)
    return NULL;
  handle = dlopen (path, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL)
    snprintf (why, why_size, "%s cannot be loaded: %s", what, dlerror ());
  return handle;
}

void *
gt_module_open_file (GtEnvVar env_var, const char *path, const char *what,
    char *why, size_t why_size)
{
  int tried;
  void *handle = try_open (path, what, &tried, why, why_size);

  if (handle == NULL && !tried)
    snprintf (why, why_size, "%s is missing (no %s, from %s)", what, path,
        gt_env_name (env_var));
  return handle;
}

const void *
gt_module_load (const GtModuleInfo *info, char *why, size_t why_size)
{
  void *handle;
  const int *table;

  if (info->file_name == NULL) {
    snprintf (why, why_size, "%s", info->unbuilt);
    return NULL;
  }
  handle = gt_module_open (
      info->env_var, info->file_name, info->what, why, why_size);
  if (handle == NULL)
    return NULL;
  table = dlsym (handle, info->symbol);
  if (table == NULL || *table != info->abi
      || (info->fits != NULL && !info->fits (table))) {
    snprintf (why, why_size,
        "%s %s is from another build of gst-train: rebuild or reinstall it",
        info->module, info->file_name);
    dlclose (handle);
    return NULL;
  }
  return table;
}

const void *
gt_module_get (GtModule *module, char *why, size_t why_size)
{
  const void *table;

  pthread_mutex_lock (&module->lock);
  if (!module->tried) {
    module->tried = 1;
    module->table =
        gt_module_load (&module->info, module->error, sizeof (module->error));
  }
  table = module->table;
  if (table == NULL && why != NULL && why_size > 0)
    snprintf (why, why_size, "%s", module->error);
  pthread_mutex_unlock (&module->lock);
  return table;
}

void *
gt_module_open (GtEnvVar env_var, const char *file_name, const char *what,
    char *why, size_t why_size)
{
  const char *path = gt_env_get (env_var);
  char here[1024], candidate[1024 + 128];
  const char *slash;
  Dl_info info;
  void *handle;
  int tried;

  if (path != NULL && *path != '\0')
    return gt_module_open_file (env_var, path, what, why, why_size);
  if (dladdr ((void *)&gt_module_open, &info) == 0 || info.dli_fname == NULL) {
    snprintf (why, why_size,
        "cannot tell where the training library is, to find %s: set %s", what,
        gt_env_name (env_var));
    return NULL;
  }
  snprintf (here, sizeof (here), "%s", info.dli_fname);
  slash = strrchr (here, '/');
  if (slash != NULL)
    here[slash - here] = '\0';
  else
    snprintf (here, sizeof (here), ".");
  snprintf (candidate, sizeof (candidate), "%s/%s", here, file_name);
  handle = try_open (candidate, what, &tried, why, why_size);
  if (handle != NULL || tried)
    return handle;
  snprintf (candidate, sizeof (candidate), "%s/gst-train/%s", here, file_name);
  handle = try_open (candidate, what, &tried, why, why_size);
  if (handle == NULL && !tried)
    snprintf (why, why_size, "%s (%s) is neither in %s nor in %s/gst-train",
        what, file_name, here, here);
  return handle;
}
