/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-shard.c: datasetsrc's WebDataset pieces on arbitrary bytes: the tar
 * reader (elements/data/shard-reader.c) and, for inputs that start with
 * 'P', the brace patterns of a shard location (shard-pattern.c).
 *
 * The tar is read twice from memory, in chunks whose size the first byte
 * picks (so that headers and members straddle the reader's buffer
 * differently): with the images read, and passing over them as an exact
 * resume counts a shard. Both passes must give the same samples (key,
 * place, offsets, label) and end the same way (the end, or the same
 * damage), since a resume's count must agree with the reading; every image
 * must be the input's bytes at the offset and size given, every place
 * inside the input, and the places in order.
 */
#include "fuzz-scratch.h"
#include "shard-memory.h"
#include "shard-pattern.h"
#include "shard-reader.h"

#include <string.h>

static const GstTrainShardSourceFuncs memory_funcs = { shard_memory_read,
  shard_memory_skip };

static void
clear_sample (gpointer data)
{
  gst_train_shard_sample_clear (data);
}

/* Reads the whole shard in chunks of @chunk: its samples (checked against
 * the input), and in *@ended how it ended ("end", or the damage). */
static GArray *
read_all (const uint8_t *data, size_t size, size_t chunk, gboolean read_images,
    gchar **ended)
{
  ShardMemory m = { data, size, 0, chunk };
  GstTrainShardReader *reader =
      gst_train_shard_reader_new (&memory_funcs, &m, 0, 0, read_images);
  GArray *samples = g_array_new (FALSE, TRUE, sizeof (GstTrainShardSample));
  GstTrainShardSample s = { 0 };
  GError *error = NULL;
  gint got;

  g_array_set_clear_func (samples, clear_sample);
  while ((got = gst_train_shard_reader_next (reader, &s, &error)) == 1) {
    const GstTrainShardSample *last = samples->len == 0
        ? NULL
        : &g_array_index (samples, GstTrainShardSample, samples->len - 1);

    FUZZ_CHECK (s.key != NULL && s.key[0] != '\0', "a sample without a key");
    FUZZ_CHECK (
        last == NULL || s.ordinal > last->ordinal, "places out of order");
    FUZZ_CHECK (
        last == NULL || s.offset > last->offset, "offsets out of order");
    FUZZ_CHECK (s.offset % 512 == 0 && s.offset < size, "an offset outside");
    if (s.image_member != NULL) {
      FUZZ_CHECK (
          s.image_offset >= s.offset && s.image_offset + s.image_size <= size,
          "an image outside the input");
      FUZZ_CHECK (read_images == (s.image != NULL), "image bytes or none");
      FUZZ_CHECK (s.image == NULL
              || memcmp (s.image, data + s.image_offset, s.image_size) == 0,
          "image bytes that are not the input's");
    } else {
      FUZZ_CHECK (s.image == NULL, "image bytes without an image member");
    }
    FUZZ_CHECK (s.label_status != GST_TRAIN_SHARD_LABEL_OK
            || g_ascii_strtoll (s.label_text, NULL, 10) == s.label,
        "a label other than its text");
    g_array_append_val (samples, s);
    memset (&s, 0, sizeof (s));
  }
  FUZZ_CHECK (got == 0 || got == -1, "a result out of range");
  FUZZ_CHECK ((got == -1) == (error != NULL), "an error without -1");
  FUZZ_CHECK (
      gst_train_shard_reader_next (reader, &s, NULL) == got, "not the end");
  FUZZ_CHECK (error == NULL
          || g_error_matches (
              error, GST_TRAIN_SHARD_ERROR, GST_TRAIN_SHARD_ERROR_DAMAGED),
      "an error that is not damage");
  *ended = error ? g_strdup (error->message) : g_strdup ("end");
  g_clear_error (&error);
  gst_train_shard_sample_clear (&s);
  gst_train_shard_reader_free (reader);
  return samples;
}

/* The two passes agree: what a resume counts is what reading finds. */
static void
compare (GArray *a, const gchar *a_ended, GArray *b, const gchar *b_ended)
{
  guint i;

  FUZZ_CHECK (a->len == b->len, "other samples when passing over images");
  FUZZ_CHECK (strcmp (a_ended, b_ended) == 0, "another end");
  for (i = 0; i < a->len; i++) {
    const GstTrainShardSample *s = &g_array_index (a, GstTrainShardSample, i);
    const GstTrainShardSample *t = &g_array_index (b, GstTrainShardSample, i);

    FUZZ_CHECK (strcmp (t->key, s->key) == 0 && t->ordinal == s->ordinal
            && t->offset == s->offset && t->image_offset == s->image_offset
            && t->image_size == s->image_size
            && t->label_status == s->label_status && t->label == s->label
            && g_strcmp0 (t->image_member, s->image_member) == 0,
        "another sample when passing over the images");
  }
}

static void
fuzz_pattern (const uint8_t *data, size_t size)
{
  gchar *text = g_strndup ((const gchar *)data, MIN (size, 1024));
  GError *error = NULL;
  gchar **names = gst_train_shard_pattern_expand_full (text, 10000, &error);

  FUZZ_CHECK ((names == NULL) == (error != NULL), "a result and an error");
  if (names != NULL) {
    guint i;

    FUZZ_CHECK (names[0] != NULL, "no name");
    for (i = 0; names[i] != NULL; i++)
      FUZZ_CHECK (strchr (names[i], ' ') == NULL, "a name with a space");
    FUZZ_CHECK (i <= 10000, "more names than the limit");
  }
  g_strfreev (names);
  g_clear_error (&error);
  gst_train_shard_location_is_shards (text);
  g_free (text);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  static const size_t chunks[] = { 1 << 20, 512, 7, 4096 + 3 };
  GArray *read, *counted;
  gchar *read_ended, *counted_ended;
  size_t chunk;

  if (size > 0 && data[0] == 'P') {
    /* a shard location, with a limit of 10,000 names (the element's is
     * GST_TRAIN_SHARD_PATTERN_MAX), so that every input stays cheap */
    fuzz_pattern (data + 1, size - 1);
    return 0;
  }
  chunk = chunks[size > 0 ? data[0] % G_N_ELEMENTS (chunks) : 0];
  read = read_all (data, size, chunk, TRUE, &read_ended);
  counted = read_all (data, size, chunk, FALSE, &counted_ended);
  compare (read, read_ended, counted, counted_ended);
  g_array_unref (read);
  g_array_unref (counted);
  g_free (read_ended);
  g_free (counted_ended);
  return 0;
}
