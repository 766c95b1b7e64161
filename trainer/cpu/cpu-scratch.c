/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpu-scratch.c: the per-thread scratch of the CPU layers (cpu-scratch.h). */
#include "cpu-scratch.h"

#include <stdlib.h>
#include <string.h>

int
gt_cpu_scratch_init (GtCpuScratch *scratch, int num_threads,
    size_t column_floats, size_t partial_floats, int max_channels,
    size_t pad_floats)
{
  size_t direct_floats = 9 * 64 * 64;
  int t;

  memset (scratch, 0, sizeof (*scratch));
  scratch->num_threads = num_threads;
  scratch->column_floats = column_floats;
  scratch->partial_floats = partial_floats;
  scratch->max_channels = max_channels;
  scratch->columns = calloc (num_threads, sizeof (float *));
  scratch->weight_partials = calloc (num_threads, sizeof (float *));
  scratch->channel_sums =
      calloc ((size_t)num_threads * 2 * max_channels, sizeof (double));
  scratch->conv_moments =
      calloc ((size_t)num_threads * (2 * max_channels + 1), sizeof (double));
  scratch->pad_floats = pad_floats;
  scratch->pads = calloc (num_threads, sizeof (float *));
  scratch->direct_grads = calloc (num_threads, sizeof (float *));
  scratch->direct_weights = malloc (direct_floats * sizeof (float));
  if (!scratch->columns || !scratch->weight_partials || !scratch->channel_sums
      || !scratch->conv_moments || !scratch->pads || !scratch->direct_grads
      || !scratch->direct_weights)
    return -1;
  for (t = 0; t < num_threads; t++) {
    scratch->columns[t] = malloc (column_floats * sizeof (float));
    scratch->direct_grads[t] = malloc (direct_floats * sizeof (float));
    if (pad_floats > 0)
      scratch->pads[t] = malloc (pad_floats * sizeof (float));
    if (!scratch->columns[t] || !scratch->direct_grads[t]
        || (pad_floats > 0 && !scratch->pads[t]))
      return -1;
    if (t > 0) {
      scratch->weight_partials[t] = malloc (partial_floats * sizeof (float));
      if (scratch->weight_partials[t] == NULL)
        return -1;
    }
  }
  return 0;
}

void
gt_cpu_scratch_clear (GtCpuScratch *scratch)
{
  int t;

  for (t = 0; t < scratch->num_threads; t++) {
    if (scratch->columns)
      free (scratch->columns[t]);
    if (scratch->weight_partials)
      free (scratch->weight_partials[t]);
    if (scratch->pads)
      free (scratch->pads[t]);
    if (scratch->direct_grads)
      free (scratch->direct_grads[t]);
  }
  free (scratch->pads);
  free (scratch->direct_grads);
  free (scratch->direct_weights);
  free (scratch->columns);
  free (scratch->weight_partials);
  free (scratch->channel_sums);
  free (scratch->conv_moments);
  memset (scratch, 0, sizeof (*scratch));
}
