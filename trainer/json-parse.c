/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* json-parse.c: the small JSON reader of json-parse.h. */
#include "json-parse.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Offset of the first byte of @s that is not part of valid UTF-8 (no
 * overlong forms, surrogates or code points above U+10FFFF), or @n. */
size_t
gt_utf8_find_invalid (const unsigned char *s, size_t n)
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

/* Records the first problem only: later ones are consequences of it. */
int
gt_json_fail (GtJsonParser *ps, const char *format, ...)
{
  va_list args;

  if (ps->message[0] == '\0') {
    va_start (args, format);
    vsnprintf (ps->message, sizeof (ps->message), format, args);
    va_end (args);
  }
  return -1;
}

int
gt_json_syntax_error (GtJsonParser *ps, const char *what)
{
  return gt_json_fail (ps, "header is not valid JSON at byte %zu: %s",
      (size_t)(ps->pos - ps->start), what);
}

/* The next significant character, or '\0' at the end (a NUL byte is never
 * valid JSON outside a string, so it cannot be mistaken for one). */
char
gt_json_peek (GtJsonParser *ps)
{
  while (ps->pos < ps->end
      && (*ps->pos == ' ' || *ps->pos == '\t' || *ps->pos == '\n'
          || *ps->pos == '\r'))
    ps->pos++;
  return ps->pos < ps->end ? *ps->pos : '\0';
}

int
gt_json_expect (GtJsonParser *ps, char c, const char *what)
{
  if (gt_json_peek (ps) != c)
    return gt_json_syntax_error (ps, what);
  ps->pos++;
  return 0;
}

/* Steps to the next element of an array or object whose opening bracket has
 * been consumed: 1 when one follows, 0 after @close, -1 on error. */
int
gt_json_next_item (GtJsonParser *ps, char close, bool *first)
{
  char c = gt_json_peek (ps);

  if (c == close) {
    ps->pos++;
    return 0;
  }
  if (!*first) {
    if (c != ',')
      return gt_json_syntax_error (
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
int
gt_json_parse_string (GtJsonParser *ps, char **out)
{
  static const char escapes[] = "\"\\/bfnrt";
  const char *close, *p, *problem, *escape;
  char *text, *w;
  uint32_t code, low;

  if (gt_json_expect (ps, '"', "expected a string") < 0)
    return -1;
  /* Finding the end first bounds the allocation by the string's own length;
   * decoding never makes it longer. */
  for (close = ps->pos; close < ps->end && *close != '"'; close++)
    if (*close == '\\' && close + 1 < ps->end)
      close++;
  if (close >= ps->end)
    return gt_json_syntax_error (ps, "unterminated string");
  text = w = malloc ((size_t)(close - ps->pos) + 1);
  if (text == NULL)
    return gt_json_fail (ps, "out of memory");
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
  return gt_json_syntax_error (ps, problem);
}

/* Parses "key":, leaving the decoded key in *key. */
int
gt_json_parse_key (GtJsonParser *ps, char **key)
{
  if (gt_json_parse_string (ps, key) < 0)
    return -1;
  if (gt_json_expect (ps, ':', "expected ':'") < 0) {
    free (*key);
    return -1;
  }
  return 0;
}

int
gt_json_parse_int (GtJsonParser *ps, int64_t *out)
{
  bool negative = false;
  uint64_t magnitude = 0;
  const char *digits;

  if (gt_json_peek (ps) == '-') {
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
    return gt_json_syntax_error (ps, "expected an integer");
  if (*digits == '0' && ps->pos - digits > 1)
    return gt_json_syntax_error (ps, "integer with a leading zero");
  if (ps->pos < ps->end
      && (*ps->pos == '.' || *ps->pos == 'e' || *ps->pos == 'E'))
    return gt_json_syntax_error (ps, "expected an integer, not a fraction");
  if (magnitude > INT64_MAX
      || (ps->pos < ps->end && *ps->pos >= '0' && *ps->pos <= '9'))
    return gt_json_fail (ps, "integer at header byte %zu is out of range",
        (size_t)(digits - ps->start));
  *out = negative ? -(int64_t)magnitude : (int64_t)magnitude;
  return 0;
}

/* Parses an array of integers, storing at most @max of them but counting all
 * in *count so that the caller can say how many there were. */
int
gt_json_parse_int_array (GtJsonParser *ps, int64_t *values, int max, int *count)
{
  bool first = true;
  int64_t value = 0;
  int more;

  if (gt_json_expect (ps, '[', "expected an array") < 0)
    return -1;
  *count = 0;
  while ((more = gt_json_next_item (ps, ']', &first)) == 1) {
    if (gt_json_parse_int (ps, &value) < 0)
      return -1;
    if (*count < max)
      values[*count] = value;
    (*count)++;
  }
  return more;
}

/* Skips any JSON value, for fields this reader does not know. */
int
gt_json_skip_value (GtJsonParser *ps)
{
  static const char *const literals[] = { "true", "false", "null" };
  char c = gt_json_peek (ps), close, *text;
  bool first = true;
  size_t length;
  int more, i;

  if (c == '"') {
    if (gt_json_parse_string (ps, &text) < 0)
      return -1;
    free (text);
    return 0;
  }
  if (c == '{' || c == '[') {
    if (ps->depth >= GT_JSON_MAX_DEPTH)
      return gt_json_syntax_error (ps, "nested too deeply");
    ps->depth++;
    ps->pos++;
    close = c == '{' ? '}' : ']';
    while ((more = gt_json_next_item (ps, close, &first)) == 1) {
      if (c == '{') {
        if (gt_json_parse_key (ps, &text) < 0)
          return -1;
        free (text);
      }
      if (gt_json_skip_value (ps) < 0)
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
  return gt_json_syntax_error (ps, "expected a value");
}
