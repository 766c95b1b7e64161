/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* json-parse.h: a small JSON reader for text that must be checked before
 * it is trusted (the safetensors header, safetensors-read.c). It reads
 * strings (escapes decoded, NUL refused), integers (no fractions) and
 * arrays of them, walks objects and arrays an item at a time, and skips
 * any other value; the caller says which it expects next. Every function
 * returns -1 on a problem, of which the first is kept in the parser's
 * message (later ones are its consequences). */
#ifndef GT_JSON_PARSE_H
#define GT_JSON_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The deepest nesting gt_json_skip_value follows: unknown fields are
 * skipped recursively and must not exhaust the stack. */
#define GT_JSON_MAX_DEPTH 32

typedef struct
{
  const char *start, *pos, *end; /* the text, and where the reader is */
  int depth;                     /* objects and arrays open around pos */
  char message[320];             /* the first problem, or empty */
} GtJsonParser;

/* Records a problem (the first only) and returns -1. */
int gt_json_fail (GtJsonParser *ps, const char *format, ...)
    __attribute__ ((format (printf, 2, 3)));
/* gt_json_fail with "header is not valid JSON at byte N: @what". */
int gt_json_syntax_error (GtJsonParser *ps, const char *what);

/* The next significant character, after white space, or '\0' at the end
 * (a NUL byte is never valid JSON outside a string). */
char gt_json_peek (GtJsonParser *ps);
/* Consumes @c, or fails with @what. */
int gt_json_expect (GtJsonParser *ps, char c, const char *what);
/* Steps to the next element of an array or object whose opening bracket
 * has been consumed: 1 when one follows, 0 after @close, -1 on error;
 * *@first is true before the first element. */
int gt_json_next_item (GtJsonParser *ps, char close, bool *first);

/* A string, decoded into a new NUL-terminated buffer in *@out. */
int gt_json_parse_string (GtJsonParser *ps, char **out);
/* "key": with the decoded key in *@key. */
int gt_json_parse_key (GtJsonParser *ps, char **key);
/* An integer that fits int64_t. */
int gt_json_parse_int (GtJsonParser *ps, int64_t *out);
/* An array of integers: at most @max stored in @values, all counted in
 * *@count so that the caller can say how many there were. */
int gt_json_parse_int_array (
    GtJsonParser *ps, int64_t *values, int max, int *count);
/* Any value, for fields the caller does not know. */
int gt_json_skip_value (GtJsonParser *ps);

/* The offset of the first byte of @s that is not part of valid UTF-8 (no
 * overlong forms, surrogates or code points above U+10FFFF), or @n: JSON
 * text is UTF-8. */
size_t gt_utf8_find_invalid (const unsigned char *s, size_t n);

#endif /* GT_JSON_PARSE_H */
