/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* train-props.c: the property tables declared in train-props.h. */
#include "train-props.h"

#include <gst/gst.h>

/* Where a pspec installed by gst_train_props_install finds its row. */
static GQuark
gst_train_prop_quark (void)
{
  static GQuark quark;

  if (quark == 0)
    quark = g_quark_from_static_string ("gst-train-prop");
  return quark;
}

/* Stores @value in @prop's field of @base. */
static void
gst_train_prop_store (
    const GstTrainProp *prop, gpointer base, const GValue *value)
{
  gpointer field = G_STRUCT_MEMBER_P (base, prop->offset);

  switch (G_TYPE_FUNDAMENTAL (G_VALUE_TYPE (value))) {
    case G_TYPE_ENUM:
      *(gint *)field = g_value_get_enum (value);
      break;
    case G_TYPE_BOOLEAN:
      *(gboolean *)field = g_value_get_boolean (value);
      break;
    case G_TYPE_INT:
      *(gint *)field = g_value_get_int (value);
      break;
    case G_TYPE_UINT:
      *(guint *)field = g_value_get_uint (value);
      break;
    case G_TYPE_UINT64:
      *(guint64 *)field = g_value_get_uint64 (value);
      break;
    case G_TYPE_DOUBLE:
      *(gdouble *)field = g_value_get_double (value);
      break;
    case G_TYPE_STRING:
      g_free (*(gchar **)field);
      *(gchar **)field = g_value_dup_string (value);
      break;
    default:
      g_assert_not_reached ();
  }
}

void
gst_train_prop_set (
    const GstTrainProp *prop, gpointer base, const GValue *value)
{
  gst_train_prop_store (prop, base, value);
  if (prop->changed != NULL)
    prop->changed (base);
}

void
gst_train_prop_get (const GstTrainProp *prop, gconstpointer base, GValue *value)
{
  gconstpointer field = (const guint8 *)base + prop->offset;

  if (prop->compute != NULL) {
    prop->compute (base, value);
    return;
  }
  switch (G_TYPE_FUNDAMENTAL (G_VALUE_TYPE (value))) {
    case G_TYPE_ENUM:
      g_value_set_enum (value, *(const gint *)field);
      break;
    case G_TYPE_BOOLEAN:
      g_value_set_boolean (value, *(const gboolean *)field);
      break;
    case G_TYPE_INT:
      g_value_set_int (value, *(const gint *)field);
      break;
    case G_TYPE_UINT:
      g_value_set_uint (value, *(const guint *)field);
      break;
    case G_TYPE_UINT64:
      g_value_set_uint64 (value, *(const guint64 *)field);
      break;
    case G_TYPE_DOUBLE:
      g_value_set_double (value, *(const gdouble *)field);
      break;
    case G_TYPE_STRING:
      g_value_set_string (value, *(gchar *const *)field);
      break;
    default:
      g_assert_not_reached ();
  }
}

void
gst_train_props_init (
    gpointer base, const GstTrainProp *props, GParamSpec **pspecs, guint n)
{
  guint prop_id;

  for (prop_id = 1; prop_id < n; prop_id++) {
    GValue value = G_VALUE_INIT;

    /* a read-only property reports the element's state, not a setting */
    if (!(pspecs[prop_id]->flags & G_PARAM_WRITABLE))
      continue;
    g_value_init (&value, G_PARAM_SPEC_VALUE_TYPE (pspecs[prop_id]));
    g_param_value_set_default (pspecs[prop_id], &value);
    gst_train_prop_store (&props[prop_id], base, &value);
    g_value_unset (&value);
  }
}

static void
gst_train_props_set_property (
    GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
  const GstTrainProp *prop =
      g_param_spec_get_qdata (pspec, gst_train_prop_quark ());

  if (prop == NULL) {
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    return;
  }
  GST_OBJECT_LOCK (object);
  gst_train_prop_set (prop, object, value);
  GST_OBJECT_UNLOCK (object);
}

static void
gst_train_props_get_property (
    GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  const GstTrainProp *prop =
      g_param_spec_get_qdata (pspec, gst_train_prop_quark ());

  if (prop == NULL) {
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    return;
  }
  GST_OBJECT_LOCK (object);
  gst_train_prop_get (prop, object, value);
  GST_OBJECT_UNLOCK (object);
}

void
gst_train_props_install (GObjectClass *klass, const GstTrainProp *props,
    GParamSpec **pspecs, guint n)
{
  guint prop_id;

  for (prop_id = 1; prop_id < n; prop_id++)
    g_param_spec_set_qdata (
        pspecs[prop_id], gst_train_prop_quark (), (gpointer)&props[prop_id]);
  klass->set_property = gst_train_props_set_property;
  klass->get_property = gst_train_props_get_property;
  g_object_class_install_properties (klass, n, pspecs);
}
