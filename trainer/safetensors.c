/* safetensors.c: the safetensors reader (a read-only mapping checked by a
 * small JSON parser that accepts only what the format needs) and the atomic
 * writer declared in safetensors.h. */
#include "safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The reference implementation's limit; it also bounds what a hostile header
 * can make the parser allocate. */
#define MAX_HEADER_SIZE 100000000u
/* The top-level object and a tensor entry take two levels; the rest is for
 * unknown fields, which are skipped recursively and must not exhaust the
 * stack. */
#define MAX_JSON_DEPTH 32

#define PRINTF_LIKE(f, a) __attribute__ ((format (printf, f, a)))

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

typedef struct
{
  char *key;
  char *value;
} MetadataEntry;

struct GtStFile
{
  void *map;
  size_t map_size;
  const unsigned char *data;
  uint64_t data_size;
  GtStTensor *tensors; /* header order */
  int num_tensors;
  const GtStTensor **by_name; /* sorted, for gt_st_find */
  MetadataEntry *metadata;    /* sorted by key */
  int num_metadata;
};

typedef struct
{
  GtStTensor info; /* owns info.name; begin and end as it will be written */
  const void *data;
} PendingTensor;

struct GtStWriter
{
  PendingTensor *tensors;
  int num_tensors, tensor_capacity;
  MetadataEntry *metadata;
  int num_metadata, metadata_capacity;
};

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

static PRINTF_LIKE (3, 4) void report (
    char *why, size_t why_size, const char *format, ...)
{
  va_list args;

  if (why == NULL || why_size == 0)
    return;
  va_start (args, format);
  vsnprintf (why, why_size, format, args);
  va_end (args);
}

/* @items with room for one more of @count, doubling so that appending stays
 * linear; NULL (with @items untouched) when out of memory. */
static void *
grow (void *items, int count, int *capacity, size_t item_size)
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

/* Offset of the first byte of @s that is not part of valid UTF-8 (no
 * overlong forms, surrogates or code points above U+10FFFF), or @n. */
static size_t
find_invalid_utf8 (const unsigned char *s, size_t n)
{
  size_t i = 0, length, k;
  uint32_t code, min;

  while (i < n) {
    if (s[i] < 0x80) {
      i++;
      continue;
    } else if ((s[i] & 0xe0) == 0xc0) {
      length = 2, code = s[i] & 0x1f, min = 0x80;
    } else if ((s[i] & 0xf0) == 0xe0) {
      length = 3, code = s[i] & 0x0f, min = 0x800;
    } else if ((s[i] & 0xf8) == 0xf0) {
      length = 4, code = s[i] & 0x07, min = 0x10000;
    } else {
      return i;
    }
    if (n - i < length)
      return i;
    for (k = 1; k < length; k++) {
      if ((s[i + k] & 0xc0) != 0x80)
        return i;
      code = (code << 6) | (s[i + k] & 0x3f);
    }
    if (code < min || code > 0x10ffff || (code >= 0xd800 && code < 0xe000))
      return i;
    i += length;
  }
  return n;
}

static bool
is_utf8 (const char *s)
{
  size_t n = strlen (s);

  return find_invalid_utf8 ((const unsigned char *)s, n) == n;
}

/* ---- Reading ---------------------------------------------------------- */

typedef struct
{
  const char *start, *pos, *end;
  int depth;
  uint64_t data_size;
  char message[320];
} Parser;

/* Records the first problem only: later ones are consequences of it. */
static PRINTF_LIKE (2, 3) int parse_fail (Parser *ps, const char *format, ...)
{
  va_list args;

  if (ps->message[0] == '\0') {
    va_start (args, format);
    vsnprintf (ps->message, sizeof (ps->message), format, args);
    va_end (args);
  }
  return -1;
}

static int
syntax_error (Parser *ps, const char *what)
{
  return parse_fail (ps, "header is not valid JSON at byte %zu: %s",
      (size_t)(ps->pos - ps->start), what);
}

/* The next significant character, or '\0' at the end (a NUL byte is never
 * valid JSON outside a string, so it cannot be mistaken for one). */
static char
peek (Parser *ps)
{
  while (ps->pos < ps->end
      && (*ps->pos == ' ' || *ps->pos == '\t' || *ps->pos == '\n'
          || *ps->pos == '\r'))
    ps->pos++;
  return ps->pos < ps->end ? *ps->pos : '\0';
}

static int
expect (Parser *ps, char c, const char *what)
{
  if (peek (ps) != c)
    return syntax_error (ps, what);
  ps->pos++;
  return 0;
}

/* Steps to the next element of an array or object whose opening bracket has
 * been consumed: 1 when one follows, 0 after @close, -1 on error. */
static int
next_item (Parser *ps, char close, bool *first)
{
  char c = peek (ps);

  if (c == close) {
    ps->pos++;
    return 0;
  }
  if (!*first) {
    if (c != ',')
      return syntax_error (
          ps, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
    ps->pos++;
  }
  *first = false;
  return 1;
}

static int
read_hex4 (const char *p, const char *end, uint32_t *code)
{
  int i;

  *code = 0;
  if (end - p < 4)
    return -1;
  for (i = 0; i < 4; i++) {
    char c = p[i];
    int digit = c >= '0' && c <= '9' ? c - '0'
        : c >= 'a' && c <= 'f'       ? c - 'a' + 10
        : c >= 'A' && c <= 'F'       ? c - 'A' + 10
                                     : -1;
    if (digit < 0)
      return -1;
    *code = (*code << 4) | (uint32_t)digit;
  }
  return 0;
}

static char *
put_utf8 (char *out, uint32_t code)
{
  static const unsigned char lead[] = { 0x00, 0xc0, 0xe0, 0xf0 };
  int extra = code < 0x80 ? 0 : code < 0x800 ? 1 : code < 0x10000 ? 2 : 3;

  *out++ = (char)(lead[extra] | (code >> (6 * extra)));
  while (extra-- > 0)
    *out++ = (char)(0x80 | ((code >> (6 * extra)) & 0x3f));
  return out;
}

/* Decodes a string into a new NUL-terminated buffer in *out. */
static int
parse_string (Parser *ps, char **out)
{
  static const char escapes[] = "\"\\/bfnrt";
  const char *close, *p, *problem, *escape;
  char *text, *w;
  uint32_t code, low;

  if (expect (ps, '"', "expected a string") < 0)
    return -1;
  /* Finding the end first bounds the allocation by the string's own length;
   * decoding never makes it longer. */
  for (close = ps->pos; close < ps->end && *close != '"'; close++)
    if (*close == '\\' && close + 1 < ps->end)
      close++;
  if (close >= ps->end)
    return syntax_error (ps, "unterminated string");
  text = w = malloc ((size_t)(close - ps->pos) + 1);
  if (text == NULL)
    return parse_fail (ps, "out of memory");
  for (p = ps->pos; p < close; ps->pos = p) {
    if ((unsigned char)*p < 0x20) {
      problem = "control character in string";
      goto fail;
    }
    if (*p != '\\') {
      *w++ = *p++;
      continue;
    }
    escape = p[1] != '\0' ? strchr (escapes, p[1]) : NULL;
    if (escape != NULL) {
      *w++ = "\"\\/\b\f\n\r\t"[escape - escapes];
      p += 2;
      continue;
    }
    problem = "bad escape in string";
    if (p[1] != 'u')
      goto fail;
    problem = "bad \\u escape in string";
    if (read_hex4 (p + 2, close, &code) < 0)
      goto fail;
    problem = "unpaired UTF-16 surrogate in string";
    if (code >= 0xd800 && code < 0xdc00) {
      if (close - p < 12 || p[6] != '\\' || p[7] != 'u'
          || read_hex4 (p + 8, close, &low) < 0 || low < 0xdc00
          || low >= 0xe000)
        goto fail;
      code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
      p += 6;
    } else if (code >= 0xdc00 && code < 0xe000) {
      goto fail;
    } else if (code == 0) {
      /* Names and values are handed out as C strings. */
      problem = "\\u0000 (NUL) in string";
      goto fail;
    }
    w = put_utf8 (w, code);
    p += 6;
  }
  *w = '\0';
  ps->pos = close + 1;
  *out = text;
  return 0;
fail:
  free (text);
  return syntax_error (ps, problem);
}

/* Parses "key":, leaving the decoded key in *key. */
static int
parse_key (Parser *ps, char **key)
{
  if (parse_string (ps, key) < 0)
    return -1;
  if (expect (ps, ':', "expected ':'") < 0) {
    free (*key);
    return -1;
  }
  return 0;
}

static int
parse_int (Parser *ps, int64_t *out)
{
  bool negative = false;
  uint64_t magnitude = 0;
  const char *digits;

  if (peek (ps) == '-') {
    negative = true;
    ps->pos++;
  }
  digits = ps->pos;
  for (; ps->pos < ps->end && *ps->pos >= '0' && *ps->pos <= '9'; ps->pos++) {
    if (magnitude > (uint64_t)INT64_MAX / 10)
      break;
    magnitude = magnitude * 10 + (uint64_t)(*ps->pos - '0');
  }
  if (ps->pos == digits)
    return syntax_error (ps, "expected an integer");
  if (*digits == '0' && ps->pos - digits > 1)
    return syntax_error (ps, "integer with a leading zero");
  if (ps->pos < ps->end
      && (*ps->pos == '.' || *ps->pos == 'e' || *ps->pos == 'E'))
    return syntax_error (ps, "expected an integer, not a fraction");
  if (magnitude > INT64_MAX
      || (ps->pos < ps->end && *ps->pos >= '0' && *ps->pos <= '9'))
    return parse_fail (ps, "integer at header byte %zu is out of range",
        (size_t)(digits - ps->start));
  *out = negative ? -(int64_t)magnitude : (int64_t)magnitude;
  return 0;
}

/* Parses an array of integers, storing at most @max of them but counting all
 * in *count so that the caller can say how many there were. */
static int
parse_int_array (Parser *ps, int64_t *values, int max, int *count)
{
  bool first = true;
  int64_t value = 0;
  int more;

  if (expect (ps, '[', "expected an array") < 0)
    return -1;
  *count = 0;
  while ((more = next_item (ps, ']', &first)) == 1) {
    if (parse_int (ps, &value) < 0)
      return -1;
    if (*count < max)
      values[*count] = value;
    (*count)++;
  }
  return more;
}

/* Skips any JSON value, for fields this reader does not know. */
static int
skip_value (Parser *ps)
{
  static const char *const literals[] = { "true", "false", "null" };
  char c = peek (ps), close, *text;
  bool first = true;
  size_t length;
  int more, i;

  if (c == '"') {
    if (parse_string (ps, &text) < 0)
      return -1;
    free (text);
    return 0;
  }
  if (c == '{' || c == '[') {
    if (ps->depth >= MAX_JSON_DEPTH)
      return syntax_error (ps, "nested too deeply");
    ps->depth++;
    ps->pos++;
    close = c == '{' ? '}' : ']';
    while ((more = next_item (ps, close, &first)) == 1) {
      if (c == '{') {
        if (parse_key (ps, &text) < 0)
          return -1;
        free (text);
      }
      if (skip_value (ps) < 0)
        return -1;
    }
    ps->depth--;
    return more;
  }
  if (c == '-' || (c >= '0' && c <= '9')) {
    /* Lenient: the value is ignored, only its extent matters. */
    while (ps->pos < ps->end && strchr ("+-.eE0123456789", *ps->pos) != NULL
        && *ps->pos != '\0')
      ps->pos++;
    return 0;
  }
  for (i = 0; i < 3; i++) {
    length = strlen (literals[i]);
    if ((size_t)(ps->end - ps->pos) >= length
        && memcmp (ps->pos, literals[i], length) == 0) {
      ps->pos += length;
      return 0;
    }
  }
  return syntax_error (ps, "expected a value");
}

static int
parse_dtype (Parser *ps, GtStTensor *tensor)
{
  char *name;
  int i;

  if (peek (ps) != '"')
    return parse_fail (
        ps, "tensor \"%.80s\": dtype is not a string", tensor->name);
  if (parse_string (ps, &name) < 0)
    return -1;
  for (i = 0; i < NUM_DTYPES; i++) {
    if (strcmp (name, dtype_info[i].name) == 0) {
      tensor->dtype = (GtStDtype)i;
      free (name);
      return 0;
    }
  }
  parse_fail (
      ps, "tensor \"%.80s\": unknown dtype \"%.16s\"", tensor->name, name);
  free (name);
  return -1;
}

/* Checks what needs the whole entry: shape against dtype and offsets, and
 * offsets against the data section. */
static int
check_tensor (Parser *ps, const GtStTensor *tensor)
{
  uint64_t numel = 1, dim, size = gt_st_dtype_size (tensor->dtype);
  int i;

  if (tensor->ndim > GT_ST_MAX_DIMS)
    return parse_fail (ps,
        "tensor \"%.80s\": shape has %d dimensions, more "
        "than %d",
        tensor->name, tensor->ndim, GT_ST_MAX_DIMS);
  for (i = 0; i < tensor->ndim; i++) {
    if (tensor->shape[i] < 0)
      return parse_fail (ps, "tensor \"%.80s\": negative dimension %" PRId64,
          tensor->name, tensor->shape[i]);
    dim = (uint64_t)tensor->shape[i];
    if (dim != 0 && numel > UINT64_MAX / dim)
      return parse_fail (
          ps, "tensor \"%.80s\": element count overflows", tensor->name);
    numel *= dim;
  }
  if (numel > UINT64_MAX / size)
    return parse_fail (
        ps, "tensor \"%.80s\": byte size overflows", tensor->name);
  if (tensor->begin > tensor->end)
    return parse_fail (ps,
        "tensor \"%.80s\": data_offsets begin %" PRIu64
        " is after end %" PRIu64,
        tensor->name, tensor->begin, tensor->end);
  if (tensor->end > ps->data_size)
    return parse_fail (ps,
        "tensor \"%.80s\": data_offsets end %" PRIu64
        " is past the end of the %" PRIu64 "-byte data section",
        tensor->name, tensor->end, ps->data_size);
  if (tensor->end - tensor->begin != numel * size)
    return parse_fail (ps,
        "tensor \"%.80s\": data_offsets span %" PRIu64
        " bytes but dtype and shape need %" PRIu64,
        tensor->name, tensor->end - tensor->begin, numel * size);
  return 0;
}

static int
parse_tensor (Parser *ps, GtStTensor *tensor)
{
  bool first = true, have_dtype = false, have_shape = false;
  bool have_offsets = false;
  int64_t offsets[2] = { 0, 0 };
  int more, count, rc;
  char *field;

  if (peek (ps) != '{')
    return parse_fail (
        ps, "tensor \"%.80s\": entry is not an object", tensor->name);
  ps->pos++;
  while ((more = next_item (ps, '}', &first)) == 1) {
    if (parse_key (ps, &field) < 0)
      return -1;
    if (strcmp (field, "dtype") == 0 && !have_dtype) {
      have_dtype = true;
      rc = parse_dtype (ps, tensor);
    } else if (strcmp (field, "shape") == 0 && !have_shape) {
      have_shape = true;
      rc = parse_int_array (ps, tensor->shape, GT_ST_MAX_DIMS, &tensor->ndim);
    } else if (strcmp (field, "data_offsets") == 0 && !have_offsets) {
      have_offsets = true;
      rc = parse_int_array (ps, offsets, 2, &count);
      if (rc == 0 && count != 2)
        rc = parse_fail (ps,
            "tensor \"%.80s\": data_offsets has %d "
            "entries, not two",
            tensor->name, count);
      else if (rc == 0 && (offsets[0] < 0 || offsets[1] < 0))
        rc = parse_fail (
            ps, "tensor \"%.80s\": negative data_offsets", tensor->name);
      tensor->begin = (uint64_t)offsets[0];
      tensor->end = (uint64_t)offsets[1];
    } else if (strcmp (field, "dtype") == 0 || strcmp (field, "shape") == 0
        || strcmp (field, "data_offsets") == 0) {
      rc = parse_fail (
          ps, "tensor \"%.80s\": duplicate \"%s\" field", tensor->name, field);
    } else {
      rc = skip_value (ps);
    }
    free (field);
    if (rc < 0)
      return -1;
  }
  if (more < 0)
    return -1;
  if (!have_dtype || !have_shape || !have_offsets)
    return parse_fail (ps, "tensor \"%.80s\": missing \"%s\" field",
        tensor->name,
        !have_dtype       ? "dtype"
            : !have_shape ? "shape"
                          : "data_offsets");
  return check_tensor (ps, tensor);
}

static int
parse_metadata (Parser *ps, GtStFile *file)
{
  bool first = true;
  int more, capacity = 0;
  char *key, *value;
  MetadataEntry *larger;

  if (expect (ps, '{', "expected an object for __metadata__") < 0)
    return -1;
  while ((more = next_item (ps, '}', &first)) == 1) {
    if (parse_key (ps, &key) < 0)
      return -1;
    if (peek (ps) != '"' || parse_string (ps, &value) < 0) {
      parse_fail (ps, "metadata value for \"%.80s\" is not a string", key);
      free (key);
      return -1;
    }
    larger = grow (
        file->metadata, file->num_metadata, &capacity, sizeof (MetadataEntry));
    if (larger == NULL) {
      free (key);
      free (value);
      return parse_fail (ps, "out of memory");
    }
    file->metadata = larger;
    file->metadata[file->num_metadata++] = (MetadataEntry){ key, value };
  }
  return more;
}

static int
parse_header (Parser *ps, GtStFile *file)
{
  bool first = true, have_metadata = false;
  int more, capacity = 0;
  GtStTensor *tensor;
  char *key;

  if (expect (ps, '{', "expected '{' at the start of the header") < 0)
    return -1;
  while ((more = next_item (ps, '}', &first)) == 1) {
    if (parse_key (ps, &key) < 0)
      return -1;
    if (strcmp (key, "__metadata__") == 0) {
      free (key);
      if (have_metadata)
        return parse_fail (ps, "duplicate __metadata__");
      have_metadata = true;
      if (parse_metadata (ps, file) < 0)
        return -1;
      continue;
    }
    tensor =
        grow (file->tensors, file->num_tensors, &capacity, sizeof (GtStTensor));
    if (tensor == NULL) {
      free (key);
      return parse_fail (ps, "out of memory");
    }
    file->tensors = tensor;
    tensor = &file->tensors[file->num_tensors++];
    memset (tensor, 0, sizeof (*tensor));
    tensor->name = key;
    if (parse_tensor (ps, tensor) < 0)
      return -1;
  }
  if (more < 0)
    return -1;
  if (peek (ps) != '\0' || ps->pos != ps->end)
    return syntax_error (ps, "unexpected text after the header object");
  return 0;
}

static int
compare_tensor_names (const void *a, const void *b)
{
  return strcmp ((*(const GtStTensor *const *)a)->name,
      (*(const GtStTensor *const *)b)->name);
}

static int
compare_tensor_ranges (const void *a, const void *b)
{
  const GtStTensor *x = *(const GtStTensor *const *)a;
  const GtStTensor *y = *(const GtStTensor *const *)b;

  if (x->begin != y->begin)
    return x->begin < y->begin ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end;
}

static int
compare_metadata_keys (const void *a, const void *b)
{
  return strcmp (
      ((const MetadataEntry *)a)->key, ((const MetadataEntry *)b)->key);
}

/* Sorting makes the duplicate and overlap checks O(n log n), which matters
 * for a hostile header with millions of entries. */
static int
check_layout (Parser *ps, GtStFile *file)
{
  size_t n = (size_t)file->num_tensors;
  const GtStTensor **by_range;
  size_t i;
  int rc = 0;

  file->by_name = malloc ((n + 1) * sizeof (*file->by_name));
  by_range = malloc ((n + 1) * sizeof (*by_range));
  if (file->by_name == NULL || by_range == NULL) {
    free (by_range);
    return parse_fail (ps, "out of memory");
  }
  for (i = 0; i < n; i++)
    file->by_name[i] = by_range[i] = &file->tensors[i];
  qsort (file->by_name, n, sizeof (*file->by_name), compare_tensor_names);
  qsort (by_range, n, sizeof (*by_range), compare_tensor_ranges);
  for (i = 1; i < n && rc == 0; i++) {
    if (strcmp (file->by_name[i - 1]->name, file->by_name[i]->name) == 0)
      rc = parse_fail (
          ps, "duplicate tensor name \"%.80s\"", file->by_name[i]->name);
    else if (by_range[i]->begin < by_range[i - 1]->end)
      rc = parse_fail (ps,
          "tensors \"%.80s\" and \"%.80s\" overlap in the "
          "data section",
          by_range[i - 1]->name, by_range[i]->name);
  }
  free (by_range);
  if (file->metadata != NULL)
    qsort (file->metadata, (size_t)file->num_metadata, sizeof (MetadataEntry),
        compare_metadata_keys);
  for (i = 1; i < (size_t)file->num_metadata && rc == 0; i++)
    if (strcmp (file->metadata[i - 1].key, file->metadata[i].key) == 0)
      rc = parse_fail (
          ps, "duplicate metadata key \"%.80s\"", file->metadata[i].key);
  return rc;
}

/* Checks the @size bytes at @bytes as a whole safetensors file and fills
 * @file from them: both gt_st_open and gt_st_open_memory end here. */
static int
parse_file (Parser *ps, GtStFile *file, const unsigned char *bytes, size_t size)
{
  uint64_t header_size = 0;
  size_t bad;
  int i;

  if (size < 8)
    return parse_fail (ps, "file is shorter than the 8-byte header size");
  for (i = 7; i >= 0; i--)
    header_size = (header_size << 8) | bytes[i];
  if (header_size > MAX_HEADER_SIZE)
    return parse_fail (ps, "header size %" PRIu64 " is over the %u-byte limit",
        header_size, MAX_HEADER_SIZE);
  if (header_size > size - 8)
    return parse_fail (ps,
        "header size %" PRIu64 " runs past the end of the "
        "%zu-byte file",
        header_size, size);
  bad = find_invalid_utf8 (bytes + 8, (size_t)header_size);
  if (bad < header_size)
    return parse_fail (ps, "header is not valid UTF-8 at byte %zu", bad);
  file->data = bytes + 8 + header_size;
  file->data_size = size - 8 - header_size;
  ps->start = ps->pos = (const char *)bytes + 8;
  ps->end = ps->start + header_size;
  ps->depth = 2;
  ps->data_size = file->data_size;
  if (parse_header (ps, file) < 0)
    return -1;
  return check_layout (ps, file);
}

GtStFile *
gt_st_open (const char *path, char *why, size_t why_size)
{
  Parser ps = { 0 };
  GtStFile *file;
  struct stat st;
  int fd;

  if (path == NULL) {
    report (why, why_size, "no path given");
    return NULL;
  }
  file = calloc (1, sizeof (*file));
  fd = open (path, O_RDONLY | O_CLOEXEC);
  if (file == NULL || fd < 0 || fstat (fd, &st) < 0) {
    parse_fail (&ps, "cannot open: %s", strerror (errno));
    goto fail;
  }
  if (!S_ISREG (st.st_mode) || st.st_size < 8
      || (uint64_t)st.st_size != (uint64_t)(size_t)st.st_size) {
    parse_fail (&ps, "%s",
        !S_ISREG (st.st_mode) ? "not a regular file"
            : st.st_size < 8  ? "file is shorter than the 8-byte header size"
                              : "file is too large to map");
    goto fail;
  }
  /* A mapping rather than a copy: checkpoints can be gigabytes, and the
   * writer replaces files by rename, so a mapped file never shrinks. */
  file->map = mmap (NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (file->map == MAP_FAILED) {
    file->map = NULL;
    parse_fail (&ps, "cannot map: %s", strerror (errno));
    goto fail;
  }
  file->map_size = (size_t)st.st_size;
  close (fd);
  fd = -1;

  if (parse_file (&ps, file, file->map, file->map_size) < 0)
    goto fail;
  return file;

fail:
  if (fd >= 0)
    close (fd);
  report (why, why_size, "%s: %s", path, ps.message);
  gt_st_close (file);
  return NULL;
}

GtStFile *
gt_st_open_memory (const void *bytes, size_t size, char *why, size_t why_size)
{
  Parser ps = { 0 };
  GtStFile *file;

  if (bytes == NULL && size > 0) {
    report (why, why_size, "(memory): no bytes given");
    return NULL;
  }
  file = calloc (1, sizeof (*file));
  if (file == NULL) {
    report (why, why_size, "(memory): out of memory");
    return NULL;
  }
  if (parse_file (&ps, file, bytes, size) < 0) {
    report (why, why_size, "(memory): %s", ps.message);
    gt_st_close (file);
    return NULL;
  }
  return file;
}

void
gt_st_close (GtStFile *file)
{
  int i;

  if (file == NULL)
    return;
  for (i = 0; i < file->num_tensors; i++)
    free ((char *)file->tensors[i].name);
  for (i = 0; i < file->num_metadata; i++) {
    free (file->metadata[i].key);
    free (file->metadata[i].value);
  }
  free (file->tensors);
  free (file->by_name);
  free (file->metadata);
  if (file->map != NULL)
    munmap (file->map, file->map_size);
  free (file);
}

int
gt_st_num_tensors (const GtStFile *file)
{
  return file != NULL ? file->num_tensors : 0;
}

const GtStTensor *
gt_st_tensor (const GtStFile *file, int index)
{
  if (file == NULL || index < 0 || index >= file->num_tensors)
    return NULL;
  return &file->tensors[index];
}

const GtStTensor *
gt_st_find (const GtStFile *file, const char *name)
{
  GtStTensor key = { .name = name };
  const GtStTensor *key_pointer = &key;
  const GtStTensor **found;

  if (file == NULL || name == NULL || file->num_tensors == 0)
    return NULL;
  found = bsearch (&key_pointer, file->by_name, (size_t)file->num_tensors,
      sizeof (*file->by_name), compare_tensor_names);
  return found != NULL ? *found : NULL;
}

const void *
gt_st_data (const GtStFile *file, const GtStTensor *tensor)
{
  if (file == NULL || tensor == NULL)
    return NULL;
  return file->data + tensor->begin;
}

uint64_t
gt_st_numel (const GtStTensor *tensor)
{
  uint64_t numel = 1;
  int i;

  for (i = 0; i < tensor->ndim; i++)
    numel *= (uint64_t)tensor->shape[i];
  return numel;
}

const char *
gt_st_metadata (const GtStFile *file, const char *key)
{
  MetadataEntry wanted = { (char *)key, NULL };
  const MetadataEntry *found;

  if (file == NULL || key == NULL || file->num_metadata == 0)
    return NULL;
  found = bsearch (&wanted, file->metadata, (size_t)file->num_metadata,
      sizeof (MetadataEntry), compare_metadata_keys);
  return found != NULL ? found->value : NULL;
}

int
gt_st_num_metadata (const GtStFile *file)
{
  return file != NULL ? file->num_metadata : 0;
}

const char *
gt_st_metadata_key (const GtStFile *file, int index)
{
  if (file == NULL || index < 0 || index >= file->num_metadata)
    return NULL;
  return file->metadata[index].key;
}

/* ---- Writing ---------------------------------------------------------- */

GtStWriter *
gt_st_writer_new (void)
{
  return calloc (1, sizeof (GtStWriter));
}

void
gt_st_writer_free (GtStWriter *writer)
{
  int i;

  if (writer == NULL)
    return;
  for (i = 0; i < writer->num_tensors; i++)
    free ((char *)writer->tensors[i].info.name);
  for (i = 0; i < writer->num_metadata; i++) {
    free (writer->metadata[i].key);
    free (writer->metadata[i].value);
  }
  free (writer->tensors);
  free (writer->metadata);
  free (writer);
}

int
gt_st_writer_add (GtStWriter *writer, const char *name, GtStDtype dtype,
    int ndim, const int64_t *shape, const void *data)
{
  uint64_t numel = 1, size = gt_st_dtype_size (dtype), begin = 0;
  PendingTensor *tensors, *tensor;
  int i;

  if (writer == NULL || name == NULL || size == 0 || ndim < 0
      || ndim > GT_ST_MAX_DIMS || (ndim > 0 && shape == NULL) || !is_utf8 (name)
      || strcmp (name, "__metadata__") == 0)
    return -1;
  for (i = 0; i < ndim; i++) {
    if (shape[i] < 0
        || (shape[i] != 0 && numel > UINT64_MAX / (uint64_t)shape[i]))
      return -1;
    numel *= (uint64_t)shape[i];
  }
  if (writer->num_tensors > 0)
    begin = writer->tensors[writer->num_tensors - 1].info.end;
  if (numel > (UINT64_MAX - begin) / size || (numel > 0 && data == NULL))
    return -1;
  for (i = 0; i < writer->num_tensors; i++)
    if (strcmp (writer->tensors[i].info.name, name) == 0)
      return -1;
  tensors = grow (writer->tensors, writer->num_tensors,
      &writer->tensor_capacity, sizeof (PendingTensor));
  if (tensors == NULL)
    return -1;
  writer->tensors = tensors;
  tensor = &tensors[writer->num_tensors];
  memset (tensor, 0, sizeof (*tensor));
  if ((tensor->info.name = strdup (name)) == NULL)
    return -1;
  tensor->info.dtype = dtype;
  tensor->info.ndim = ndim;
  if (ndim > 0)
    memcpy (tensor->info.shape, shape, (size_t)ndim * sizeof (*shape));
  tensor->info.begin = begin;
  tensor->info.end = begin + numel * size;
  tensor->data = data;
  writer->num_tensors++;
  return 0;
}

int
gt_st_writer_set_metadata (
    GtStWriter *writer, const char *key, const char *value)
{
  MetadataEntry *entries;
  char *copy;
  int i;

  if (writer == NULL || key == NULL || value == NULL || !is_utf8 (key)
      || !is_utf8 (value) || (copy = strdup (value)) == NULL)
    return -1;
  for (i = 0; i < writer->num_metadata; i++) {
    if (strcmp (writer->metadata[i].key, key) == 0) {
      free (writer->metadata[i].value);
      writer->metadata[i].value = copy;
      return 0;
    }
  }
  entries = grow (writer->metadata, writer->num_metadata,
      &writer->metadata_capacity, sizeof (MetadataEntry));
  if (entries != NULL)
    writer->metadata = entries;
  if (entries == NULL
      || (entries[writer->num_metadata].key = strdup (key)) == NULL) {
    free (copy);
    return -1;
  }
  entries[writer->num_metadata++].value = copy;
  return 0;
}

static void
put_json_string (FILE *out, const char *s)
{
  static const char escapes[] = "\"\\\b\f\n\r\t";
  const char *escape;

  fputc ('"', out);
  for (; *s != '\0'; s++) {
    if ((escape = strchr (escapes, *s)) != NULL)
      fprintf (out, "\\%c", "\"\\bfnrt"[escape - escapes]);
    else if ((unsigned char)*s < 0x20)
      fprintf (out, "\\u%04x", (unsigned)*s);
    else
      fputc (*s, out);
  }
  fputc ('"', out);
}

/* The JSON header, padded with spaces to a multiple of 8 bytes so that the
 * data section is 8-byte aligned in the file (as the reference writer does),
 * or NULL when out of memory. */
static char *
build_header (const GtStWriter *writer, size_t *length)
{
  char *text = NULL;
  FILE *out = open_memstream (&text, length);
  int i, d, failed;

  if (out == NULL)
    return NULL;
  fputc ('{', out);
  for (i = 0; i < writer->num_metadata; i++) {
    fputs (i == 0 ? "\"__metadata__\":{" : ",", out);
    put_json_string (out, writer->metadata[i].key);
    fputc (':', out);
    put_json_string (out, writer->metadata[i].value);
    if (i == writer->num_metadata - 1)
      fputc ('}', out);
  }
  for (i = 0; i < writer->num_tensors; i++) {
    const GtStTensor *tensor = &writer->tensors[i].info;

    if (i > 0 || writer->num_metadata > 0)
      fputc (',', out);
    put_json_string (out, tensor->name);
    fprintf (out, ":{\"dtype\":\"%s\",\"shape\":[",
        gt_st_dtype_name (tensor->dtype));
    for (d = 0; d < tensor->ndim; d++)
      fprintf (out, "%s%" PRId64, d > 0 ? "," : "", tensor->shape[d]);
    fprintf (out, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}",
        tensor->begin, tensor->end);
  }
  fputc ('}', out);
  while (ftell (out) > 0 && ftell (out) % 8 != 0)
    fputc (' ', out);
  failed = ferror (out);
  if (fclose (out) != 0 || failed) {
    free (text);
    return NULL;
  }
  return text;
}

/* Loops because write may store less than asked (signals, pipes, limits). */
static int
write_all (int fd, const void *data, uint64_t length)
{
  const char *p = data;
  ssize_t written;

  while (length > 0) {
    written = write (fd, p, length > (1u << 30) ? (1u << 30) : length);
    if (written < 0 && errno == EINTR)
      continue;
    if (written <= 0) {
      if (written == 0)
        errno = EIO;
      return -1;
    }
    p += written;
    length -= (uint64_t)written;
  }
  return 0;
}

/* Makes the rename durable; a file system that cannot sync directories
 * (EINVAL) has nothing more to do. */
static int
sync_directory_of (const char *path)
{
  const char *slash = strrchr (path, '/');
  char *directory;
  int fd, rc;

  if (slash == NULL)
    directory = strdup (".");
  else
    directory = strndup (path, slash == path ? 1 : (size_t)(slash - path));
  if (directory == NULL)
    return -1;
  fd = open (directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  free (directory);
  if (fd < 0)
    return -1;
  rc = fsync (fd) < 0 && errno != EINVAL ? -1 : 0;
  if (close (fd) < 0)
    rc = -1;
  return rc;
}

int
gt_st_writer_write (
    GtStWriter *writer, const char *path, char *why, size_t why_size)
{
  static const char suffix[] = ".tmp-XXXXXX";
  const char *step = "cannot build the header";
  unsigned char size_field[8];
  char *header = NULL, *temp_path = NULL;
  size_t header_length = 0;
  bool created = false, renamed = false;
  int fd = -1, i, rc, saved_errno;

  if (writer == NULL || path == NULL) {
    report (why, why_size, "%s: no writer or path", path ? path : "(null)");
    return -1;
  }
  errno = ENOMEM;
  header = build_header (writer, &header_length);
  temp_path = malloc (strlen (path) + sizeof (suffix));
  if (header == NULL || temp_path == NULL)
    goto fail;
  if (header_length > MAX_HEADER_SIZE) {
    errno = EFBIG;
    goto fail;
  }
  for (i = 0; i < 8; i++)
    size_field[i] = (unsigned char)((uint64_t)header_length >> (8 * i));
  strcpy (temp_path, path);
  strcat (temp_path, suffix);

  step = "cannot create a temporary file next to it";
  fd = mkstemp (temp_path);
  if (fd < 0)
    goto fail;
  created = true;
  /* mkstemp creates 0600; a checkpoint is shared like any other output. */
  step = "cannot write the temporary file";
  if (fchmod (fd, 0644) < 0 || write_all (fd, size_field, 8) < 0
      || write_all (fd, header, header_length) < 0)
    goto fail;
  for (i = 0; i < writer->num_tensors; i++)
    if (write_all (fd, writer->tensors[i].data,
            writer->tensors[i].info.end - writer->tensors[i].info.begin)
        < 0)
      goto fail;
  step = "cannot fsync the temporary file";
  if (fsync (fd) < 0)
    goto fail;
  step = "cannot close the temporary file";
  rc = close (fd);
  fd = -1; /* closed even when close reports an error */
  if (rc < 0)
    goto fail;
  step = "cannot rename the temporary file over it";
  if (rename (temp_path, path) < 0)
    goto fail;
  renamed = true;
  step = "replaced, but cannot fsync its directory";
  if (sync_directory_of (path) < 0)
    goto fail;
  free (header);
  free (temp_path);
  return 0;

fail:
  saved_errno = errno;
  if (fd >= 0)
    close (fd);
  if (created && !renamed)
    unlink (temp_path);
  report (why, why_size, "%s: %s: %s", path, step, strerror (saved_errno));
  free (header);
  free (temp_path);
  return -1;
}
