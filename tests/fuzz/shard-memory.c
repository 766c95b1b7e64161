/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* shard-memory.c: see shard-memory.h. */
#include "shard-memory.h"

#include <string.h>

gssize
shard_memory_read (gpointer source, guint8 *data, gsize size, GError **error)
{
  ShardMemory *m = source;
  gsize n = MIN (MIN (size, m->step), m->size - m->at);

  memcpy (data, m->data + m->at, n);
  m->at += n;
  return n;
}

gint64
shard_memory_skip (gpointer source, guint64 size, GError **error)
{
  ShardMemory *m = source;
  guint64 n = MIN (size, m->size - m->at);

  m->at += n;
  return n;
}
