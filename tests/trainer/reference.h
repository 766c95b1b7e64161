/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* reference.h: what the parity tests against PyTorch (parity.c, one
 * process; dist-parity.c, data-parallel) do with the reference file that
 * torch_reference.py or ddp_reference.py wrote: report failures, find its
 * tensors and metadata, write its initial weights as torchvision saves
 * them, configure a trainer as the reference trained, and hold every
 * tensor of a trainer against it. Header-only: each test is one program. */
#ifndef GT_TEST_REFERENCE_H
#define GT_TEST_REFERENCE_H

#include "safetensors.h"
#include "trainer.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
/* data-parallel: this process's rank, which every message names */
static int reference_rank = -1;

static inline void reference_report (const char *format, va_list args)
    __attribute__ ((format (printf, 1, 0)));
static inline void
reference_report (const char *format, va_list args)
{
  fprintf (stderr, "FAIL: ");
  if (reference_rank >= 0)
    fprintf (stderr, "rank %d: ", reference_rank);
  vfprintf (stderr, format, args);
  fprintf (stderr, "\n");
}

/* Reports a failed check and counts it; the test goes on. */
static inline void fail (const char *format, ...)
    __attribute__ ((format (printf, 1, 2)));
static inline void
fail (const char *format, ...)
{
  va_list args;

  va_start (args, format);
  reference_report (format, args);
  va_end (args);
  failures++;
}

/* Reports what the test cannot go on without, and ends it. */
static inline void die (const char *format, ...)
    __attribute__ ((format (printf, 1, 2), noreturn));
static inline void
die (const char *format, ...)
{
  va_list args;

  va_start (args, format);
  reference_report (format, args);
  va_end (args);
  exit (1);
}

static inline const GtStTensor *
need (GtStFile *file, const char *name)
{
  const GtStTensor *tensor = gt_st_find (file, name);

  if (tensor == NULL)
    die ("the reference has no tensor %s", name);
  return tensor;
}

/* PyTorch's fp32 error on tensor @name (@torch_error), widened to how far
 * its runs from perturbed weights landed ("spread.<name>", which the
 * references write with --perturbations): how far from float64 a correct
 * fp32 implementation may land on this batch. */
static inline double
parity_with_spread (GtStFile *file, const char *name, double torch_error)
{
  const GtStTensor *spread;
  char spread_name[200];
  double value;

  snprintf (spread_name, sizeof (spread_name), "spread.%s", name);
  spread = gt_st_find (file, spread_name);
  if (spread == NULL)
    return torch_error;
  if (spread->dtype != GT_ST_F64 || gt_st_numel (spread) != 1)
    die ("%s is not one float64", spread_name);
  memcpy (&value, gt_st_data (file, spread), sizeof (value));
  return value > torch_error ? value : torch_error;
}

static inline double
metadata_number (GtStFile *file, const char *key)
{
  const char *text = gt_st_metadata (file, key);

  if (text == NULL)
    die ("the reference has no metadata %s", key);
  return atof (text);
}

/* The init.* tensors as a state_dict file, the way torchvision saves one. */
static inline void
write_initial_weights (GtStFile *file, const char *path)
{
  GtStWriter *writer = gt_st_writer_new ();
  char why[512];
  int i;

  for (i = 0; i < gt_st_num_tensors (file); i++) {
    const GtStTensor *tensor = gt_st_tensor (file, i);

    if (strncmp (tensor->name, "init.", 5) == 0)
      gt_st_writer_add (writer, tensor->name + 5, tensor->dtype, tensor->ndim,
          tensor->shape, gt_st_data (file, tensor));
  }
  if (gt_st_writer_write (writer, path, why, sizeof (why)) < 0)
    die ("%s", why);
  gt_st_writer_free (writer);
}

/* gt_trainer_config_init, then what the reference trained: its model,
 * classes, input size and batch, and where it took steps (it has an "lr")
 * its optimiser, at a constant learning rate. */
static inline void
reference_config (GtStFile *file, GtTrainerConfig *config)
{
  gt_trainer_config_init (config);
  if (gt_model_from_name (gt_st_metadata (file, "model"), &config->model))
    die ("unknown model %s", gt_st_metadata (file, "model"));
  config->num_classes = (int)metadata_number (file, "classes");
  config->height = config->width = (int)metadata_number (file, "size");
  config->batch_size = (int)metadata_number (file, "batch");
  config->lr_schedule = GT_LR_CONSTANT;
  if (gt_st_metadata (file, "lr")) {
    config->lr = (float)metadata_number (file, "lr");
    config->momentum = (float)metadata_number (file, "momentum");
    config->weight_decay = (float)metadata_number (file, "weight_decay");
    config->label_smoothing = (float)metadata_number (file, "label_smoothing");
    config->nesterov = (int)metadata_number (file, "nesterov");
  }
}

/* The kinds of tensor compare_state takes. */
#define REFERENCE_PARAMETERS 1u
#define REFERENCE_STATISTICS 2u

/* A test's comparison of @count values of ours with the reference's
 * tensor @name at the test's rule (@floor: the least tolerance), the
 * largest error kept in *@worst; returns the error. */
typedef double (*ReferenceCompare) (GtStFile *file, const char *name,
    const float *ours, size_t count, double floor, double *worst);

/* @part of every tensor of @trainer of the @kinds asked, against the
 * reference's @prefix + its name through @compare; num_batches_tracked,
 * an int64 count, exactly. */
static inline void
compare_state (GtTrainer *trainer, GtStFile *file, const char *prefix,
    GtTensorPart part, unsigned kinds, double floor, double *worst,
    ReferenceCompare compare)
{
  int i;

  for (i = 0; i < gt_trainer_num_tensors (trainer); i++) {
    GtTensorInfo info;
    char name[200];
    float *ours;

    gt_trainer_tensor_info (trainer, i, &info);
    if (!(kinds
            & (info.is_parameter ? REFERENCE_PARAMETERS
                                 : REFERENCE_STATISTICS)))
      continue;
    snprintf (name, sizeof (name), "%s%s", prefix, info.name);
    ours = malloc ((size_t)info.numel * sizeof (float));
    if (gt_trainer_read_tensor (trainer, info.name, part, ours, info.numel)) {
      fail ("reading %s: %s", info.name, gt_trainer_error (trainer));
    } else if (strstr (info.name, "num_batches_tracked")) {
      const GtStTensor *count = need (file, name);

      if (count->dtype != GT_ST_I64
          || (int64_t)ours[0] != *(const int64_t *)gt_st_data (file, count))
        fail ("%s: %g, PyTorch %lld", name, ours[0],
            (long long)*(const int64_t *)gt_st_data (file, count));
    } else {
      compare (file, name, ours, (size_t)info.numel, floor, worst);
    }
    free (ours);
  }
}

#endif /* GT_TEST_REFERENCE_H */
