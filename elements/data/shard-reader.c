/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* shard-reader.c: WebDataset samples out of a tar stream (see
 * shard-reader.h). The tar formats are those Python's tarfile (which
 * WebDataset's ShardWriter uses) and GNU tar write: ustar headers with
 * their name prefix, PAX extended headers ("path", "size"), GNU long names
 * ("L"), and base-256 sizes. */
#include "shard-reader.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLOCK 512
/* what the reader keeps in hand: headers and small members come from it,
 * large members are read straight into their own memory; when it passes
 * over images (a count), little more than a sample's headers and label,
 * so that it reads no more than those */
#define BUFFER_SIZE (64 * 1024)
#define SCAN_BUFFER_SIZE (4 * BLOCK)
/* a long name or a PAX header larger than this is damage */
#define MAX_META_SIZE (1024 * 1024)
/* image memory grows as its data arrives, so that a header that claims a
 * huge member in a short file costs no more than the file */
#define IMAGE_CHUNK (4 * 1024 * 1024)

/* A member's header, with the PAX or GNU headers before it applied. */
typedef struct
{
  guint64 at; /* of its header */
  gchar *name;
  guint64 size;
  guint8 type;
} ShardMember;

struct _GstTrainShardReader
{
  const GstTrainShardSourceFuncs *funcs;
  gpointer source;
  gboolean read_images;
  guint8 *buffer;
  gsize buffer_size, buffer_pos, buffer_len;
  gboolean source_ended;
  guint64 offset;  /* of the next byte the parser takes */
  guint64 ordinal; /* of the next new key */
  /* the sample being gathered (key NULL: none) */
  GstTrainShardSample current;
  /* the header of the next sample's first member, read already */
  ShardMember pending;
  /* how the shard ended: 0 at its end, -1 on @error, 1 while it goes on */
  gint state;
  GError *error;
};

GstTrainShardReader *
gst_train_shard_reader_new (const GstTrainShardSourceFuncs *funcs,
    gpointer source, guint64 offset, guint64 ordinal, gboolean read_images)
{
  GstTrainShardReader *reader = g_new0 (GstTrainShardReader, 1);

  reader->funcs = funcs;
  reader->source = source;
  reader->read_images = read_images;
  reader->buffer_size = read_images ? BUFFER_SIZE : SCAN_BUFFER_SIZE;
  reader->buffer = g_malloc (reader->buffer_size);
  reader->offset = offset;
  reader->ordinal = ordinal;
  reader->state = 1;
  return reader;
}

void
gst_train_shard_reader_free (GstTrainShardReader *reader)
{
  if (reader == NULL)
    return;
  gst_train_shard_sample_clear (&reader->current);
  g_free (reader->pending.name);
  g_clear_error (&reader->error);
  g_free (reader->buffer);
  g_free (reader);
}

void
gst_train_shard_sample_clear (GstTrainShardSample *sample)
{
  g_free (sample->key);
  g_free (sample->image_member);
  g_free (sample->image);
  memset (sample, 0, sizeof (*sample));
}

/* Copies up to @size bytes into @data (NULL: drops them), from the buffer
 * first, then from the source (straight into @data when it is large):
 * how many, fewer at the end of the source; -1 on a source error. */
static gint64
shard_take (GstTrainShardReader *r, guint8 *data, guint64 size)
{
  guint64 done = 0;

  while (done < size) {
    gsize n = r->buffer_len - r->buffer_pos;
    gssize got;

    if (n > 0) {
      n = MIN (n, size - done);
      if (data != NULL)
        memcpy (data + done, r->buffer + r->buffer_pos, n);
      r->buffer_pos += n;
      done += n;
      continue;
    }
    if (r->source_ended)
      break;
    if (data == NULL && r->funcs->skip != NULL) {
      gint64 skipped = r->funcs->skip (r->source, size - done, &r->error);

      if (skipped < 0)
        return -1;
      done += skipped;
      if (done < size)
        r->source_ended = TRUE;
      break;
    }
    if (data != NULL && size - done >= r->buffer_size) {
      got = r->funcs->read (r->source, data + done, size - done, &r->error);
      if (got > 0)
        done += got;
    } else {
      r->buffer_pos = r->buffer_len = 0;
      got = r->funcs->read (r->source, r->buffer, r->buffer_size, &r->error);
      if (got > 0)
        r->buffer_len = got;
    }
    if (got < 0)
      return -1;
    if (got == 0)
      r->source_ended = TRUE;
  }
  r->offset += done;
  return done;
}

/* Ends the shard with damage at @offset: what is wrong, as a format. */
static gint shard_damaged (GstTrainShardReader *r, guint64 offset,
    const gchar *format, ...) G_GNUC_PRINTF (3, 4);

static gint
shard_damaged (GstTrainShardReader *r, guint64 offset, const gchar *format, ...)
{
  va_list args;
  gchar *what;

  va_start (args, format);
  what = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (&r->error, GST_TRAIN_SHARD_ERROR, GST_TRAIN_SHARD_ERROR_DAMAGED,
      "damaged at byte %" G_GUINT64_FORMAT ": %s", offset, what);
  g_free (what);
  return -1;
}

/* The number in a header field: octal digits (after spaces, ended by a
 * space or NUL), or GNU's base-256 with the high bit of the first byte
 * set. FALSE when it is neither, or does not fit. */
static gboolean
shard_field_number (const guint8 *field, gsize length, guint64 *value)
{
  gsize i = 0;
  guint64 v = 0;

  if (field[0] & 0x80) {
    if (field[0] & 0x40)
      return FALSE; /* negative */
    v = field[0] & 0x3f;
    for (i = 1; i < length; i++) {
      if (v >> 55)
        return FALSE;
      v = (v << 8) | field[i];
    }
    *value = v;
    return TRUE;
  }
  while (i < length && field[i] == ' ')
    i++;
  for (; i < length && field[i] >= '0' && field[i] <= '7'; i++) {
    if (v >> 60)
      return FALSE;
    v = (v << 3) | (field[i] - '0');
  }
  if (i < length && field[i] != ' ' && field[i] != '\0')
    return FALSE;
  *value = v;
  return TRUE;
}

/* Whether @header's checksum holds (the sum of its bytes with the
 * checksum field as spaces, unsigned as POSIX says, or signed as some old
 * tars wrote). */
static gboolean
shard_checksum_ok (const guint8 *header)
{
  guint64 stored;
  guint64 sum = 0;
  gint64 signed_sum = 0;
  guint i;

  if (!shard_field_number (header + 148, 8, &stored))
    return FALSE;
  for (i = 0; i < BLOCK; i++) {
    guint8 byte = i >= 148 && i < 156 ? ' ' : header[i];

    sum += byte;
    signed_sum += (gint8)byte;
  }
  return stored == sum || (gint64)stored == signed_sum;
}

/* A NUL-terminated copy of a header field of @length bytes. */
static gchar *
shard_field_string (const guint8 *field, gsize length)
{
  const guint8 *end = memchr (field, '\0', length);

  return g_strndup ((const gchar *)field, end ? (gsize)(end - field) : length);
}

/* The "path" and "size" records of a PAX header's @data. */
static gboolean
shard_parse_pax (const guint8 *data, gsize size, gchar **path, guint64 *length)
{
  gsize at = 0;

  while (at < size) {
    guint64 record = 0;
    gsize i = at;
    const guint8 *eq;

    while (i < size && g_ascii_isdigit (data[i]) && record < size)
      record = record * 10 + (data[i++] - '0');
    if (i >= size || data[i] != ' ' || record <= i - at + 1
        || record > size - at || data[at + record - 1] != '\n')
      return FALSE;
    i++;
    eq = memchr (data + i, '=', at + record - 1 - i);
    if (eq == NULL)
      return FALSE;
    if ((gsize)(eq - (data + i)) == 4 && memcmp (data + i, "path", 4) == 0) {
      g_free (*path);
      *path =
          g_strndup ((const gchar *)eq + 1, data + at + record - 1 - eq - 1);
    } else if ((gsize)(eq - (data + i)) == 4
        && memcmp (data + i, "size", 4) == 0) {
      gchar *text =
          g_strndup ((const gchar *)eq + 1, data + at + record - 1 - eq - 1);
      gchar *end;

      *length = g_ascii_strtoull (text, &end, 10);
      if (*end != '\0' || text[0] == '\0') {
        g_free (text);
        return FALSE;
      }
      g_free (text);
    }
    at += record;
  }
  return TRUE;
}

/* Reads a member's data of @size bytes whole (PAX headers, long names,
 * labels), then its padding; NULL at damage (set). */
static guint8 *
shard_read_small (GstTrainShardReader *r, guint64 size, guint64 header_at)
{
  guint8 *data;
  gint64 got;

  if (size > MAX_META_SIZE) {
    shard_damaged (r, header_at,
        "a header extension of %" G_GUINT64_FORMAT " bytes", size);
    return NULL;
  }
  data = g_malloc (size + 1);
  got = shard_take (r, data, size);
  if (got == (gint64)size)
    got = shard_take (r, NULL, (BLOCK - size % BLOCK) % BLOCK);
  else if (got >= 0)
    got = -2;
  if (got < 0) {
    if (got == -2)
      shard_damaged (r, r->offset, "the file ends inside a member");
    g_free (data);
    return NULL;
  }
  data[size] = '\0';
  return data;
}

/* Reads an image member's data into memory that grows as it arrives. */
static gboolean
shard_read_image (GstTrainShardReader *r, GstTrainShardSample *s, guint64 size)
{
  guint64 done = 0, allocated = MIN (size, IMAGE_CHUNK);
  guint8 *data = g_malloc (MAX (allocated, 1));

  while (done < size) {
    guint64 want = MIN (size - done, IMAGE_CHUNK);
    gint64 got;

    if (done + want > allocated) {
      allocated = MIN (size, MAX (allocated * 2, done + want));
      data = g_realloc (data, allocated);
    }
    got = shard_take (r, data + done, want);
    if (got < 0) {
      g_free (data);
      return FALSE;
    }
    done += got;
    if ((guint64)got < want) {
      g_free (data);
      shard_damaged (
          r, r->offset, "the file ends inside member \"%s\"", s->image_member);
      return FALSE;
    }
  }
  s->image = data;
  return TRUE;
}

/* Parses @text (the "cls" member) into the label of @s. */
static void
shard_parse_label (GstTrainShardSample *s, const gchar *text, gsize size)
{
  gchar *copy = g_strndup (text, MIN (size, GST_TRAIN_SHARD_MAX_LABEL_TEXT));
  gchar *trimmed = g_strstrip (copy), *end;
  const gchar *digits = trimmed[0] == '-' ? trimmed + 1 : trimmed;
  guint i;

  /* keep a printable copy for messages */
  for (i = 0; trimmed[i] != '\0'; i++)
    s->label_text[i] = g_ascii_isprint (trimmed[i]) ? trimmed[i] : '?';
  s->label_text[i] = '\0';
  s->label_status = GST_TRAIN_SHARD_LABEL_NOT_A_NUMBER;
  if (size <= GST_TRAIN_SHARD_MAX_LABEL_TEXT && g_ascii_isdigit (digits[0])
      && strlen (digits) <= 18) {
    s->label = g_ascii_strtoll (trimmed, &end, 10);
    for (end = (gchar *)digits; g_ascii_isdigit (*end); end++)
      ;
    if (*end == '\0')
      s->label_status = GST_TRAIN_SHARD_LABEL_OK;
  }
  g_free (copy);
}

/* Moves the gathered sample out into @sample. */
static gint
shard_hand_out (GstTrainShardReader *r, GstTrainShardSample *sample)
{
  *sample = r->current;
  memset (&r->current, 0, sizeof (r->current));
  return 1;
}

/* Skips @size bytes of member data; FALSE at damage or an error. */
static gboolean
shard_pass_over (GstTrainShardReader *r, guint64 size, const gchar *member)
{
  gint64 got = shard_take (r, NULL, size);

  if (got < 0)
    return FALSE;
  if ((guint64)got < size) {
    /* the same words as when the member is read (shard_read_image), so
     * that counting and reading report one damage */
    shard_damaged (r, r->offset, "the file ends inside member \"%s\"", member);
    return FALSE;
  }
  return TRUE;
}

/* Reads the next member's header into @m, applying the PAX or GNU headers
 * before it: 1, 0 at the end of the archive, -1 at damage or an error. */
static gint
shard_read_header (GstTrainShardReader *r, ShardMember *m)
{
  gchar *long_name = NULL;
  guint64 long_size = G_MAXUINT64;
  guint64 chain_at = r->offset; /* the first of the headers */
  guint8 header[BLOCK];

  for (;;) {
    guint64 at = r->offset;
    gint64 got = shard_take (r, header, BLOCK);

    if (got < 0)
      break;
    if (got == 0
        || (got == BLOCK && header[0] == '\0'
            && memcmp (header, header + 1, BLOCK - 1) == 0)) {
      /* the end: a zero block, or a file cut after a whole member */
      g_free (long_name);
      return 0;
    }
    if (got < BLOCK) {
      shard_damaged (r, at, "the file ends inside a header");
      break;
    }
    if (!shard_checksum_ok (header)
        || !shard_field_number (header + 124, 12, &m->size)) {
      shard_damaged (r, at, "not a tar header (checksum)");
      break;
    }
    m->at = chain_at;
    m->type = header[156];
    if (long_size != G_MAXUINT64)
      m->size = long_size;
    if (m->size > G_MAXUINT64 / 2) {
      shard_damaged (r, at, "a member size out of range");
      break;
    }
    if (m->type == 'x' || m->type == 'L') {
      /* describes the next member */
      guint8 *data = shard_read_small (r, m->size, at);
      gboolean ok = data != NULL;

      if (ok && m->type == 'L') {
        g_free (long_name);
        long_name = g_strdup ((const gchar *)data);
      } else if (ok) {
        ok = shard_parse_pax (data, m->size, &long_name, &long_size);
        if (!ok)
          shard_damaged (r, at, "a PAX header that cannot be read");
      }
      g_free (data);
      if (!ok)
        break;
      continue;
    }
    if (long_name != NULL) {
      m->name = long_name;
    } else if (memcmp (header + 257, "ustar", 5) == 0 && header[345] != '\0') {
      gchar *prefix = shard_field_string (header + 345, 155);
      gchar *tail = shard_field_string (header, 100);

      m->name = g_strconcat (prefix, "/", tail, NULL);
      g_free (prefix);
      g_free (tail);
    } else {
      m->name = shard_field_string (header, 100);
    }
    return 1;
  }
  g_free (long_name);
  return -1;
}

/* Reads the data of member @m into the sample gathered (image, label) or
 * passes over it; FALSE at damage or an error. */
static gboolean
shard_read_member (
    GstTrainShardReader *r, const ShardMember *m, const gchar *ext)
{
  GstTrainShardSample *s = &r->current;
  guint64 padded = (m->size + BLOCK - 1) / BLOCK * BLOCK;

  if ((!strcmp (ext, "jpg") || !strcmp (ext, "jpeg"))
      && s->image_member == NULL) {
    s->image_member = g_strdup (m->name);
    s->image_offset = r->offset;
    s->image_size = m->size;
    if (r->read_images ? !shard_read_image (r, s, m->size)
                       : !shard_pass_over (r, m->size, m->name))
      return FALSE;
    padded -= m->size;
  } else if (!strcmp (ext, "cls")
      && s->label_status == GST_TRAIN_SHARD_LABEL_MISSING) {
    guint64 keep = MIN (m->size, GST_TRAIN_SHARD_MAX_LABEL_TEXT + 1);
    guint8 text[GST_TRAIN_SHARD_MAX_LABEL_TEXT + 1];
    gint64 got = shard_take (r, text, keep);

    if (got < 0)
      return FALSE;
    if ((guint64)got < keep) {
      shard_damaged (
          r, r->offset, "the file ends inside member \"%s\"", m->name);
      return FALSE;
    }
    shard_parse_label (s, (const gchar *)text, m->size);
    padded -= keep;
  }
  return shard_pass_over (r, padded, m->name);
}

/* Reads members until a sample is complete (1), the shard ends (0) or
 * breaks (-1). */
static gint
shard_next_sample (GstTrainShardReader *r, GstTrainShardSample *sample)
{
  for (;;) {
    ShardMember m = { 0 };
    gchar *base, *dot, *ext;
    gboolean ok;
    gint got;

    if (r->pending.name != NULL) {
      m = r->pending;
      memset (&r->pending, 0, sizeof (r->pending));
    } else {
      got = shard_read_header (r, &m);
      if (got == 0) {
        r->state = 0;
        return r->current.key != NULL ? shard_hand_out (r, sample) : 0;
      }
      if (got < 0)
        break;
    }

    base = strrchr (m.name, '/');
    base = base != NULL ? base + 1 : m.name;
    dot = strchr (base, '.');
    if ((m.type != '0' && m.type != '\0' && m.type != '7') || dot == NULL
        || dot == base) {
      /* not a sample's member: a folder, a link, a name without a key */
      ok = shard_pass_over (r, (m.size + BLOCK - 1) / BLOCK * BLOCK, m.name);
      g_free (m.name);
      if (!ok)
        break;
      continue;
    }
    if (r->current.key != NULL
        && (strncmp (r->current.key, m.name, dot - m.name) != 0
            || r->current.key[dot - m.name] != '\0')) {
      /* a new key: the sample gathered so far is complete, and this member
       * the first of the next one */
      r->pending = m;
      return shard_hand_out (r, sample);
    }
    if (r->current.key == NULL) {
      r->current.key = g_strndup (m.name, dot - m.name);
      r->current.ordinal = r->ordinal++;
      r->current.offset = m.at;
      r->current.label_status = GST_TRAIN_SHARD_LABEL_MISSING;
    }
    ext = g_ascii_strdown (dot + 1, -1);
    ok = shard_read_member (r, &m, ext);
    g_free (ext);
    g_free (m.name);
    if (!ok) {
      /* the damage is inside this sample */
      gst_train_shard_sample_clear (&r->current);
      break;
    }
  }

  r->state = -1;
  /* a read that a flush ended is a stop, not damage: the sample gathered
   * so far may lack members still on their way (its label), so it is not
   * handed out, and no warning about it misleads at Ctrl-C */
  if (g_error_matches (
          r->error, GST_TRAIN_SHARD_ERROR, GST_TRAIN_SHARD_ERROR_CANCELLED))
    gst_train_shard_sample_clear (&r->current);
  /* the sample gathered before the damage, whose members were all read
   * whole, is kept */
  if (r->current.key != NULL)
    return shard_hand_out (r, sample);
  return -1;
}

gint
gst_train_shard_reader_next (
    GstTrainShardReader *reader, GstTrainShardSample *sample, GError **error)
{
  gint ret;

  gst_train_shard_sample_clear (sample);
  if (reader->state == 1) {
    ret = shard_next_sample (reader, sample);
    if (ret == 1)
      return 1;
  }
  if (reader->state == -1) {
    if (error != NULL)
      *error = g_error_copy (reader->error);
    return -1;
  }
  return 0;
}

static gssize
shard_fd_read (gpointer source, guint8 *data, gsize size, GError **error)
{
  int fd = GPOINTER_TO_INT (source);

  for (;;) {
    gssize got = read (fd, data, size);

    if (got >= 0)
      return got;
    if (errno != EINTR) {
      g_set_error (error, GST_TRAIN_SHARD_ERROR, GST_TRAIN_SHARD_ERROR_READ,
          "%s", g_strerror (errno));
      return -1;
    }
  }
}

gint64
gst_train_shard_read_over (const GstTrainShardSourceFuncs *funcs,
    gpointer source, guint64 size, GError **error)
{
  guint8 scratch[64 * 1024];
  guint64 done = 0;

  while (done < size) {
    gssize got = funcs->read (
        source, scratch, MIN (sizeof (scratch), size - done), error);

    if (got < 0)
      return -1;
    if (got == 0)
      break;
    done += got;
  }
  return done;
}

static gint64
shard_fd_skip (gpointer source, guint64 size, GError **error)
{
  int fd = GPOINTER_TO_INT (source);
  struct stat st;
  off_t at;
  guint64 left;

  if (fstat (fd, &st) != 0) {
    g_set_error (error, GST_TRAIN_SHARD_ERROR, GST_TRAIN_SHARD_ERROR_READ, "%s",
        g_strerror (errno));
    return -1;
  }
  /* A pipe cannot seek (lseek fails with ESPIPE): read through it. */
  if (!S_ISREG (st.st_mode))
    return gst_train_shard_read_over (
        &gst_train_shard_fd_funcs, source, size, error);
  at = lseek (fd, 0, SEEK_CUR);
  if (at < 0) {
    g_set_error (error, GST_TRAIN_SHARD_ERROR, GST_TRAIN_SHARD_ERROR_READ, "%s",
        g_strerror (errno));
    return -1;
  }
  left = st.st_size > at ? (guint64)(st.st_size - at) : 0;
  size = MIN (size, left);
  if (lseek (fd, (off_t)size, SEEK_CUR) < 0) {
    g_set_error (error, GST_TRAIN_SHARD_ERROR, GST_TRAIN_SHARD_ERROR_READ, "%s",
        g_strerror (errno));
    return -1;
  }
  return size;
}

const GstTrainShardSourceFuncs gst_train_shard_fd_funcs = {
  shard_fd_read,
  shard_fd_skip,
};
