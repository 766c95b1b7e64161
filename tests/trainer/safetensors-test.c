/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* safetensors-test.c: checks the safetensors reader and writer: round trips,
 * a file laid out by hand as the reference implementation writes it, every
 * truncation of a valid file, hostile headers, and atomic replacement.
 * Usage: safetensors-test [SCRATCH-DIR]; it works in a fresh directory made
 * inside SCRATCH-DIR (default /tmp) and removes it afterwards. */
#include "check.h"
#include "safetensors.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static char scratch[4096];

static const char *
scratch_path (const char *name)
{
  static char path[2][4200];
  static int which;

  which = !which;
  snprintf (path[which], sizeof (path[which]), "%s/%s", scratch, name);
  return path[which];
}

static int
write_bytes (const char *path, const void *bytes, size_t size)
{
  FILE *f = fopen (path, "wb");
  int ok;

  if (f == NULL)
    return -1;
  ok = fwrite (bytes, 1, size, f) == size;
  return fclose (f) == 0 && ok ? 0 : -1;
}

/* The file's bytes in a new buffer, or NULL. */
static unsigned char *
read_bytes (const char *path, size_t *size)
{
  FILE *f = fopen (path, "rb");
  unsigned char *bytes = NULL;
  long length;

  if (f == NULL)
    return NULL;
  if (fseek (f, 0, SEEK_END) == 0 && (length = ftell (f)) >= 0
      && fseek (f, 0, SEEK_SET) == 0
      && (bytes = malloc ((size_t)length + 1)) != NULL
      && fread (bytes, 1, (size_t)length, f) == (size_t)length) {
    *size = (size_t)length;
  } else {
    free (bytes);
    bytes = NULL;
  }
  fclose (f);
  return bytes;
}

/* Entries of @directory other than . and .., joined by spaces. */
static int
list_directory (const char *directory, char *names, size_t names_size)
{
  DIR *dir = opendir (directory);
  struct dirent *entry;
  int count = 0;

  names[0] = '\0';
  if (dir == NULL)
    return -1;
  while ((entry = readdir (dir)) != NULL) {
    if (strcmp (entry->d_name, ".") == 0 || strcmp (entry->d_name, "..") == 0)
      continue;
    count++;
    strncat (names, entry->d_name, names_size - strlen (names) - 2);
    strcat (names, " ");
  }
  closedir (dir);
  return count;
}

static void
remove_tree (const char *path)
{
  DIR *dir = opendir (path);
  struct dirent *entry;
  char child[4200];

  if (dir != NULL) {
    while ((entry = readdir (dir)) != NULL) {
      if (strcmp (entry->d_name, ".") == 0 || strcmp (entry->d_name, "..") == 0)
        continue;
      snprintf (child, sizeof (child), "%s/%s", path, entry->d_name);
      remove_tree (child);
    }
    closedir (dir);
    rmdir (path);
  } else {
    unlink (path);
  }
}

/* Writes a file whose header is @json (with a correct size field) followed by
 * @data_size zero bytes. */
static void
write_with_header (const char *path, const char *json, size_t data_size)
{
  size_t json_size = strlen (json), i;
  unsigned char *bytes = calloc (1, 8 + json_size + data_size);

  for (i = 0; i < 8; i++)
    bytes[i] = (unsigned char)((uint64_t)json_size >> (8 * i));
  memcpy (bytes + 8, json, json_size);
  CHECK (write_bytes (path, bytes, 8 + json_size + data_size) == 0,
      "cannot write %s", path);
  free (bytes);
}

static void
test_round_trip (void)
{
  static const float f32[6] = { 1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, 65504.0f };
  static const uint16_t f16[4] = { 0x3c00, 0xc000, 0x7bff, 0x0001 };
  static const uint16_t bf16[1] = { 0x3f80 };
  static const double f64 = 3.141592653589793;
  static const int64_t i64[2] = { INT64_MIN, INT64_MAX };
  static const int32_t i32[3] = { -1, 0, 2147483647 };
  static const int16_t i16[2] = { -32768, 12345 };
  static const int8_t i8[5] = { -128, -1, 0, 1, 127 };
  static const uint8_t u8[3] = { 0, 128, 255 };
  static const uint8_t flags[2] = { 1, 0 };
  static const char weird_name[] = "quote\" back\\slash /\n\t\b\f\r \x01\x1f "
                                   "caf\xc3\xa9 \xe2\x98\x83 \xf0\x9f\x98\x80";
  static const char note[] = "line 1\nline 2 \"quoted\" \\ \x7f \xc3\xa9";
  static const struct
  {
    const char *name;
    GtStDtype dtype;
    int ndim;
    int64_t shape[3];
    const void *data;
  } cases[] = {
    { "layer.0/weight", GT_ST_F32, 2, { 2, 3 }, f32 },
    { "half", GT_ST_F16, 1, { 4 }, f16 },
    { "brain", GT_ST_BF16, 3, { 1, 1, 1 }, bf16 },
    { "scalar", GT_ST_F64, 0, { 0 }, &f64 },
    { "i64", GT_ST_I64, 2, { 2, 1 }, i64 },
    { "empty", GT_ST_F32, 2, { 0, 4 }, NULL },
    { "i32", GT_ST_I32, 1, { 3 }, i32 },
    { "i16", GT_ST_I16, 1, { 2 }, i16 },
    { "i8", GT_ST_I8, 1, { 5 }, i8 },
    { weird_name, GT_ST_U8, 1, { 3 }, u8 },
    { "flags", GT_ST_BOOL, 1, { 2 }, flags },
  };
  const int num_cases = (int)(sizeof (cases) / sizeof (cases[0]));
  const char *path = scratch_path ("round-trip.safetensors");
  GtStWriter *writer = gt_st_writer_new ();
  char why[512] = "";
  GtStFile *file;
  unsigned char *bytes;
  size_t size = 0;
  uint64_t header_size = 0;
  int i, d;

  for (i = 0; i < num_cases; i++)
    CHECK (gt_st_writer_add (writer, cases[i].name, cases[i].dtype,
               cases[i].ndim, cases[i].shape, cases[i].data)
            == 0,
        "add %s", cases[i].name);
  CHECK (gt_st_writer_add (writer, "half", GT_ST_F16, 1, cases[1].shape, f16)
          == -1,
      "duplicate name accepted");
  CHECK (gt_st_writer_add (writer, "__metadata__", GT_ST_U8, 0, NULL, u8) == -1,
      "reserved name accepted");
  CHECK (gt_st_writer_add (writer, "bad", (GtStDtype)42, 0, NULL, u8) == -1,
      "bad dtype accepted");
  CHECK (gt_st_writer_add (writer, "neg", GT_ST_U8, 1, (int64_t[]){ -1 }, u8)
          == -1,
      "negative dimension accepted");
  CHECK (
      gt_st_writer_add (writer, "nodata", GT_ST_U8, 1, (int64_t[]){ 2 }, NULL)
          == -1,
      "missing data accepted");
  CHECK (gt_st_writer_add (writer, "bad\xff", GT_ST_U8, 0, NULL, u8) == -1,
      "invalid UTF-8 name accepted");
  CHECK (gt_st_writer_set_metadata (writer, "format", "np") == 0, "metadata");
  CHECK (gt_st_writer_set_metadata (writer, "format", "pt") == 0, "replace");
  CHECK (gt_st_writer_set_metadata (writer, "note", note) == 0, "metadata");
  CHECK (gt_st_writer_set_metadata (writer, weird_name, "w") == 0, "metadata");
  CHECK (gt_st_writer_write (writer, path, why, sizeof (why)) == 0, "%s", why);
  gt_st_writer_free (writer);

  bytes = read_bytes (path, &size);
  CHECK (bytes != NULL && size > 8, "cannot read back %s", path);
  if (bytes != NULL && size > 8) {
    for (i = 7; i >= 0; i--)
      header_size = (header_size << 8) | bytes[i];
    CHECK ((8 + header_size) % 8 == 0, "data section at %llu, not aligned",
        (unsigned long long)(8 + header_size));
  }
  free (bytes);

  file = gt_st_open (path, why, sizeof (why));
  CHECK (file != NULL, "%s", why);
  if (file == NULL)
    return;
  CHECK (gt_st_num_tensors (file) == num_cases, "%d tensors",
      gt_st_num_tensors (file));
  for (i = 0; i < num_cases && i < gt_st_num_tensors (file); i++) {
    const GtStTensor *tensor = gt_st_tensor (file, i);
    uint64_t numel = 1;

    CHECK (strcmp (tensor->name, cases[i].name) == 0, "tensor %d is \"%s\"", i,
        tensor->name);
    CHECK (
        gt_st_find (file, cases[i].name) == tensor, "find %s", cases[i].name);
    CHECK (tensor->dtype == cases[i].dtype && tensor->ndim == cases[i].ndim,
        "%s: dtype %s ndim %d", cases[i].name, gt_st_dtype_name (tensor->dtype),
        tensor->ndim);
    for (d = 0; d < cases[i].ndim; d++) {
      CHECK (tensor->shape[d] == cases[i].shape[d], "%s: dim %d is %lld",
          cases[i].name, d, (long long)tensor->shape[d]);
      numel *= (uint64_t)cases[i].shape[d];
    }
    CHECK (gt_st_numel (tensor) == numel, "%s: numel %llu", cases[i].name,
        (unsigned long long)gt_st_numel (tensor));
    CHECK (tensor->end - tensor->begin
            == numel * gt_st_dtype_size (cases[i].dtype),
        "%s: %llu bytes", cases[i].name,
        (unsigned long long)(tensor->end - tensor->begin));
    CHECK (numel == 0
            || memcmp (gt_st_data (file, tensor), cases[i].data,
                   numel * gt_st_dtype_size (cases[i].dtype))
                == 0,
        "%s: data differs", cases[i].name);
    /* Tensors lie in the order added, so only the data section is aligned. */
    CHECK (tensor->begin != 0 || (uintptr_t)gt_st_data (file, tensor) % 8 == 0,
        "%s: data section not 8-byte aligned", cases[i].name);
  }
  CHECK (gt_st_find (file, "absent") == NULL, "found an absent tensor");
  CHECK (gt_st_tensor (file, num_cases) == NULL, "tensor past the end");
  CHECK (gt_st_tensor (file, -1) == NULL, "tensor -1");
  CHECK (gt_st_metadata (file, "format") != NULL
          && strcmp (gt_st_metadata (file, "format"), "pt") == 0,
      "format metadata");
  CHECK (gt_st_metadata (file, "note") != NULL
          && strcmp (gt_st_metadata (file, "note"), note) == 0,
      "note metadata \"%s\"", gt_st_metadata (file, "note"));
  CHECK (gt_st_metadata (file, weird_name) != NULL
          && strcmp (gt_st_metadata (file, weird_name), "w") == 0,
      "escaped metadata key");
  CHECK (gt_st_metadata (file, "absent") == NULL, "absent metadata");
  CHECK (gt_st_num_metadata (file) == 3, "%d metadata entries",
      gt_st_num_metadata (file));
  CHECK (gt_st_metadata_key (file, 0) != NULL
          && strcmp (gt_st_metadata_key (file, 0), "format") == 0
          && strcmp (gt_st_metadata_key (file, 1), "note") == 0
          && strcmp (gt_st_metadata_key (file, 2), weird_name) == 0
          && gt_st_metadata_key (file, 3) == NULL
          && gt_st_metadata_key (file, -1) == NULL,
      "metadata keys out of order");
  gt_st_close (file);
}

/* A file laid out byte by byte as the reference implementation writes it,
 * including escapes the writer never produces (\/, \u, surrogate pairs). */
static void
test_reference_layout (void)
{
  static const char json[] =
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
      "\"__metadata__\":{\"format\":\"pt\"}, \"x\\/\\u00e9\\ud83d\\ude00\" : "
      "{ \"data_offsets\" : [ 8 , 10 ] , \"shape\" : [ ] , \"extra\" : "
      "[{\"k\":[true,false,null,-1.5e3,\"s\"]}], \"dtype\" : \"I16\" } }";
  const char *path = scratch_path ("reference.safetensors");
  unsigned char bytes[8 + sizeof (json) + 16];
  size_t json_size = sizeof (json) - 1, i;
  const float values[2] = { 1.0f, -0.5f };
  const GtStTensor *tensor;
  char why[512] = "";
  GtStFile *file;
  float read_values[2];

  memset (bytes, 0, sizeof (bytes));
  for (i = 0; i < 8; i++)
    bytes[i] = (unsigned char)(json_size >> (8 * i));
  memcpy (bytes + 8, json, json_size);
  /* Little-endian floats 1.0 and -0.5, then int16 -2. */
  memcpy (
      bytes + 8 + json_size, "\x00\x00\x80\x3f\x00\x00\x00\xbf\xfe\xff", 10);
  CHECK (write_bytes (path, bytes, 8 + json_size + 10) == 0, "write");
  file = gt_st_open (path, why, sizeof (why));
  CHECK (file != NULL, "%s", why);
  if (file == NULL)
    return;
  CHECK (gt_st_num_tensors (file) == 2, "%d tensors", gt_st_num_tensors (file));
  tensor = gt_st_find (file, "a");
  CHECK (tensor != NULL && tensor == gt_st_tensor (file, 0)
          && tensor->dtype == GT_ST_F32 && tensor->ndim == 1
          && tensor->shape[0] == 2 && gt_st_numel (tensor) == 2,
      "tensor a");
  if (tensor != NULL) {
    memcpy (read_values, gt_st_data (file, tensor), sizeof (read_values));
    CHECK (memcmp (read_values, values, sizeof (values)) == 0, "a = %g %g",
        read_values[0], read_values[1]);
  }
  tensor = gt_st_find (file, "x/\xc3\xa9\xf0\x9f\x98\x80");
  CHECK (tensor != NULL && tensor == gt_st_tensor (file, 1)
          && tensor->dtype == GT_ST_I16 && tensor->ndim == 0
          && gt_st_numel (tensor) == 1
          && memcmp (gt_st_data (file, tensor), "\xfe\xff", 2) == 0,
      "escaped scalar tensor");
  CHECK (gt_st_metadata (file, "format") != NULL
          && strcmp (gt_st_metadata (file, "format"), "pt") == 0,
      "metadata");
  gt_st_close (file);
}

static void
test_truncations (void)
{
  const char *path = scratch_path ("whole.safetensors");
  const char *cut_path = scratch_path ("cut.safetensors");
  static const int64_t shape[2] = { 3, 2 };
  static const int32_t values[6] = { 1, 2, 3, 4, 5, 6 };
  GtStWriter *writer = gt_st_writer_new ();
  unsigned char *bytes;
  char why[512] = "";
  GtStFile *file;
  size_t size = 0, length;

  gt_st_writer_add (writer, "values", GT_ST_I32, 2, shape, values);
  gt_st_writer_add (writer, "byte", GT_ST_U8, 0, NULL, "x");
  gt_st_writer_set_metadata (writer, "k", "v");
  CHECK (gt_st_writer_write (writer, path, why, sizeof (why)) == 0, "%s", why);
  gt_st_writer_free (writer);
  bytes = read_bytes (path, &size);
  CHECK (bytes != NULL, "read %s", path);
  if (bytes == NULL)
    return;
  for (length = 0; length < size; length++) {
    CHECK (write_bytes (cut_path, bytes, length) == 0, "write");
    why[0] = '\0';
    file = gt_st_open (cut_path, why, sizeof (why));
    CHECK (file == NULL, "a %zu-byte truncation of %zu opened", length, size);
    CHECK (
        strstr (why, cut_path) != NULL, "message \"%s\" lacks the path", why);
    gt_st_close (file);
  }
  free (bytes);
}

static void
test_corrupt_headers (void)
{
  static const struct
  {
    const char *json;
    size_t data_size;
    const char *expected;
  } cases[] = {
    { "", 0, "not valid JSON" },
    { "   ", 0, "not valid JSON" },
    { "[]", 0, "expected '{'" },
    { "{\"a\":{\"dtype\":\"F32\",}", 0, "not valid JSON" },
    { "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}", 4,
        "expected ',' or '}'" },
    { "{} x", 0, "after the header" },
    { "{\"a\" {}}", 0, "expected ':'" },
    { "{\"a\":{\"dtype\":\"F8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
        "unknown dtype \"F8\"" },
    { "{\"a\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
        "dtype is not a string" },
    { "{\"a\":{\"dtype\":\"U8\",\"shape\":[-1],\"data_offsets\":[0,0]}}", 0,
        "negative dimension" },
    { "{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],"
      "\"data_offsets\":[0,1]}}",
        1, "9 dimensions" },
    { "{\"a\":{\"dtype\":\"U8\",\"shape\":[4294967296,4294967296,16],"
      "\"data_offsets\":[0,1]}}",
        1, "element count overflows" },
    { "{\"a\":{\"dtype\":\"F64\",\"shape\":[2305843009213693952],"
      "\"data_offsets\":[0,1]}}",
        1, "byte size overflows" },
    { "{\"a\":{\"dtype\":\"U8\",\"shape\":[2.0],\"data_offsets\":[0,2]}}", 2,
        "not a fraction" },
    { "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2e0]}}", 2,
        "not a fraction" },
    { "{\"a\":{\"dtype\":\"U8\",\"shape\":[02],\"data_offsets\":[0,2]}}", 2,
        "leading zero" },
    { "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],"
      "\"data_offsets\":[0,99999999999999999999]}}",
        1, "out of range" },
    { "{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[2,1]}}", 2,
        "is after end" },
    { "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1,2]}}", 2,
        "not two" },
    { "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[-1,0]}}", 2,
        "negative data_offsets" },
    { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4,
        "past the end of the 4-byte data section" },
    { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 8,
        "need 8" },
    { "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
      "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
        2, "duplicate tensor name \"a\"" },
    { "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
      "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}}",
        4, "overlap" },
    { "{\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,8]},"
      "\"c\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[6,6]},"
      "\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}",
        8, "overlap" },
    { "{\"a\":{\"dtype\":\"U8\",\"dtype\":\"U8\",\"shape\":[1],"
      "\"data_offsets\":[0,1]}}",
        1, "duplicate \"dtype\"" },
    { "{\"a\":{\"dtype\":\"U8\",\"shape\":[1]}}", 1,
        "missing \"data_offsets\"" },
    { "{\"a\":[]}", 0, "not an object" },
    { "{\"__metadata__\":{\"k\":1}}", 0, "not a string" },
    { "{\"__metadata__\":{\"k\":\"v\",\"k\":\"w\"}}", 0,
        "duplicate metadata key" },
    { "{\"__metadata__\":{},\"__metadata__\":{}}", 0,
        "duplicate __metadata__" },
    { "{\"\xff\":{}}", 0, "not valid UTF-8" },
    { "{\"\xc0\xaf\":{}}", 0, "not valid UTF-8" },
    { "{\"\\ud800\":{}}", 0, "unpaired" },
    { "{\"\\udc00x\":{}}", 0, "unpaired" },
    { "{\"\\ud800\\u0041\":{}}", 0, "unpaired" },
    { "{\"\\u12\":{}}", 0, "bad \\u escape" },
    { "{\"\\x\":{}}", 0, "bad escape" },
    { "{\"\\u0000\":{}}", 0, "NUL" },
    { "{\"a\nb\":{}}", 0, "control character" },
    { "{\"abc", 0, "unterminated string" },
    { "{\"abc\\", 0, "unterminated string" },
    { "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],"
      "\"x\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]"
      "]]]]]]]]]]]]]]]}}",
        1, "nested too deeply" },
    { "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],"
      "\"x\":nope}}",
        1, "expected a value" },
  };
  const int num_cases = (int)(sizeof (cases) / sizeof (cases[0]));
  const char *path = scratch_path ("corrupt.safetensors");
  unsigned char size_field[16];
  char why[512];
  GtStFile *file;
  int i;

  for (i = 0; i < num_cases; i++) {
    write_with_header (path, cases[i].json, cases[i].data_size);
    why[0] = '\0';
    file = gt_st_open (path, why, sizeof (why));
    CHECK (file == NULL, "case %d (%s) opened", i, cases[i].json);
    CHECK (
        strstr (why, cases[i].expected) != NULL && strstr (why, path) != NULL,
        "case %d: \"%s\" lacks \"%s\"", i, why, cases[i].expected);
    gt_st_close (file);
  }

  /* Size fields that must not be trusted for an allocation. */
  memset (size_field, 0, sizeof (size_field));
  size_field[5] = 1; /* 2^40 */
  CHECK (write_bytes (path, size_field, sizeof (size_field)) == 0, "write");
  file = gt_st_open (path, why, sizeof (why));
  CHECK (file == NULL && strstr (why, "limit") != NULL, "2^40: %s", why);
  gt_st_close (file);
  memset (size_field, 0xff, 8);
  CHECK (write_bytes (path, size_field, sizeof (size_field)) == 0, "write");
  file = gt_st_open (path, why, sizeof (why));
  CHECK (file == NULL && strstr (why, "limit") != NULL, "2^64-1: %s", why);
  gt_st_close (file);
  memset (size_field, 0, sizeof (size_field));
  size_field[0] = 9;
  CHECK (write_bytes (path, size_field, sizeof (size_field)) == 0, "write");
  file = gt_st_open (path, why, sizeof (why));
  CHECK (file == NULL && strstr (why, "past the end") != NULL, "9: %s", why);
  gt_st_close (file);
  CHECK (write_bytes (path, size_field, 3) == 0, "write");
  file = gt_st_open (path, why, sizeof (why));
  CHECK (file == NULL && strstr (why, "shorter") != NULL, "3 bytes: %s", why);
  gt_st_close (file);
  file = gt_st_open (scratch_path ("absent"), why, sizeof (why));
  CHECK (file == NULL && strstr (why, "No such file") != NULL, "%s", why);
  file = gt_st_open (scratch, why, sizeof (why));
  CHECK (file == NULL && strstr (why, "not a regular file") != NULL, "%s", why);
}

/* Opens @path and checks that it holds exactly one U8 tensor @name with
 * @size bytes equal to @fill. */
static void
check_single_tensor (const char *path, const char *name, size_t size, int fill)
{
  char why[512] = "";
  GtStFile *file = gt_st_open (path, why, sizeof (why));
  const GtStTensor *tensor;
  const unsigned char *data;
  size_t i;

  CHECK (file != NULL, "%s", why);
  if (file == NULL)
    return;
  tensor = gt_st_find (file, name);
  CHECK (gt_st_num_tensors (file) == 1 && tensor != NULL
          && gt_st_numel (tensor) == size,
      "%s does not hold %s", path, name);
  if (tensor != NULL && gt_st_numel (tensor) == size) {
    data = gt_st_data (file, tensor);
    for (i = 0; i < size && data[i] == fill; i++)
      ;
    CHECK (i == size, "%s: byte %zu differs", name, i);
  }
  gt_st_close (file);
}

static int
write_single_tensor (
    const char *path, const char *name, size_t size, char *why, size_t why_size)
{
  GtStWriter *writer = gt_st_writer_new ();
  unsigned char *data = malloc (size);
  int64_t shape[1] = { (int64_t)size };
  int rc;

  memset (data, name[0], size);
  gt_st_writer_add (writer, name, GT_ST_U8, 1, shape, data);
  rc = gt_st_writer_write (writer, path, why, why_size);
  gt_st_writer_free (writer);
  free (data);
  return rc;
}

static void
test_atomic_write (void)
{
  char directory[4200], path[4300], names[1024], why[512];
  struct rlimit old_limit, limit;
  struct stat st;
  int count;

  snprintf (directory, sizeof (directory), "%s", scratch_path ("atomic"));
  CHECK (mkdir (directory, 0700) == 0, "mkdir %s", directory);

  /* Into a missing directory: an error naming the path, and nothing made. */
  snprintf (path, sizeof (path), "%s/missing/x.safetensors", directory);
  why[0] = '\0';
  CHECK (write_single_tensor (path, "a", 16, why, sizeof (why)) == -1,
      "wrote into a missing directory");
  CHECK (strstr (why, path) != NULL && strstr (why, "No such file") != NULL,
      "message \"%s\"", why);
  count = list_directory (directory, names, sizeof (names));
  CHECK (count == 0, "left behind: %s", names);

  /* Over an existing file: replaced, with no temporary file left. */
  snprintf (path, sizeof (path), "%s/x.safetensors", directory);
  CHECK (
      write_single_tensor (path, "a", 16, why, sizeof (why)) == 0, "%s", why);
  CHECK (
      write_single_tensor (path, "b", 1000, why, sizeof (why)) == 0, "%s", why);
  check_single_tensor (path, "b", 1000, 'b');
  count = list_directory (directory, names, sizeof (names));
  CHECK (
      count == 1 && strcmp (names, "x.safetensors ") == 0, "left: %s", names);
  CHECK (stat (path, &st) == 0 && (st.st_mode & 0777) == 0644, "mode %o",
      (unsigned)st.st_mode);

  /* A write that fails part way (file size limit) leaves the old file. */
  signal (SIGXFSZ, SIG_IGN);
  CHECK (getrlimit (RLIMIT_FSIZE, &old_limit) == 0, "getrlimit");
  limit = old_limit;
  limit.rlim_cur = 4096;
  CHECK (setrlimit (RLIMIT_FSIZE, &limit) == 0, "setrlimit");
  why[0] = '\0';
  count = write_single_tensor (path, "c", 65536, why, sizeof (why));
  setrlimit (RLIMIT_FSIZE, &old_limit);
  signal (SIGXFSZ, SIG_DFL);
  CHECK (count == -1, "wrote past the file size limit");
  CHECK (strstr (why, path) != NULL && strstr (why, strerror (EFBIG)) != NULL,
      "message \"%s\"", why);
  check_single_tensor (path, "b", 1000, 'b');
  count = list_directory (directory, names, sizeof (names));
  CHECK (count == 1, "left: %s", names);

  /* A rename that fails (the target is a directory) removes the temporary. */
  snprintf (path, sizeof (path), "%s/sub", directory);
  CHECK (mkdir (path, 0700) == 0, "mkdir %s", path);
  why[0] = '\0';
  CHECK (write_single_tensor (path, "d", 8, why, sizeof (why)) == -1,
      "renamed over a directory");
  CHECK (strstr (why, "rename") != NULL, "message \"%s\"", why);
  count = list_directory (directory, names, sizeof (names));
  CHECK (count == 2, "left: %s", names);
}

int
main (int argc, char **argv)
{
  snprintf (scratch, sizeof (scratch), "%s/safetensors-test-XXXXXX",
      argc > 1 ? argv[1] : "/tmp");
  if (mkdtemp (scratch) == NULL) {
    fprintf (stderr, "FAIL: cannot create %s: %s\n", scratch, strerror (errno));
    return 1;
  }
  test_round_trip ();
  test_reference_layout ();
  test_truncations ();
  test_corrupt_headers ();
  test_atomic_write ();
  remove_tree (scratch);
  if (failures > 0) {
    fprintf (stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf ("ok: safetensors\n");
  return 0;
}
