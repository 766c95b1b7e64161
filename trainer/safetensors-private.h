/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* safetensors-private.h: what the safetensors reader
 * (safetensors-read.c) and writer (safetensors-write.c) share, from
 * safetensors.c. */
#ifndef GT_SAFETENSORS_PRIVATE_H
#define GT_SAFETENSORS_PRIVATE_H

#include "safetensors.h"

/* The reference implementation's limit; it also bounds what a hostile
 * header can make the parser allocate. */
#define MAX_HEADER_SIZE 100000000u

typedef struct
{
  char *key;
  char *value;
} GtStMetadataEntry;

/* Writes the message to @why (of @why_size bytes) when there is one. */
void gt_st_report (char *why, size_t why_size, const char *format, ...)
    __attribute__ ((format (printf, 3, 4)));

/* @items with room for one more of @count, doubling so that appending
 * stays linear; NULL (with @items untouched) when out of memory. */
void *gt_st_grow (void *items, int count, int *capacity, size_t item_size);

#endif /* GT_SAFETENSORS_PRIVATE_H */
