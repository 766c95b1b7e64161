/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* datasetsrc-shards-resume.c: where datasetsrc's shard mode starts. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "datasetsrc-shards.h"

GstFlowReturn
gst_dataset_src_shards_position (GstDatasetSrc *src)
{
  src->positioned = TRUE;
  return GST_FLOW_OK;
}

gboolean
gst_dataset_src_shards_wanted (GstDatasetSrc *src)
{
  src->shards->position++;
  return TRUE;
}
