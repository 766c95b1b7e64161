/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* datasetsrc-shards-resume.c: where datasetsrc's shard mode starts (see
 * gstdatasetsrc.c's "Starting half-way: exact resume").
 *
 * The place to start is a count S of samples of the source's sequence
 * (this rank's samples out of the shuffle buffer, epoch after epoch), from
 * the resume query or start-position. What came out up to S depends only
 * on the seed, the shard orders and the number of good samples in each
 * shard, so it is replayed without images: each shard the replay reaches
 * is counted from its tar headers (a reader that passes over the images,
 * shard-reader.c), the same shard orders are drawn, and the same items go
 * in and out of a shuffle buffer with the same draws, holding each
 * sample's place (shard, offset, size) instead of its image. An S past
 * epoch 0 replays epoch 0 whole (which counts every shard of the rank,
 * and gives the size of an epoch), then the epoch S falls in. Afterwards
 * the buffer holds what the straight run's held, its generator is where
 * the straight run's was, and reading goes on from the middle of the
 * current shard (a seek, or an HTTP range request); the held items' images
 * are read one by one when they go out. No image before S is read. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "datasetsrc-shards.h"

#include <string.h>

/* The replay's view of the shards: the good samples of each shard (by its
 * index in the list), counted when first needed. */
typedef struct
{
  GstDatasetSrc *src;
  GArray **samples; /* GstTrainShardSample without images, or NULL */
  /* the replay's reading place: @order's @k-th shard, its @i-th good
   * sample */
  guint k, i;
  GstFlowReturn ret; /* why its input failed */
} ShardReplay;

static void
shard_replay_free (ShardReplay *replay)
{
  guint n;

  for (n = 0; n < replay->src->shards->n_shards; n++)
    if (replay->samples[n] != NULL)
      g_array_unref (replay->samples[n]);
  g_free (replay->samples);
}

static void
shard_sample_clear_func (gpointer data)
{
  gst_train_shard_sample_clear (data);
}

/* Counts the good samples of @shard from its headers: samples before a
 * damage count, as they do when the shard is read. */
static GstFlowReturn
shard_replay_count (ShardReplay *replay, guint shard)
{
  GstDatasetSrc *src = replay->src;
  GstDatasetSrcShards *sh = src->shards;
  GstTrainShardStream *stream;
  GstTrainShardReader *reader;
  GstTrainShardSample sample = { 0 };
  GError *error = NULL;
  GArray *samples;
  gchar *why;
  gint got;

  stream = gst_train_shard_fetcher_open (
      sh->fetcher, sh->shards[shard], 0, NULL, TRUE, &error);
  if (stream == NULL)
    return gst_dataset_src_shards_fail (src, error);
  samples = g_array_new (FALSE, TRUE, sizeof (GstTrainShardSample));
  g_array_set_clear_func (samples, shard_sample_clear_func);
  reader = gst_train_shard_reader_new (
      &gst_train_shard_stream_funcs, stream, 0, 0, FALSE);
  while ((got = gst_train_shard_reader_next (reader, &sample, &error)) == 1) {
    if (gst_dataset_src_shard_check (
            &sample, src->settings.num_classes, &why)) {
      g_free (why);
      gst_train_shard_sample_clear (&sample);
      continue;
    }
    g_array_append_val (samples, sample);
    memset (&sample, 0, sizeof (sample));
  }
  gst_train_shard_reader_free (reader);
  gst_train_shard_stream_close (stream);
  if (got == -1
      && !g_error_matches (
          error, GST_TRAIN_SHARD_ERROR, GST_TRAIN_SHARD_ERROR_DAMAGED)) {
    g_array_unref (samples);
    return gst_dataset_src_shards_fail (src, error);
  }
  g_clear_error (&error);
  GST_DEBUG_OBJECT (
      src, "%s: %u good samples", sh->shards[shard], samples->len);
  replay->samples[shard] = samples;
  return GST_FLOW_OK;
}

/* The replay's next input, as gst_dataset_src_shards_next_input() would
 * read it: a new item holding the sample's place, or NULL at the end of
 * the epoch's shards. */
static GstFlowReturn
shard_replay_next (ShardReplay *replay, GstDatasetSrcShardItem **out)
{
  GstDatasetSrcShards *sh = replay->src->shards;

  *out = NULL;
  while (replay->k < sh->n_mine) {
    guint shard = sh->order[replay->k];
    GstFlowReturn ret = GST_FLOW_OK;
    const GstTrainShardSample *sample;

    if (replay->samples[shard] == NULL)
      ret = shard_replay_count (replay, shard);
    if (ret != GST_FLOW_OK)
      return ret;
    if (replay->i >= replay->samples[shard]->len) {
      replay->k++;
      replay->i = 0;
      continue;
    }
    sample = &g_array_index (
        replay->samples[shard], GstTrainShardSample, replay->i++);
    *out = g_new0 (GstDatasetSrcShardItem, 1);
    (*out)->shard = shard;
    (*out)->sample = *sample;
    (*out)->sample.key = g_strdup (sample->key);
    (*out)->sample.image_member = g_strdup (sample->image_member);
    return GST_FLOW_OK;
  }
  return GST_FLOW_OK;
}

/* shard_replay_next() as the shuffle buffer's input. */
static gint
shard_replay_input (gpointer user_data, gpointer *item)
{
  ShardReplay *replay = user_data;

  replay->ret = shard_replay_next (replay, (GstDatasetSrcShardItem **)item);
  if (replay->ret != GST_FLOW_OK)
    return -1;
  return *item != NULL;
}

/* Replays @epoch up to @limit samples out of the buffer, as
 * gst_dataset_src_shards_create() hands them out; *@emitted: how many came
 * out (fewer when the epoch ended first). */
static GstFlowReturn
shard_replay_epoch (
    ShardReplay *replay, gint epoch, guint64 limit, guint64 *emitted)
{
  GstDatasetSrc *src = replay->src;
  const GstDatasetSrcSettings *s = &src->settings;
  GstDatasetSrcShards *sh = src->shards;

  gst_dataset_src_shards_enter_epoch (s, sh, epoch);
  replay->k = replay->i = 0;
  *emitted = 0;
  while (*emitted < limit) {
    GstDatasetSrcShardItem *item;

    if (gst_train_shard_shuffle_fill (
            &sh->buffer, &sh->input_done, shard_replay_input, replay)
        < 0)
      return replay->ret;
    item = gst_train_shard_shuffle_take (&sh->buffer);
    if (item == NULL)
      break;
    gst_dataset_src_shard_item_free (item);
    (*emitted)++;
    sh->epoch_emitted++;
    if (s->num_samples > 0 && sh->epoch_emitted >= s->num_samples) {
      g_ptr_array_set_size (sh->buffer.items, 0);
      sh->input_done = TRUE;
      replay->k = sh->n_mine;
    }
  }
  return GST_FLOW_OK;
}

/* Reading goes on where the replay stands: in the middle of a shard, at
 * the header of its next good sample. */
static GstFlowReturn
shard_replay_continue (ShardReplay *replay)
{
  GstDatasetSrcShards *sh = replay->src->shards;
  const GstTrainShardSample *sample;
  GArray *samples;
  guint shard;

  sh->next = replay->k;
  if (sh->input_done || replay->k >= sh->n_mine)
    return GST_FLOW_OK;
  shard = sh->order[replay->k];
  samples = replay->samples[shard];
  if (samples == NULL)
    return GST_FLOW_OK; /* not reached yet: read from its start */
  sh->next = replay->k + 1;
  if (replay->i >= samples->len)
    return GST_FLOW_OK; /* read to its end */
  sample = &g_array_index (samples, GstTrainShardSample, replay->i);
  return gst_dataset_src_shards_open (
      replay->src, shard, sample->offset, sample->ordinal);
}

GstFlowReturn
gst_dataset_src_shards_position (GstDatasetSrc *src)
{
  const GstDatasetSrcSettings *s = &src->settings;
  GstDatasetSrcShards *sh = src->shards;
  ShardReplay replay = { src, NULL, 0, 0, GST_FLOW_OK };
  guint64 start, emitted, epoch_size, epoch;
  GstFlowReturn ret;

  start = gst_dataset_src_ask_resume (src);
  sh->position = start;
  if (start == 0)
    return GST_FLOW_OK;
  if (s->num_epochs == 0) {
    sh->done = TRUE;
    return GST_FLOW_OK;
  }

  replay.samples = g_new0 (GArray *, sh->n_shards);
  ret = shard_replay_epoch (&replay, 0, start, &emitted);
  if (ret == GST_FLOW_OK && emitted < start) {
    /* past epoch 0, which counted every shard: the epoch's size says which
     * epoch the place falls in */
    epoch_size = sh->epoch_size = emitted;
    epoch = epoch_size > 0 ? start / epoch_size : G_MAXUINT64;
    if (epoch > G_MAXINT
        || (s->num_epochs >= 0 && epoch >= (guint64)s->num_epochs)) {
      GST_INFO_OBJECT (src,
          "start at sample %" G_GUINT64_FORMAT " is past the last epoch: EOS",
          start);
      sh->done = TRUE;
      shard_replay_free (&replay);
      return GST_FLOW_OK;
    }
    ret =
        shard_replay_epoch (&replay, (gint)epoch, start % epoch_size, &emitted);
  }
  if (ret == GST_FLOW_OK)
    ret = shard_replay_continue (&replay);
  GST_INFO_OBJECT (src,
      "starting at sample %" G_GUINT64_FORMAT " of epoch %d: %u held in the "
      "shuffle buffer, reading on from shard %u of %u",
      sh->epoch_emitted, sh->epoch, sh->buffer.items->len, sh->next,
      sh->n_mine);
  shard_replay_free (&replay);
  return ret;
}

gboolean
gst_dataset_src_shards_wanted (GstDatasetSrc *src)
{
  return gst_dataset_src_wanted (src, src->shards->position++);
}
