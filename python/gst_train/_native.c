/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* _native.c: the part of gst_train.torch that runs once per batch, in C.
 *
 * A Puller takes batches off an appsink (the GIL released while it waits)
 * and hands each of the batcher's tensors to Python as a DLPack capsule
 * that views the batch's own memory: the capsule holds a reference on the
 * GstBuffer and keeps its memory mapped until the consumer (torch, through
 * torch.from_dlpack) frees the tensor. Only the labels (int32 in the batch,
 * int64 for torch) and the sample indices (from the batch meta) are
 * copied, N numbers each. The Puller also answers the source's resume query
 * (train-meta.h) the way cudatrainsink does, so that a loader restored from
 * its state_dict starts the source where it stopped without reading what
 * came before.
 *
 * Everything else (building the pipeline, state changes, the bus) is done
 * from Python through PyGObject's Gst; Python passes the appsink in as a
 * PyGObject object, whose __gpointer__ is a capsule of the GstElement. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlpack/dlpack.h>
#include <gst/app/gstappsink.h>
#include <gst/gst.h>
#include <string.h>

#include "train-meta.h"

/* One tensor handed out: DLPack's managed tensor and what keeps its data
 * alive. @buffer and @memory are set when the data is a batch's mapped
 * memory; @owned when it is an array of our own. */
typedef struct
{
  DLManagedTensor managed;
  int64_t shape[4];
  int64_t strides[4];
  GstBuffer *buffer;
  GstMemory *memory;
  GstMapInfo map;
  void *owned;
} GtTensor;

static void
gt_tensor_delete (DLManagedTensor *managed)
{
  GtTensor *tensor = managed->manager_ctx;

  /* May run on any thread, without the GIL: GStreamer calls only. */
  if (tensor->memory != NULL)
    gst_memory_unmap (tensor->memory, &tensor->map);
  if (tensor->buffer != NULL)
    gst_buffer_unref (tensor->buffer);
  g_free (tensor->owned);
  g_free (tensor);
}

/* The capsule's destructor: a capsule that no consumer took (its name is
 * still "dltensor") frees its tensor; a consumed one ("used_dltensor")
 * belongs to the consumer, which calls the deleter. */
static void
gt_capsule_destroy (PyObject *capsule)
{
  DLManagedTensor *managed;

  if (!PyCapsule_IsValid (capsule, "dltensor"))
    return;
  managed = PyCapsule_GetPointer (capsule, "dltensor");
  if (managed != NULL && managed->deleter != NULL)
    managed->deleter (managed);
}

static PyObject *
gt_tensor_capsule (GtTensor *tensor)
{
  PyObject *capsule;

  tensor->managed.manager_ctx = tensor;
  tensor->managed.deleter = gt_tensor_delete;
  capsule = PyCapsule_New (&tensor->managed, "dltensor", gt_capsule_destroy);
  if (capsule == NULL)
    gt_tensor_delete (&tensor->managed);
  return capsule;
}

static GtTensor *
gt_tensor_new (void *data, DLDataTypeCode code, int bits, int ndim)
{
  GtTensor *tensor = g_new0 (GtTensor, 1);
  DLTensor *t = &tensor->managed.dl_tensor;

  t->data = data;
  t->device.device_type = kDLCPU;
  t->device.device_id = 0;
  t->ndim = ndim;
  t->dtype.code = code;
  t->dtype.bits = bits;
  t->dtype.lanes = 1;
  t->shape = tensor->shape;
  t->strides = NULL;
  t->byte_offset = 0;
  return tensor;
}

/* An int64 vector of @n numbers of our own, for the labels and indices. */
static PyObject *
gt_int64_capsule (gint64 *values, gint64 n)
{
  GtTensor *tensor = gt_tensor_new (values, kDLInt, 64, 1);

  tensor->owned = values;
  tensor->shape[0] = n;
  return gt_tensor_capsule (tensor);
}

/* The batch layout the caps describe. */
typedef struct
{
  GstCaps *caps; /* a reference: the caps the fields were read from */
  int channels, width, height, batch;
  /* batcher layout=nchw: dimensions "W:H:C:N,N", else "C:W:H:N,N"; the
   * caps cannot tell the two apart (W = 3), the batcher's property can */
  gboolean planar;
} GtBatchCaps;

static gboolean
gt_batch_caps_read (GtBatchCaps *bc, GstCaps *caps, GError **error)
{
  const GstStructure *s;
  const gchar *types, *dims;
  int a, b, c, d, n_labels;

  if (bc->caps == caps)
    return TRUE;
  s = gst_caps_get_structure (caps, 0);
  types = gst_structure_get_string (s, "types");
  dims = gst_structure_get_string (s, "dimensions");
  if (!gst_structure_has_name (s, "other/tensors") || types == NULL
      || strcmp (types, "uint8,int32") != 0 || dims == NULL
      || sscanf (dims, "%d:%d:%d:%d,%d", &a, &b, &c, &d, &n_labels) != 5) {
    gchar *text = gst_caps_to_string (caps);

    g_set_error (error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
        "the pipeline does not end in a batcher: its output is %s, not "
        "other/tensors with types uint8,int32",
        text);
    g_free (text);
    return FALSE;
  }
  if (bc->planar) {
    bc->width = a;
    bc->height = b;
    bc->channels = c;
  } else {
    bc->channels = a;
    bc->width = b;
    bc->height = c;
  }
  bc->batch = d;
  gst_caps_replace (&bc->caps, caps);
  return TRUE;
}

typedef struct
{
  PyObject_HEAD GstAppSink *sink;
  GtBatchCaps caps;
  /* the resume answer, set by answer_resume(); the probe reads it once */
  GMutex lock;
  gboolean resume_armed;
  guint64 resume_samples, resume_fresh;
  guint resume_batch;
  gulong probe_id;
} GtPuller;

static PyObject *gt_error_type; /* _native.Error */

static void
gt_raise_gerror (GError *error)
{
  PyErr_SetString (gt_error_type, error->message);
  g_error_free (error);
}

/* Answers the source's resume query on its way down to the appsink, once
 * per answer_resume(), as cudatrainsink answers it from a checkpoint. */
static GstPadProbeReturn
gt_puller_resume_probe (GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  GtPuller *self = data;
  GstQuery *query = GST_PAD_PROBE_INFO_QUERY (info);
  gboolean answer;

  if (!gst_train_is_resume_query (query))
    return GST_PAD_PROBE_OK;
  g_mutex_lock (&self->lock);
  answer = self->resume_armed;
  self->resume_armed = FALSE;
  if (answer)
    gst_train_resume_query_set (
        query, self->resume_samples, self->resume_fresh, self->resume_batch);
  g_mutex_unlock (&self->lock);
  return answer ? GST_PAD_PROBE_HANDLED : GST_PAD_PROBE_OK;
}

static int
gt_puller_init (GtPuller *self, PyObject *args, PyObject *kwds)
{
  PyObject *element, *pointer;
  GstElement *sink;
  GstPad *pad;
  int planar;

  if (!PyArg_ParseTuple (args, "Op", &element, &planar))
    return -1;
  self->caps.planar = planar;
  pointer = PyObject_GetAttrString (element, "__gpointer__");
  if (pointer == NULL)
    return -1;
  sink = PyCapsule_GetPointer (pointer, NULL);
  Py_DECREF (pointer);
  if (sink == NULL)
    return -1;
  if (!GST_IS_APP_SINK (sink)) {
    PyErr_SetString (PyExc_TypeError, "Puller takes an appsink");
    return -1;
  }
  g_mutex_init (&self->lock);
  self->sink = GST_APP_SINK (gst_object_ref (sink));
  pad = gst_element_get_static_pad (sink, "sink");
  self->probe_id = gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_QUERY_DOWNSTREAM,
      gt_puller_resume_probe, self, NULL);
  gst_object_unref (pad);
  return 0;
}

static void
gt_puller_dealloc (GtPuller *self)
{
  if (self->sink != NULL) {
    GstPad *pad = gst_element_get_static_pad (GST_ELEMENT (self->sink), "sink");

    gst_pad_remove_probe (pad, self->probe_id);
    gst_object_unref (pad);
    gst_object_unref (self->sink);
    g_mutex_clear (&self->lock);
  }
  gst_caps_replace (&self->caps.caps, NULL);
  Py_TYPE (self)->tp_free ((PyObject *)self);
}

/* The images of @buffer as a tensor of shape (N, C, H, W) over the batch's
 * memory: contiguous for layout=nchw, PyTorch's channels_last strides for
 * layout=nhwc. */
static PyObject *
gt_images_capsule (GtPuller *self, GstBuffer *buffer, int n)
{
  const GtBatchCaps *bc = &self->caps;
  GstMemory *memory = gst_buffer_peek_memory (buffer, 0);
  GtTensor *tensor = gt_tensor_new (NULL, kDLUInt, 8, 4);
  gint64 c = bc->channels, h = bc->height, w = bc->width;

  if (!gst_memory_map (memory, &tensor->map, GST_MAP_READ)) {
    g_free (tensor);
    PyErr_SetString (gt_error_type, "could not map a batch's images");
    return NULL;
  }
  if (tensor->map.size < (gsize)(n * c * h * w)) {
    gst_memory_unmap (memory, &tensor->map);
    g_free (tensor);
    PyErr_Format (gt_error_type,
        "a batch's images hold %zu bytes, not the %lld its caps say",
        tensor->map.size, (long long)(n * c * h * w));
    return NULL;
  }
  tensor->memory = memory;
  tensor->buffer = gst_buffer_ref (buffer);
  tensor->managed.dl_tensor.data = tensor->map.data;
  tensor->shape[0] = n;
  tensor->shape[1] = c;
  tensor->shape[2] = h;
  tensor->shape[3] = w;
  if (!bc->planar) {
    tensor->strides[0] = h * w * c;
    tensor->strides[1] = 1;
    tensor->strides[2] = w * c;
    tensor->strides[3] = c;
    tensor->managed.dl_tensor.strides = tensor->strides;
  }
  return gt_tensor_capsule (tensor);
}

static PyObject *
gt_labels_capsule (GstBuffer *buffer, int n)
{
  GstMemory *memory = gst_buffer_peek_memory (buffer, 1);
  GstMapInfo map;
  gint64 *labels;
  int i;

  if (!gst_memory_map (memory, &map, GST_MAP_READ)) {
    PyErr_SetString (gt_error_type, "could not map a batch's labels");
    return NULL;
  }
  if (map.size < n * sizeof (gint32)) {
    gst_memory_unmap (memory, &map);
    PyErr_Format (gt_error_type,
        "a batch's labels hold %zu bytes for %d samples", map.size, n);
    return NULL;
  }
  labels = g_new (gint64, MAX (n, 1));
  for (i = 0; i < n; i++)
    labels[i] = ((const gint32 *)map.data)[i];
  gst_memory_unmap (memory, &map);
  return gt_int64_capsule (labels, n);
}

static PyObject *
gt_ids_capsule (GstTrainBatchMeta *meta, int n)
{
  gint64 *ids = g_new (gint64, MAX (n, 1));
  int i;

  for (i = 0; i < n; i++)
    ids[i] = (meta != NULL && meta->indices != NULL
                 && meta->indices[i] != G_MAXUINT64)
        ? (gint64)meta->indices[i]
        : -1;
  return gt_int64_capsule (ids, n);
}

PyDoc_STRVAR (gt_puller_pull_doc,
    "pull(timeout_ns, with_ids) -> tuple, None or False\n\n"
    "Waits up to timeout_ns for the next batch, with the GIL released. "
    "Returns (images, labels, ids, num_fresh, emissions), the first three "
    "DLPack capsules (ids None unless with_ids), None when the time ran out, "
    "False at the end of the stream.");

static PyObject *
gt_puller_pull (GtPuller *self, PyObject *args)
{
  unsigned long long timeout;
  int with_ids;
  GstSample *sample;
  GstBuffer *buffer;
  GstCaps *caps;
  GstTrainBatchMeta *meta;
  GError *error = NULL;
  PyObject *images = NULL, *labels = NULL, *ids = NULL, *result = NULL;
  int n, num_fresh;
  guint emissions;
  PyThreadState *thread;

  if (!PyArg_ParseTuple (args, "Kp", &timeout, &with_ids))
    return NULL;
  /* the wait without the GIL: the pipeline's threads and the loop's other
   * threads run meanwhile */
  thread = PyEval_SaveThread ();
  sample = gst_app_sink_try_pull_sample (self->sink, (GstClockTime)timeout);
  PyEval_RestoreThread (thread);
  if (sample == NULL) {
    if (gst_app_sink_is_eos (self->sink))
      Py_RETURN_FALSE;
    Py_RETURN_NONE;
  }
  buffer = gst_sample_get_buffer (sample);
  caps = gst_sample_get_caps (sample);
  if (buffer == NULL || caps == NULL) {
    PyErr_SetString (gt_error_type, "a batch came without buffer or caps");
    goto done;
  }
  if (!gt_batch_caps_read (&self->caps, caps, &error)) {
    gt_raise_gerror (error);
    goto done;
  }
  if (gst_buffer_n_memory (buffer) != 2) {
    PyErr_Format (gt_error_type,
        "a batch holds %u memories, not 2 (images, labels)",
        gst_buffer_n_memory (buffer));
    goto done;
  }
  meta = gst_buffer_get_train_batch_meta (buffer);
  /* a last batch under drop-remainder=false is shorter than the caps say */
  n = meta != NULL ? (int)meta->num_samples : self->caps.batch;
  num_fresh =
      meta != NULL ? (meta->emissions == 0 ? (int)meta->num_fresh : 0) : n;
  emissions = meta != NULL ? meta->emissions : 0;
  images = gt_images_capsule (self, buffer, n);
  if (images == NULL)
    goto done;
  labels = gt_labels_capsule (buffer, n);
  if (labels == NULL)
    goto done;
  if (with_ids) {
    ids = gt_ids_capsule (meta, n);
    if (ids == NULL)
      goto done;
  } else {
    ids = Py_NewRef (Py_None);
  }
  result = Py_BuildValue ("(OOOiI)", images, labels, ids, num_fresh, emissions);
done:
  Py_XDECREF (images);
  Py_XDECREF (labels);
  Py_XDECREF (ids);
  gst_sample_unref (sample);
  return result;
}

PyDoc_STRVAR (gt_puller_answer_resume_doc,
    "answer_resume(samples, fresh, batch_size)\n\n"
    "Answers the next resume query the source sends (at its start) with "
    "samples already consumed, fresh of them first emissions, batch_size "
    "images per batch; the source then starts after them.");

static PyObject *
gt_puller_answer_resume (GtPuller *self, PyObject *args)
{
  unsigned long long samples, fresh;
  unsigned int batch;

  if (!PyArg_ParseTuple (args, "KKI", &samples, &fresh, &batch))
    return NULL;
  g_mutex_lock (&self->lock);
  self->resume_armed = samples > 0;
  self->resume_samples = samples;
  self->resume_fresh = fresh;
  self->resume_batch = batch;
  g_mutex_unlock (&self->lock);
  Py_RETURN_NONE;
}

PyDoc_STRVAR (gt_stop_unused_threads_doc,
    "stop_unused_threads()\n\n"
    "Asks GLib's shared thread pool to end its idle threads (where "
    "GStreamer's streaming tasks ran); it may keep one or two for reuse.");

static PyObject *
gt_stop_unused_threads (PyObject *module, PyObject *unused)
{
  PyThreadState *thread = PyEval_SaveThread ();

  g_thread_pool_stop_unused_threads ();
  PyEval_RestoreThread (thread);
  Py_RETURN_NONE;
}

static PyMethodDef gt_module_methods[] = {
  { "stop_unused_threads", gt_stop_unused_threads, METH_NOARGS,
      gt_stop_unused_threads_doc },
  { NULL, NULL, 0, NULL },
};

static PyMethodDef gt_puller_methods[] = {
  { "pull", (PyCFunction)gt_puller_pull, METH_VARARGS, gt_puller_pull_doc },
  { "answer_resume", (PyCFunction)gt_puller_answer_resume, METH_VARARGS,
      gt_puller_answer_resume_doc },
  { NULL, NULL, 0, NULL },
};

static PyTypeObject gt_puller_type = {
  PyVarObject_HEAD_INIT (NULL, 0).tp_name = "gst_train._native.Puller",
  .tp_basicsize = sizeof (GtPuller),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc =
      PyDoc_STR ("Puller(appsink, planar): batches off an appsink as DLPack "
                 "capsules that view the batch's memory."),
  .tp_new = PyType_GenericNew,
  .tp_init = (initproc)gt_puller_init,
  .tp_dealloc = (destructor)gt_puller_dealloc,
  .tp_methods = gt_puller_methods,
};

static struct PyModuleDef gt_module = {
  PyModuleDef_HEAD_INIT,
  .m_name = "gst_train._native",
  .m_doc = "The per-batch part of gst_train.torch, in C.",
  .m_size = -1,
  .m_methods = gt_module_methods,
};

PyMODINIT_FUNC PyInit__native (void);

PyMODINIT_FUNC
PyInit__native (void)
{
  PyObject *module;

  if (PyType_Ready (&gt_puller_type) < 0)
    return NULL;
  module = PyModule_Create (&gt_module);
  if (module == NULL)
    return NULL;
  gt_error_type =
      PyErr_NewException ("gst_train._native.Error", PyExc_RuntimeError, NULL);
  if (PyModule_AddObjectRef (module, "Error", gt_error_type) < 0
      || PyModule_AddObjectRef (module, "Puller", (PyObject *)&gt_puller_type)
          < 0) {
    Py_DECREF (module);
    return NULL;
  }
  return module;
}
