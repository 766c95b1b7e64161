/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* checkpoint.c: a model's host state as safetensors and back
 * (checkpoint.h).
 *
 * The model's tensors go under torchvision's state_dict names and layouts,
 * so that torchvision loads them with strict=True once the optimiser's
 * "optimizer.momentum.*" tensors are left out; the step, the RNG and the
 * caller's metadata ride in the header's metadata. */
#include "checkpoint.h"
#include "gt-error.h"
#include "safetensors.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOMENTUM_PREFIX "optimizer.momentum."
#define OPTIMIZER_PREFIX "optimizer."

static int
entry_is_float (const GtTensorEntry *entry)
{
  return entry->kind != GT_ENTRY_NUM_BATCHES_TRACKED;
}

int
gt_checkpoint_write (const char *path, const GtModelSpec *spec,
    const GtHostState *state, const GtCheckpointHeader *header, char *why,
    size_t why_size)
{
  GtStWriter *writer = NULL;
  float *torch_params = NULL, *torch_momentum = NULL;
  char text[128];
  int status, i;

  writer = gt_st_writer_new ();
  torch_params = malloc (spec->num_params * sizeof (float));
  if (header != NULL)
    torch_momentum = malloc (spec->num_params * sizeof (float));
  if (writer == NULL || torch_params == NULL
      || (header != NULL && torch_momentum == NULL)) {
    status = gt_error_set (
        why, why_size, GT_ERROR_NO_MEMORY, "out of memory saving %s", path);
    goto done;
  }

  for (i = 0; i < spec->num_entries; i++) {
    const GtTensorEntry *entry = &spec->entries[i];
    const void *data;

    if (entry->kind == GT_ENTRY_NUM_BATCHES_TRACKED)
      data = state->num_batches_tracked;
    else if (!gt_entry_is_parameter (entry))
      data = state->stats + entry->offset;
    else {
      gt_entry_to_torch (
          entry, state->params + entry->offset, torch_params + entry->offset);
      data = torch_params + entry->offset;
    }
    if (gt_st_writer_add (writer, entry->name,
            entry_is_float (entry) ? GT_ST_F32 : GT_ST_I64, entry->ndim,
            entry->shape, data)
        < 0) {
      status = gt_error_set (why, why_size, GT_ERROR_INVALID,
          "could not add %s to %s", entry->name, path);
      goto done;
    }
  }
  for (i = 0; header != NULL && i < spec->num_entries; i++) {
    const GtTensorEntry *entry = &spec->entries[i];
    char name[128];

    if (!gt_entry_is_parameter (entry))
      continue;
    gt_entry_to_torch (
        entry, state->momentum + entry->offset, torch_momentum + entry->offset);
    snprintf (name, sizeof (name), MOMENTUM_PREFIX "%s", entry->name);
    if (gt_st_writer_add (writer, name, GT_ST_F32, entry->ndim, entry->shape,
            torch_momentum + entry->offset)
        < 0) {
      status = gt_error_set (why, why_size, GT_ERROR_INVALID,
          "could not add %s to %s", name, path);
      goto done;
    }
  }

  gt_st_writer_set_metadata (writer, "format", "pt");
  gt_st_writer_set_metadata (
      writer, "gst_train.model", gt_model_name (spec->model));
  snprintf (text, sizeof (text), "%d", spec->num_classes);
  gt_st_writer_set_metadata (writer, "gst_train.num_classes", text);
  if (header != NULL) {
    gt_st_writer_set_metadata (writer, "gst_train.kind", "checkpoint");
    snprintf (text, sizeof (text), "%" PRId64, header->step);
    gt_st_writer_set_metadata (writer, "gst_train.step", text);
    snprintf (text, sizeof (text),
        "%016" PRIx64 " %016" PRIx64 " %016" PRIx64 " %016" PRIx64,
        header->rng.s[0], header->rng.s[1], header->rng.s[2], header->rng.s[3]);
    gt_st_writer_set_metadata (writer, "gst_train.rng", text);
    for (i = 0; i < header->num_metadata; i++)
      gt_st_writer_set_metadata (
          writer, header->metadata[i].key, header->metadata[i].value);
  } else {
    gt_st_writer_set_metadata (writer, "gst_train.kind", "weights");
  }

  if (gt_st_writer_write (writer, path, why, why_size) < 0)
    status = GT_ERROR_IO;
  else
    status = GT_OK;

done:
  gt_st_writer_free (writer);
  free (torch_params);
  free (torch_momentum);
  return status;
}

/* Appends "@name" to a comma-separated @list, up to a handful of names. */
static void
list_append (char *list, size_t size, int *count, const char *name)
{
  size_t length = strlen (list);

  if (*count < 6)
    snprintf (list + length, size - length, "%s%s", *count ? ", " : "", name);
  else if (*count == 6)
    snprintf (list + length, size - length, ", ...");
  (*count)++;
}

static void
format_shape (char *out, size_t size, int ndim, const int64_t *shape)
{
  size_t length;
  int d;

  snprintf (out, size, "[");
  for (d = 0; d < ndim; d++) {
    length = strlen (out);
    snprintf (
        out + length, size - length, "%s%" PRId64, d ? ", " : "", shape[d]);
  }
  length = strlen (out);
  snprintf (out + length, size - length, "]");
}

/* Checks that @tensor can stand for @entry; a message in @problem when
 * not. */
static int
tensor_fits (const GtTensorEntry *entry, const GtStTensor *tensor,
    char *problem, size_t size)
{
  GtStDtype want = entry_is_float (entry) ? GT_ST_F32 : GT_ST_I64;
  int d, fits = tensor->ndim == entry->ndim;

  for (d = 0; fits && d < entry->ndim; d++)
    fits = tensor->shape[d] == entry->shape[d];
  /* PyTorch writes num_batches_tracked as a 0-dim tensor; accept [1]. */
  if (!fits && entry->kind == GT_ENTRY_NUM_BATCHES_TRACKED)
    fits = gt_st_numel (tensor) == 1;
  if (!fits) {
    char theirs[96], ours[96];

    format_shape (theirs, sizeof (theirs), tensor->ndim, tensor->shape);
    format_shape (ours, sizeof (ours), entry->ndim, entry->shape);
    snprintf (problem, size, "%s is %s in the file, %s in the model",
        tensor->name, theirs, ours);
    return 0;
  }
  if (tensor->dtype != want) {
    snprintf (problem, size, "%s is %s in the file, %s expected", tensor->name,
        gt_st_dtype_name (tensor->dtype), gt_st_dtype_name (want));
    return 0;
  }
  return 1;
}

/* Whether @file holds @spec's state_dict: every entry under its name and
 * shape, and no tensor but those and the optimiser's. */
static int
file_holds_spec (GtStFile *file, const GtModelSpec *spec)
{
  char problem[256];
  int i;

  for (i = 0; i < spec->num_entries; i++) {
    const GtStTensor *tensor = gt_st_find (file, spec->entries[i].name);

    if (tensor == NULL
        || !tensor_fits (&spec->entries[i], tensor, problem, sizeof (problem)))
      return 0;
  }
  for (i = 0; i < gt_st_num_tensors (file); i++) {
    const char *name = gt_st_tensor (file, i)->name;

    if (strncmp (name, OPTIMIZER_PREFIX, strlen (OPTIMIZER_PREFIX)) != 0
        && gt_model_find_entry (spec, name) == NULL)
      return 0;
  }
  return 1;
}

/* The model and class count that @file holds: its metadata's
 * (gst_train.model and gst_train.num_classes, which gst-train writes),
 * else the model whose state_dict it holds, names and shapes, with as many
 * classes as its classifier has rows (a file saved from PyTorch). 0, or -1
 * when neither says. */
static int
identify_model (GtStFile *file, GtModel *model, int *num_classes)
{
  const char *name = gt_st_metadata (file, "gst_train.model");
  const char *classes = gt_st_metadata (file, "gst_train.num_classes");
  const GtStTensor *fc = gt_st_find (file, "fc.weight");
  int m;

  if (name != NULL && classes != NULL && gt_model_from_name (name, model) == 0
      && atoi (classes) > 0) {
    *num_classes = atoi (classes);
    return 0;
  }
  if (fc == NULL || fc->ndim != 2 || fc->shape[0] < 1
      || fc->shape[0] > (1 << 20))
    return -1;
  for (m = GT_MODEL_RESNET18; m <= GT_MODEL_RESNET32; m++) {
    GtModelSpec spec;
    char why[256];
    int holds;

    /* the names and shapes do not depend on the input size */
    if (gt_model_spec_init (
            &spec, (GtModel)m, (int)fc->shape[0], 224, 224, why, sizeof (why))
        < 0)
      continue;
    holds = file_holds_spec (file, &spec);
    gt_model_spec_clear (&spec);
    if (holds) {
      *model = (GtModel)m;
      *num_classes = (int)fc->shape[0];
      return 0;
    }
  }
  return -1;
}

/* When @file holds another model, or another class count, than @spec:
 * "X holds a resnet20, not a resnet50: " in @out (the start of the
 * message that lists what does not fit), which is what a user who pointed
 * a run at the wrong file needs first; "X does not fit resnet50 with 10
 * classes: " otherwise. */
static void
say_what_it_holds (GtStFile *file, const char *path, const GtModelSpec *spec,
    char *out, size_t size)
{
  GtModel model;
  int classes;

  if (identify_model (file, &model, &classes) < 0
      || (model == spec->model && classes == spec->num_classes))
    snprintf (out, size, "%s does not fit %s with %d classes:", path,
        gt_model_name (spec->model), spec->num_classes);
  else if (model == spec->model)
    snprintf (out, size, "%s holds a %s with %d classes, not %d:", path,
        gt_model_name (model), classes, spec->num_classes);
  else if (classes == spec->num_classes)
    snprintf (out, size, "%s holds a %s, not a %s:", path,
        gt_model_name (model), gt_model_name (spec->model));
  else
    snprintf (out, size,
        "%s holds a %s with %d classes, not a %s with %d:", path,
        gt_model_name (model), classes, gt_model_name (spec->model),
        spec->num_classes);
}

static int
parse_rng (const char *text, GtRandom *rng)
{
  int i;

  for (i = 0; i < 4; i++) {
    char *end;

    if (text == NULL)
      return -1;
    rng->s[i] = strtoull (text, &end, 16);
    if (end == text)
      return -1;
    text = end;
  }
  return 0;
}

/* Copies parameter @tensor (PyTorch's layout) into @out (ours) at the
 * entry's offset. The data may sit at any alignment in a foreign file, so
 * it goes through @staging first. */
static void
read_parameter (GtStFile *file, const GtStTensor *tensor,
    const GtTensorEntry *entry, float *staging, float *out)
{
  memcpy (staging + entry->offset, gt_st_data (file, tensor),
      entry->numel * sizeof (float));
  gt_entry_from_torch (entry, staging + entry->offset, out + entry->offset);
}

/* Copies the caller's metadata of @file (all but "format" and
 * gst_train.*) into @checkpoint; -1 when memory ran out. */
static int
copy_metadata (GtStFile *file, GtCheckpoint *checkpoint)
{
  int count = gt_st_num_metadata (file), i;

  checkpoint->metadata = calloc (count ? count : 1, sizeof (GtMetadataEntry));
  if (checkpoint->metadata == NULL)
    return -1;
  for (i = 0; i < count; i++) {
    const char *key = gt_st_metadata_key (file, i);
    GtMetadataEntry *entry = &checkpoint->metadata[checkpoint->num_metadata];

    if (strcmp (key, "format") == 0 || strncmp (key, "gst_train.", 10) == 0)
      continue;
    entry->key = strdup (key);
    entry->value = strdup (gt_st_metadata (file, key));
    checkpoint->num_metadata++;
    if (entry->key == NULL || entry->value == NULL)
      return -1;
  }
  return 0;
}

void
gt_checkpoint_clear (GtCheckpoint *checkpoint)
{
  int i;

  free (checkpoint->params);
  free (checkpoint->momentum);
  free (checkpoint->stats);
  for (i = 0; i < checkpoint->num_metadata; i++) {
    free (checkpoint->metadata[i].key);
    free (checkpoint->metadata[i].value);
  }
  free (checkpoint->metadata);
  memset (checkpoint, 0, sizeof (*checkpoint));
}

int
gt_checkpoint_read (const char *path, const GtModelSpec *spec,
    GtCheckpoint *checkpoint, char *why, size_t why_size)
{
  GtStFile *file;
  char missing[512] = "", unexpected[512] = "", problem[512] = "";
  int num_missing = 0, num_unexpected = 0, num_problems = 0;
  float *staging = NULL;
  const char *kind, *text;
  int full, status, i;

  memset (checkpoint, 0, sizeof (*checkpoint));
  file = gt_st_open (path, why, why_size);
  if (file == NULL)
    return GT_ERROR_IO;
  kind = gt_st_metadata (file, "gst_train.kind");
  full = kind != NULL && strcmp (kind, "checkpoint") == 0;
  checkpoint->full = full;

  for (i = 0; i < spec->num_entries; i++) {
    const GtTensorEntry *entry = &spec->entries[i];
    const GtStTensor *tensor = gt_st_find (file, entry->name);
    char message[256];

    if (tensor == NULL)
      list_append (missing, sizeof (missing), &num_missing, entry->name);
    else if (!tensor_fits (entry, tensor, message, sizeof (message))) {
      if (num_problems++ == 0)
        snprintf (problem, sizeof (problem), "%s", message);
    }
    if (full && gt_entry_is_parameter (entry)) {
      char name[128];

      snprintf (name, sizeof (name), MOMENTUM_PREFIX "%s", entry->name);
      tensor = gt_st_find (file, name);
      if (tensor == NULL)
        list_append (missing, sizeof (missing), &num_missing, name);
      else if (!tensor_fits (entry, tensor, message, sizeof (message))
          && num_problems++ == 0)
        snprintf (problem, sizeof (problem), "%s", message);
    }
  }
  for (i = 0; i < gt_st_num_tensors (file); i++) {
    const char *name = gt_st_tensor (file, i)->name;

    if (strncmp (name, OPTIMIZER_PREFIX, strlen (OPTIMIZER_PREFIX)) == 0)
      continue;
    if (gt_model_find_entry (spec, name) == NULL)
      list_append (unexpected, sizeof (unexpected), &num_unexpected, name);
  }
  if (num_missing || num_unexpected || num_problems) {
    char holds[1024];

    say_what_it_holds (file, path, spec, holds, sizeof (holds));
    status = gt_error_set (why, why_size, GT_ERROR_MISMATCH, "%s%s%s%s%s%s%s",
        holds, num_missing ? " missing " : "", missing,
        num_unexpected ? "; unexpected " : "", unexpected,
        num_problems ? "; " : "", problem);
    goto done;
  }
  if (full) {
    char *end = NULL;

    text = gt_st_metadata (file, "gst_train.step");
    if (text != NULL)
      checkpoint->step = strtoll (text, &end, 10);
    if (text == NULL || end == text || *end != '\0' || checkpoint->step < 0
        || parse_rng (gt_st_metadata (file, "gst_train.rng"), &checkpoint->rng)
            < 0) {
      status = gt_error_set (why, why_size, GT_ERROR_MISMATCH,
          "%s is a checkpoint without a valid step or RNG state", path);
      goto done;
    }
    text = gt_st_metadata (file, "samples_seen");
    if (text != NULL)
      checkpoint->samples_seen = strtoll (text, NULL, 10);
  }

  checkpoint->params = malloc (spec->num_params * sizeof (float));
  checkpoint->momentum = calloc (spec->num_params, sizeof (float));
  checkpoint->stats = malloc (spec->num_stats * sizeof (float));
  staging = malloc (spec->num_params * sizeof (float));
  if (!checkpoint->params || !checkpoint->momentum || !checkpoint->stats
      || !staging || (full && copy_metadata (file, checkpoint) < 0)) {
    status = gt_error_set (
        why, why_size, GT_ERROR_NO_MEMORY, "out of memory loading %s", path);
    goto done;
  }
  for (i = 0; i < spec->num_entries; i++) {
    const GtTensorEntry *entry = &spec->entries[i];
    const GtStTensor *tensor = gt_st_find (file, entry->name);

    if (entry->kind == GT_ENTRY_NUM_BATCHES_TRACKED) {
      /* all norms count the same steps: the last one read stands */
      memcpy (&checkpoint->num_batches_tracked, gt_st_data (file, tensor),
          sizeof (int64_t));
      continue;
    }
    if (!gt_entry_is_parameter (entry)) {
      memcpy (checkpoint->stats + entry->offset, gt_st_data (file, tensor),
          entry->numel * sizeof (float));
      continue;
    }
    read_parameter (file, tensor, entry, staging, checkpoint->params);
    if (full) {
      char name[128];

      snprintf (name, sizeof (name), MOMENTUM_PREFIX "%s", entry->name);
      read_parameter (
          file, gt_st_find (file, name), entry, staging, checkpoint->momentum);
    }
  }
  status = GT_OK;

done:
  free (staging);
  gt_st_close (file);
  return status;
}

int
gt_checkpoint_read_metadata (const char *path, const char *key, char *value,
    size_t size, char *why, size_t why_size)
{
  GtStFile *file = gt_st_open (path, why, why_size);
  const char *text;
  int status = GT_ERROR_INVALID;

  if (file == NULL)
    return GT_ERROR_IO;
  text = gt_st_metadata (file, key);
  if (text == NULL)
    snprintf (why, why_size, "%s has no metadata \"%s\"", path, key);
  else if (strlen (text) >= size)
    snprintf (why, why_size, "metadata \"%s\" of %s is too long", key, path);
  else {
    memcpy (value, text, strlen (text) + 1);
    status = GT_OK;
  }
  gt_st_close (file);
  return status;
}

int
gt_checkpoint_identify (const char *path, GtModel *model, int *num_classes,
    char *why, size_t why_size)
{
  GtStFile *file = gt_st_open (path, why, why_size);
  int status = GT_OK;

  if (file == NULL)
    return GT_ERROR_IO;
  if (identify_model (file, model, num_classes) < 0)
    status = gt_error_set (why, why_size, GT_ERROR_MISMATCH,
        "%s holds no model that gst-train knows", path);
  gt_st_close (file);
  return status;
}
