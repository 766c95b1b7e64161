/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* safetensors.h: reads and writes the safetensors checkpoint format
 * (https://github.com/huggingface/safetensors), so that weights move between
 * gst-train and PyTorch/JAX tooling without a conversion step.
 *
 * Plain C with libc and POSIX only. The reader validates every header field
 * before handing out pointers, so a truncated or hostile file is an error
 * message, never a crash; the writer replaces its target atomically.
 */
#ifndef GT_SAFETENSORS_H
#define GT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum
{
  GT_ST_F32,
  GT_ST_F16,
  GT_ST_BF16,
  GT_ST_F64,
  GT_ST_I64,
  GT_ST_I32,
  GT_ST_I16,
  GT_ST_I8,
  GT_ST_U8,
  GT_ST_BOOL
} GtStDtype;

#define GT_ST_MAX_DIMS 8

typedef struct
{
  const char *name;
  GtStDtype dtype;
  int ndim;
  int64_t shape[GT_ST_MAX_DIMS];
  uint64_t begin, end; /* byte offsets into the data section */
} GtStTensor;

/* Bytes per element of @dtype (1 for BOOL), or 0 for a value outside the
 * enum. */
size_t gt_st_dtype_size (GtStDtype dtype);

/* The header spelling of @dtype ("F32", ...), or NULL outside the enum. */
const char *gt_st_dtype_name (GtStDtype dtype);

typedef struct GtStFile GtStFile;

/* Maps @path read-only and validates its header; NULL with a message naming
 * the path and the problem in @why otherwise. */
GtStFile *gt_st_open (const char *path, char *why, size_t why_size);

/* Reads the @size bytes at @bytes as gt_st_open reads a file, with every
 * check it makes; the bytes are not copied and must stay unchanged until
 * gt_st_close. NULL with the problem in @why (after "(memory): ") otherwise. */
GtStFile *gt_st_open_memory (
    const void *bytes, size_t size, char *why, size_t why_size);

/* Unmaps @file and frees everything it handed out; NULL is ignored. */
void gt_st_close (GtStFile *file);

/* Number of tensors in @file. */
int gt_st_num_tensors (const GtStFile *file);

/* Tensor @index in header order, or NULL when @index is out of range. */
const GtStTensor *gt_st_tensor (const GtStFile *file, int index);

/* The tensor called @name, or NULL when absent. */
const GtStTensor *gt_st_find (const GtStFile *file, const char *name);

/* The tensor's bytes (little-endian, row-major) inside the read-only mapping,
 * valid until gt_st_close. The data section starts 8-byte aligned when the
 * header length is a multiple of 8, as both this writer and the reference one
 * make it; a tensor is only as aligned as its begin offset, so copy with memcpy
 * unless the layout is known. */
const void *gt_st_data (const GtStFile *file, const GtStTensor *tensor);

/* Number of elements of @tensor: the product of its shape, 1 for a scalar. */
uint64_t gt_st_numel (const GtStTensor *tensor);

/* Value of the "__metadata__" entry @key, or NULL when absent. */
const char *gt_st_metadata (const GtStFile *file, const char *key);

/* Number of "__metadata__" entries in @file. */
int gt_st_num_metadata (const GtStFile *file);

/* Key of metadata entry @index, counting in strcmp order of the keys (the
 * header's order is not kept), or NULL when @index is out of range. */
const char *gt_st_metadata_key (const GtStFile *file, int index);

typedef struct GtStWriter GtStWriter;

/* An empty writer, or NULL when out of memory. */
GtStWriter *gt_st_writer_new (void);

/* Frees @writer (not the tensor data it points to); NULL is ignored. */
void gt_st_writer_free (GtStWriter *writer);

/* Adds a tensor; @data is NOT copied and must stay valid until
 * gt_st_writer_write returns. Returns 0, or -1 for a duplicate name / bad
 * arguments. Tensors are laid out in the order added, so adding those with
 * larger elements first keeps every tensor naturally aligned. */
int gt_st_writer_add (GtStWriter *writer, const char *name, GtStDtype dtype,
    int ndim, const int64_t *shape, const void *data);

/* Sets metadata @key to @value (both UTF-8), replacing an earlier value;
 * 0, or -1 for bad arguments or out of memory. */
int gt_st_writer_set_metadata (
    GtStWriter *writer, const char *key, const char *value);

/* Writes atomically: a temporary file in the same directory (mkstemp), the
 * header, the data, fsync, rename over @path, fsync of the directory; on any
 * failure the temporary file is removed and an existing file at @path is left
 * untouched. 0, or -1 with a message naming the path and the errno text (only
 * a failing directory fsync is reported after the file was replaced). */
int gt_st_writer_write (
    GtStWriter *writer, const char *path, char *why, size_t why_size);

#ifdef __cplusplus
}
#endif

#endif /* GT_SAFETENSORS_H */
