/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* safetensors.c: what the safetensors reader (safetensors-read.c) and
 * writer (safetensors-write.c) share: the dtypes, and the helpers of
 * safetensors-private.h. */
#include "safetensors-private.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static const struct
{
  const char *name;
  size_t size;
} dtype_info[] = {
  [GT_ST_F32] = { "F32", 4 },
  [GT_ST_F16] = { "F16", 2 },
  [GT_ST_BF16] = { "BF16", 2 },
  [GT_ST_F64] = { "F64", 8 },
  [GT_ST_I64] = { "I64", 8 },
  [GT_ST_I32] = { "I32", 4 },
  [GT_ST_I16] = { "I16", 2 },
  [GT_ST_I8] = { "I8", 1 },
  [GT_ST_U8] = { "U8", 1 },
  [GT_ST_BOOL] = { "BOOL", 1 },
};
#define NUM_DTYPES ((int)(sizeof (dtype_info) / sizeof (dtype_info[0])))

size_t
gt_st_dtype_size (GtStDtype dtype)
{
  return (unsigned)dtype < NUM_DTYPES ? dtype_info[dtype].size : 0;
}

const char *
gt_st_dtype_name (GtStDtype dtype)
{
  return (unsigned)dtype < NUM_DTYPES ? dtype_info[dtype].name : NULL;
}

void
gt_st_report (char *why, size_t why_size, const char *format, ...)
{
  va_list args;

  if (why == NULL || why_size == 0)
    return;
  va_start (args, format);
  vsnprintf (why, why_size, format, args);
  va_end (args);
}

void *
gt_st_grow (void *items, int count, int *capacity, size_t item_size)
{
  int new_capacity;
  void *larger;

  if (count < *capacity)
    return items;
  if (*capacity > (1 << 28))
    return NULL;
  new_capacity = *capacity > 0 ? *capacity * 2 : 16;
  larger = realloc (items, (size_t)new_capacity * item_size);
  if (larger != NULL)
    *capacity = new_capacity;
  return larger;
}
