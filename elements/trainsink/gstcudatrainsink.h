/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gstcudatrainsink.h: the cudatrainsink element, see gstcudatrainsink.c. */
#ifndef __GST_CUDA_TRAIN_SINK_H__
#define __GST_CUDA_TRAIN_SINK_H__

#include <gst/base/gstbasesink.h>

G_BEGIN_DECLS

#define GST_TYPE_CUDA_TRAIN_SINK (gst_cuda_train_sink_get_type ())
G_DECLARE_FINAL_TYPE (
    GstCudaTrainSink, gst_cuda_train_sink, GST, CUDA_TRAIN_SINK, GstBaseSink);

GST_ELEMENT_REGISTER_DECLARE (cudatrainsink);

G_END_DECLS

#endif /* __GST_CUDA_TRAIN_SINK_H__ */
