/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* datasetsrc-shards.c: datasetsrc's mode for WebDataset shards (see
 * gstdatasetsrc.c's SECTION, "WebDataset shards"): this rank's shards
 * (shard-shuffle.c's split), each epoch in an order drawn from the seed,
 * each read front to back through a stream (shard-fetch.c: a file, or
 * HTTP) by a shard reader (shard-reader.c), several at once in the slots
 * of the rotation (shard-shuffle.c) that takes a sample from each in turn
 * (interleave; one slot without), its samples checked and passed through
 * the sample shuffle buffer; bad samples and damaged shards go to the
 * bad-sample reporter (train-common.c). An exact resume replays the same
 * turns and draws over the samples' places alone (below, before
 * gst_dataset_src_shards_create). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "datasetsrc-shards.h"

#include <string.h>

/* The pause before the first retry of a broken transfer, doubled for each
 * retry in a row (the retries property's description says 0.2 s, 0.4 s,
 * 0.8 s, ...): long enough for a server that reset connections under a
 * burst of requests to take new ones, short enough that a connection cut
 * once costs less than reading a shard; the default 5 retries wait 6.2 s
 * in all before the error. */
#define FIRST_RETRY_PAUSE_MS 200

void
gst_dataset_src_shard_item_free (gpointer data)
{
  GstDatasetSrcShardItem *item = data;

  gst_train_shard_sample_clear (&item->sample);
  g_free (item);
}

GstFlowReturn
gst_dataset_src_shards_fail (GstDatasetSrc *src, GError *error)
{
  GstFlowReturn ret = GST_FLOW_ERROR;

  if (g_error_matches (
          error, GST_TRAIN_SHARD_ERROR, GST_TRAIN_SHARD_ERROR_CANCELLED))
    ret = GST_FLOW_FLUSHING;
  else if (g_error_matches (
               error, GST_TRAIN_SHARD_ERROR, GST_TRAIN_SHARD_ERROR_NOT_FOUND))
    GST_ELEMENT_ERROR (src, RESOURCE, NOT_FOUND,
        ("Missing shard: %s.", error->message), (NULL));
  else
    GST_ELEMENT_ERROR (src, RESOURCE, READ, ("%s.", error->message), (NULL));
  g_error_free (error);
  return ret;
}

static GstTagList *
gst_dataset_src_shards_start (GstDatasetSrc *src)
{
  const GstDatasetSrcSettings *s = &src->settings;
  GstTrainShardFetchOptions options = {
    s->fetch_ahead,
    s->retries,
    FIRST_RETRY_PAUSE_MS,
  };
  GstDatasetSrcShards *sh;
  GstTrainDatasetInfo info = { 0 };
  GError *error = NULL;
  gchar **shards;
  guint i;

  shards = gst_train_shard_pattern_expand (s->location, &error);
  if (shards == NULL) {
    GST_ELEMENT_ERROR (src, RESOURCE, SETTINGS,
        ("Cannot read the shard location \"%s\": %s.", s->location,
            error->message),
        (NULL));
    g_error_free (error);
    return NULL;
  }
  sh = src->mode_state = g_new0 (GstDatasetSrcShards, 1);
  sh->shards = shards;
  sh->n_shards = g_strv_length (shards);
  sh->epoch = -1;
  if (s->num_classes == 0) {
    GST_ELEMENT_ERROR (src, RESOURCE, SETTINGS,
        ("WebDataset shards do not say how many classes they hold: set "
         "num-classes (labels are 0 to num-classes - 1)."),
        ("location %s", s->location));
    return NULL;
  }
  if (sh->n_shards < s->num_ranks) {
    GST_ELEMENT_ERROR (src, RESOURCE, SETTINGS,
        ("\"%s\" names %u shard%s for %u ranks (num-ranks): each rank reads "
         "shards of its own, so there must be %u shards at least.",
            s->location, sh->n_shards, sh->n_shards == 1 ? "" : "s",
            s->num_ranks, s->num_ranks),
        (NULL));
    return NULL;
  }
  sh->mine =
      gst_train_rank_split (sh->n_shards, s->rank, s->num_ranks, &sh->n_mine);
  sh->order = g_new (guint, sh->n_mine);
  /* the shards fetched at once are the ones read at once */
  sh->n_slots =
      s->interleave ? MAX (MIN (s->fetch_ahead + 1, sh->n_mine), 1) : 1;
  sh->slots = g_new0 (GstDatasetSrcShardSlot, sh->n_slots);
  sh->fetcher = gst_train_shard_fetcher_new (&options);
  for (i = 0; i < sh->n_mine; i++) {
    if (!gst_train_shard_fetcher_check (
            sh->fetcher, shards[sh->mine[i]], &error)) {
      gst_dataset_src_shards_fail (src, error);
      return NULL;
    }
  }

  GST_OBJECT_LOCK (src);
  src->num_classes = s->num_classes;
  src->dataset_size = 0;
  gst_train_bad_samples_reset (&src->bad);
  GST_OBJECT_UNLOCK (src);
  GST_INFO_OBJECT (src,
      "%u shards from %s, %u of them for rank %u of %u, %u classes, "
      "%u read at once",
      sh->n_shards, s->location, sh->n_mine, s->rank, s->num_ranks,
      s->num_classes, sh->n_slots);

  /* the sample counts are not known before the shards are read */
  info.num_classes = s->num_classes;
  info.shard_index = s->rank;
  info.num_shards = s->num_ranks;
  return gst_train_dataset_info_to_tag_list (&info);
}

static void
gst_dataset_src_shards_stop (GstDatasetSrc *src)
{
  GstDatasetSrcShards *sh = src->mode_state;

  if (sh == NULL)
    return;
  gst_dataset_src_shards_close (sh);
  gst_train_shard_rotation_clear (&sh->rotation);
  gst_train_shard_shuffle_clear (&sh->buffer);
  gst_train_shard_fetcher_free (sh->fetcher);
  g_strfreev (sh->shards);
  g_free (sh->mine);
  g_free (sh->order);
  g_free (sh->slots);
  g_free (sh);
  src->mode_state = NULL;
}

static void
gst_dataset_src_shards_set_flushing (GstDatasetSrc *src, gboolean flushing)
{
  GstDatasetSrcShards *sh = src->mode_state;

  if (sh != NULL && sh->fetcher != NULL)
    gst_train_shard_fetcher_set_flushing (sh->fetcher, flushing);
}

static void
gst_dataset_src_shards_close_slot (GstDatasetSrcShardSlot *slot)
{
  g_clear_pointer (&slot->reader, gst_train_shard_reader_free);
  g_clear_pointer (&slot->stream, gst_train_shard_stream_close);
}

void
gst_dataset_src_shards_close (GstDatasetSrcShards *sh)
{
  guint i;

  for (i = 0; i < sh->n_slots; i++)
    gst_dataset_src_shards_close_slot (&sh->slots[i]);
}

gboolean
gst_dataset_src_shards_enter_epoch (
    const GstDatasetSrcSettings *s, GstDatasetSrcShards *sh, gint epoch)
{
  if ((s->num_epochs >= 0 && epoch >= s->num_epochs) || epoch < 0)
    return FALSE;
  gst_dataset_src_shards_close (sh);
  gst_train_shard_epoch_order (
      sh->mine, sh->order, sh->n_mine, s->seed, epoch, s->shuffle);
  gst_train_shard_rotation_init (&sh->rotation, sh->n_slots, sh->n_mine);
  gst_train_shard_shuffle_init (&sh->buffer,
      s->shuffle ? s->shuffle_buffer_size : 1, s->seed,
      GST_TRAIN_SHARD_BUFFER_STREAM (epoch), gst_dataset_src_shard_item_free);
  sh->epoch = epoch;
  sh->input_done = FALSE;
  sh->epoch_emitted = 0;
  return TRUE;
}

/* The shards that follow the open ones, NULL-terminated (a new array of
 * the fetcher's strings): the rest of this epoch's order, then the next
 * epoch's, as many as keep fetch-ahead + 1 shards read or fetched at once,
 * so that interleaving costs no more transfers or memory than reading one
 * shard with fetch-ahead others behind it. */
static const gchar **
gst_dataset_src_shards_following (GstDatasetSrc *src)
{
  const GstDatasetSrcSettings *s = &src->settings;
  GstDatasetSrcShards *sh = src->mode_state;
  guint open = MAX (sh->rotation.n_open, 1);
  guint ahead = MIN (s->fetch_ahead, sh->n_mine), n = 0, i;
  const gchar **next;

  ahead = MIN (ahead, s->fetch_ahead + 1 - MIN (open, s->fetch_ahead + 1));
  next = g_new0 (const gchar *, ahead + 1);
  for (i = sh->rotation.next; i < sh->n_mine && n < ahead; i++)
    next[n++] = sh->shards[sh->order[i]];
  if (n < ahead && (s->num_epochs < 0 || sh->epoch + 1 < s->num_epochs)) {
    guint *order = g_new (guint, sh->n_mine);

    gst_train_shard_epoch_order (
        sh->mine, order, sh->n_mine, s->seed, sh->epoch + 1, s->shuffle);
    for (i = 0; i < sh->n_mine && n < ahead; i++)
      next[n++] = sh->shards[order[i]];
    g_free (order);
  }
  return next;
}

/* Fetches ahead what follows the open shards, when a slot is left empty:
 * at an epoch's end, the next epoch's first shards while the last ones of
 * this one are read. */
static void
gst_dataset_src_shards_fetch_following (GstDatasetSrc *src)
{
  GstDatasetSrcShards *sh = src->mode_state;
  const gchar **next = gst_dataset_src_shards_following (src);

  gst_train_shard_fetcher_fetch_ahead (sh->fetcher, next);
  g_free (next);
}

GstFlowReturn
gst_dataset_src_shards_open (GstDatasetSrc *src, guint slot, guint shard,
    guint64 offset, guint64 ordinal)
{
  GstDatasetSrcShards *sh = src->mode_state;
  GstDatasetSrcShardSlot *in = &sh->slots[slot];
  const gchar **next = gst_dataset_src_shards_following (src);
  GError *error = NULL;

  gst_dataset_src_shards_close_slot (in);
  in->stream = gst_train_shard_fetcher_open (
      sh->fetcher, sh->shards[shard], offset, next, FALSE, &error);
  g_free (next);
  if (in->stream == NULL) {
    gst_train_shard_rotation_end (&sh->rotation, slot);
    return gst_dataset_src_shards_fail (src, error);
  }
  in->shard = shard;
  in->reader = gst_train_shard_reader_new (
      &gst_train_shard_stream_funcs, in->stream, offset, ordinal, TRUE);
  GST_DEBUG_OBJECT (src,
      "epoch %d: shard %s from byte %" G_GUINT64_FORMAT " in slot %u of %u",
      sh->epoch, sh->shards[shard], offset, slot, sh->n_slots);
  return GST_FLOW_OK;
}

/* The shard in @slot has ended (read to its end, damaged, or failed). */
static void
gst_dataset_src_shards_end_slot (GstDatasetSrc *src, guint slot)
{
  GstDatasetSrcShards *sh = src->mode_state;

  gst_dataset_src_shards_close_slot (&sh->slots[slot]);
  gst_train_shard_rotation_end (&sh->rotation, slot);
  if (sh->rotation.next >= sh->rotation.n_shards)
    gst_dataset_src_shards_fetch_following (src);
}

const gchar *
gst_dataset_src_shard_check (
    const GstTrainShardSample *sample, guint num_classes, gchar **why)
{
  *why = NULL;
  if (sample->image_member == NULL)
    *why = g_strdup ("it has no jpg or jpeg member");
  else if (sample->label_status == GST_TRAIN_SHARD_LABEL_MISSING)
    *why = g_strdup ("it has no cls member (the label)");
  else if (sample->label_status == GST_TRAIN_SHARD_LABEL_NOT_A_NUMBER)
    *why = g_strdup_printf (
        "its label (cls) \"%s\" is not a number", sample->label_text);
  else if (sample->label < 0 || sample->label >= num_classes)
    *why = g_strdup_printf ("its label %" G_GINT64_FORMAT
                            " is out of range for num-classes %u",
        sample->label, num_classes);
  return *why;
}

/* Hands a bad sample of shard @index to the reporter. */
static GstFlowReturn
gst_dataset_src_shards_report_sample (GstDatasetSrc *src, guint index,
    const GstTrainShardSample *sample, gchar *why)
{
  GstDatasetSrcShards *sh = src->mode_state;
  const gchar *shard = sh->shards[index];
  gchar *key = g_strdup_printf ("%s#%s", shard, sample->key);
  GstFlowReturn ret;

  ret = gst_train_report_bad_sample (src, &src->bad, key, GST_STREAM_ERROR,
      GST_STREAM_ERROR_FORMAT, "read",
      g_strdup_printf (
          "Bad sample \"%s\" in shard \"%s\": %s.", sample->key, shard, why),
      g_strdup_printf ("Skipping sample \"%s\" of shard \"%s\": %s.",
          sample->key, shard, why));
  g_free (key);
  g_free (why);
  return ret;
}

/* The next good sample of this epoch's shards into *@out, or NULL when
 * they are all read (input_done): from the slot whose turn it is, once its
 * bytes are in. A bad sample does not use up the turn, so that the order
 * is that of the good samples alone, which a resume replays. */
static GstFlowReturn
gst_dataset_src_shards_next_input (
    GstDatasetSrc *src, GstDatasetSrcShardItem **out)
{
  GstDatasetSrcShards *sh = src->mode_state;

  *out = NULL;
  for (;;) {
    GstTrainShardSample sample = { 0 };
    GstDatasetSrcShardSlot *slot;
    GError *error = NULL;
    GstFlowReturn ret;
    const gchar *shard;
    guint opened;
    gchar *why;
    gint turn, got;

    turn = gst_train_shard_rotation_next (&sh->rotation, &opened);
    if (turn < 0) {
      sh->input_done = TRUE;
      return GST_FLOW_OK;
    }
    if (opened != G_MAXUINT) {
      ret = gst_dataset_src_shards_open (src, turn, sh->order[opened], 0, 0);
      if (ret != GST_FLOW_OK)
        return ret;
    }
    slot = &sh->slots[turn];
    got = gst_train_shard_reader_next (slot->reader, &sample, &error);
    if (got == 1) {
      if (gst_dataset_src_shard_check (
              &sample, src->settings.num_classes, &why)) {
        ret = gst_dataset_src_shards_report_sample (
            src, slot->shard, &sample, why);
        gst_train_shard_sample_clear (&sample);
        if (ret != GST_FLOW_OK)
          return ret;
        continue;
      }
      *out = g_new0 (GstDatasetSrcShardItem, 1);
      (*out)->shard = slot->shard;
      (*out)->sample = sample;
      gst_train_shard_rotation_advance (&sh->rotation);
      return GST_FLOW_OK;
    }
    shard = sh->shards[slot->shard];
    gst_dataset_src_shards_end_slot (src, turn);
    if (got == 0)
      continue;
    if (!g_error_matches (
            error, GST_TRAIN_SHARD_ERROR, GST_TRAIN_SHARD_ERROR_DAMAGED))
      return gst_dataset_src_shards_fail (src, error);
    /* the samples before the damage went out: the rest of it is lost */
    ret = gst_train_report_bad_sample (src, &src->bad, shard,
        GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_READ, "read",
        g_strdup_printf ("Shard \"%s\" is %s.", shard, error->message),
        g_strdup_printf ("Shard \"%s\" is %s: the samples before the damage "
                         "are kept, the rest of the shard is skipped.",
            shard, error->message));
    g_error_free (error);
    if (ret != GST_FLOW_OK)
      return ret;
  }
}

/* gst_dataset_src_shards_next_input() as the shuffle buffer's input. */
static gint
gst_dataset_src_shards_next (gpointer user_data, gpointer *item)
{
  GstDatasetSrc *src = user_data;
  GstDatasetSrcShards *sh = src->mode_state;

  sh->input_ret =
      gst_dataset_src_shards_next_input (src, (GstDatasetSrcShardItem **)item);
  if (sh->input_ret != GST_FLOW_OK)
    return -1;
  return *item != NULL;
}

/* The buffer of @item, whose image is read now when the item only holds
 * its place (brought back by a resume). */
static GstFlowReturn
gst_dataset_src_shards_buffer (
    GstDatasetSrc *src, GstDatasetSrcShardItem *item, GstBuffer **out)
{
  GstDatasetSrcShards *sh = src->mode_state;
  GstTrainShardSample *sample = &item->sample;
  const gchar *shard = sh->shards[item->shard];
  guint64 index = GST_DATASET_SRC_SHARD_INDEX (item->shard, sample->ordinal);
  GError *error = NULL;
  gchar *location;
  GstBuffer *buffer;

  if (sample->image == NULL) {
    sample->image = gst_train_shard_fetcher_read_range (
        sh->fetcher, shard, sample->image_offset, sample->image_size, &error);
    if (sample->image == NULL)
      return gst_dataset_src_shards_fail (src, error);
  }
  buffer = gst_buffer_new_wrapped (sample->image, sample->image_size);
  sample->image = NULL;
  location = g_strdup_printf ("%s#%s", shard, sample->image_member);
  gst_buffer_add_train_sample_meta (
      buffer, (gint)sample->label, index, sh->epoch, location);
  GST_BUFFER_OFFSET (buffer) = index;
  GST_LOG_OBJECT (src, "sample %s, %" G_GUINT64_FORMAT " bytes", location,
      sample->image_size);
  g_free (location);
  *out = buffer;
  return GST_FLOW_OK;
}

/* Tells downstream the size of an epoch once it is known: the dataset
 * tags again, with the samples per epoch (the start's had none), so that
 * cudatrainsink counts epochs. From the streaming thread, after the first
 * buffer (a tag event before the segment would be out of order). */
static void
gst_dataset_src_shards_send_epoch_size (GstDatasetSrc *src)
{
  const GstDatasetSrcSettings *s = &src->settings;
  GstDatasetSrcShards *sh = src->mode_state;
  GstTrainDatasetInfo info = { 0 };

  info.num_classes = s->num_classes;
  info.epoch_samples = sh->epoch_size;
  info.shard_index = s->rank;
  info.num_shards = s->num_ranks;
  sh->epoch_size_sent = TRUE;
  GST_INFO_OBJECT (
      src, "%" G_GUINT64_FORMAT " samples per epoch", sh->epoch_size);
  gst_pad_push_event (GST_BASE_SRC_PAD (src),
      gst_event_new_tag (gst_train_dataset_info_to_tag_list (&info)));
}

/* ---- exact resume: where the shard mode starts (see gstdatasetsrc.c's
 * "Starting half-way: exact resume") ----
 *
 * The place to start is a count S of samples of the source's sequence
 * (this rank's samples out of the shuffle buffer, epoch after epoch), from
 * start-position plus the resume query's answer. What came out up to S
 * depends only on the seed, the shard orders, the number of slots and the
 * number of good samples in each shard, so it is replayed without images:
 * each shard the replay's rotation opens is counted from its tar headers
 * (a reader that passes over the images, shard-reader.c), the same shard
 * orders are drawn, the same rotation takes the same turns, and the same
 * items go in and out of a shuffle buffer with the same draws, holding
 * each sample's place (shard, offset, size) instead of its image. An S
 * past epoch 0 replays epoch 0 whole (which counts every shard of the
 * rank, and gives the size of an epoch), then the epoch S falls in.
 * Afterwards the buffer holds what the straight run's held, its generator
 * and the rotation are where the straight run's were, and each open shard
 * is read on from the middle (a seek, or an HTTP range request); the held
 * items' images are read one by one when they go out. No image before S
 * is read. */

/* The replay's view of the shards: the good samples of each shard (by its
 * index in the list), counted when the rotation first opens it. */
typedef struct
{
  GstDatasetSrc *src;
  GArray **samples; /* GstTrainShardSample without images, or NULL */
  /* the replay's reading place: the rotation's (sh->rotation), and the
   * good samples taken from the shard in each of its slots */
  guint *taken;
  GstFlowReturn ret; /* why its input failed */
} ShardReplay;

static void
shard_replay_free (ShardReplay *replay)
{
  GstDatasetSrcShards *sh = replay->src->mode_state;
  guint n;

  for (n = 0; n < sh->n_shards; n++)
    if (replay->samples[n] != NULL)
      g_array_unref (replay->samples[n]);
  g_free (replay->samples);
  g_free (replay->taken);
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
  GstDatasetSrcShards *sh = src->mode_state;
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
 * read it, through the same rotation: a new item holding the sample's
 * place, or NULL at the end of the epoch's shards. */
static GstFlowReturn
shard_replay_next (ShardReplay *replay, GstDatasetSrcShardItem **out)
{
  GstDatasetSrcShards *sh = replay->src->mode_state;

  *out = NULL;
  for (;;) {
    const GstTrainShardSample *sample;
    GstFlowReturn ret = GST_FLOW_OK;
    guint opened, shard;
    GArray *samples;
    gint turn;

    turn = gst_train_shard_rotation_next (&sh->rotation, &opened);
    if (turn < 0)
      return GST_FLOW_OK;
    shard = sh->order[sh->rotation.open[turn]];
    if (opened != G_MAXUINT) {
      replay->taken[turn] = 0;
      if (replay->samples[shard] == NULL)
        ret = shard_replay_count (replay, shard);
      if (ret != GST_FLOW_OK)
        return ret;
    }
    samples = replay->samples[shard];
    if (replay->taken[turn] >= samples->len) {
      gst_train_shard_rotation_end (&sh->rotation, turn);
      continue;
    }
    sample =
        &g_array_index (samples, GstTrainShardSample, replay->taken[turn]++);
    *out = g_new0 (GstDatasetSrcShardItem, 1);
    (*out)->shard = shard;
    (*out)->sample = *sample;
    (*out)->sample.key = g_strdup (sample->key);
    (*out)->sample.image_member = g_strdup (sample->image_member);
    gst_train_shard_rotation_advance (&sh->rotation);
    return GST_FLOW_OK;
  }
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
  GstDatasetSrcShards *sh = src->mode_state;

  gst_dataset_src_shards_enter_epoch (s, sh, epoch);
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
      gst_train_shard_rotation_stop (&sh->rotation);
    }
  }
  return GST_FLOW_OK;
}

/* Reading goes on where the replay stands: each open shard from the
 * header of its next good sample; a shard whose samples were all taken
 * leaves its slot empty, as reading it would find its end next. */
static GstFlowReturn
shard_replay_continue (ShardReplay *replay)
{
  GstDatasetSrc *src = replay->src;
  GstDatasetSrcShards *sh = src->mode_state;
  GstTrainShardRotation *rotation = &sh->rotation;
  GstFlowReturn ret = GST_FLOW_OK;
  guint slot;

  /* the slots that stay empty first, so that every open asks for the same
   * shards ahead */
  for (slot = 0; slot < rotation->n_slots; slot++) {
    guint place = rotation->open[slot];

    if (place != G_MAXUINT
        && replay->taken[slot] >= replay->samples[sh->order[place]]->len)
      gst_train_shard_rotation_end (rotation, slot);
  }
  for (slot = 0; slot < rotation->n_slots && ret == GST_FLOW_OK; slot++) {
    const GstTrainShardSample *sample;
    guint shard;

    if (rotation->open[slot] == G_MAXUINT)
      continue;
    shard = sh->order[rotation->open[slot]];
    sample = &g_array_index (
        replay->samples[shard], GstTrainShardSample, replay->taken[slot]);
    ret = gst_dataset_src_shards_open (
        src, slot, shard, sample->offset, sample->ordinal);
  }
  if (ret == GST_FLOW_OK)
    gst_dataset_src_shards_fetch_following (src);
  return ret;
}

static GstFlowReturn
gst_dataset_src_shards_position (GstDatasetSrc *src)
{
  const GstDatasetSrcSettings *s = &src->settings;
  GstDatasetSrcShards *sh = src->mode_state;
  ShardReplay replay = { src, NULL, NULL, GST_FLOW_OK };
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
  replay.taken = g_new0 (guint, sh->n_slots);
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
      "shuffle buffer, %u shards open, the next to open %u of %u",
      sh->epoch_emitted, sh->epoch, sh->buffer.items->len, sh->rotation.n_open,
      sh->rotation.next, sh->n_mine);
  shard_replay_free (&replay);
  return ret;
}

static gboolean
gst_dataset_src_shards_wanted (GstDatasetSrc *src)
{
  GstDatasetSrcShards *sh = src->mode_state;

  return gst_dataset_src_wanted (src, sh->position++);
}

static GstFlowReturn
gst_dataset_src_shards_create (GstDatasetSrc *src, GstBuffer **out)
{
  const GstDatasetSrcSettings *s = &src->settings;
  GstDatasetSrcShards *sh = src->mode_state;

  for (;;) {
    GstDatasetSrcShardItem *item;
    GstFlowReturn ret;

    if (sh->done)
      return GST_FLOW_EOS;
    if (sh->epoch_size > 0 && !sh->epoch_size_sent && src->emitted > 0)
      gst_dataset_src_shards_send_epoch_size (src);
    if (sh->epoch < 0 || (sh->input_done && sh->buffer.items->len == 0)) {
      if (sh->epoch >= 0 && sh->epoch_size == 0)
        sh->epoch_size = sh->epoch_emitted;
      if (sh->epoch >= 0 && sh->epoch_emitted == 0) {
        /* another epoch would find nothing either */
        GST_ELEMENT_ERROR (src, RESOURCE, READ,
            ("The %u shard%s of \"%s\" read by rank %u of %u hold no good "
             "sample.",
                sh->n_mine, sh->n_mine == 1 ? "" : "s", s->location, s->rank,
                s->num_ranks),
            (NULL));
        return GST_FLOW_ERROR;
      }
      if (!gst_dataset_src_shards_enter_epoch (s, sh, sh->epoch + 1)) {
        GST_DEBUG_OBJECT (src, "all epochs read, EOS");
        sh->done = TRUE;
        continue;
      }
      GST_DEBUG_OBJECT (src, "epoch %d: %u shards", sh->epoch, sh->n_mine);
    }
    if (gst_train_shard_shuffle_fill (
            &sh->buffer, &sh->input_done, gst_dataset_src_shards_next, src)
        < 0)
      return sh->input_ret;
    item = gst_train_shard_shuffle_take (&sh->buffer);
    if (item == NULL)
      continue;
    sh->epoch_emitted++;
    if (s->num_samples > 0 && sh->epoch_emitted >= s->num_samples) {
      /* num-samples: the epoch ends here */
      gst_dataset_src_shards_close (sh);
      gst_train_shard_rotation_stop (&sh->rotation);
      g_ptr_array_set_size (sh->buffer.items, 0);
      sh->input_done = TRUE;
    }
    src->emitted++;
    if (!gst_dataset_src_shards_wanted (src)) {
      /* a resume re-reads only what downstream held */
      gst_dataset_src_shard_item_free (item);
      continue;
    }
    ret = gst_dataset_src_shards_buffer (src, item, out);
    gst_dataset_src_shard_item_free (item);
    return ret;
  }
}

const GstDatasetSrcModeFuncs gst_dataset_src_shards_mode = {
  "shards",
  gst_train_shard_location_is_shards,
  gst_dataset_src_shards_start,
  gst_dataset_src_shards_stop,
  gst_dataset_src_shards_position,
  gst_dataset_src_shards_create,
  gst_dataset_src_shards_set_flushing,
};
