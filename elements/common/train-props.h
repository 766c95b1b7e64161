/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* train-props.h: the elements' properties as a table, one row per
 * property, indexed by its property id, beside the array of GParamSpecs
 * (which say what gst-inspect-1.0 shows). A row says where the property's
 * value lives: the offset of a field from a base, the element itself or a
 * settings struct of its own. Setting and getting copy between the GValue
 * and that field by the pspec's fundamental type, so that a plain property
 * is a field, a row and its GParamSpec, and only a property with side
 * effects needs code: a hook run after a set, or one that computes what a
 * get returns.
 *
 * Both plugins' elements use it, which is why it lives in common/, the
 * static library both link: not part of the public API. */
#ifndef __GST_TRAIN_PROPS_H__
#define __GST_TRAIN_PROPS_H__

#include <glib-object.h>

G_BEGIN_DECLS

typedef struct
{
  /* of the field from the base; enums are kept in a gint-sized field */
  gsize offset;
  /* after @value was stored in the field, under the same lock */
  void (*changed) (gpointer base);
  /* gives the value a get returns, instead of the field's */
  void (*compute) (gconstpointer base, GValue *value);
} GstTrainProp;

/* Stores @value in @prop's field of @base and runs its changed hook. */
void gst_train_prop_set (
    const GstTrainProp *prop, gpointer base, const GValue *value);
/* Sets @value (initialised to the property's type) from @prop's field of
 * @base, or from its compute hook. */
void gst_train_prop_get (
    const GstTrainProp *prop, gconstpointer base, GValue *value);

/* Sets the field of every writable property 1 .. @n - 1 of @base to its
 * pspec's default, without the changed hooks (a default is not a set);
 * @base is zeroed memory or holds values of its own. */
void gst_train_props_init (
    gpointer base, const GstTrainProp *props, GParamSpec **pspecs, guint n);

/* Installs @pspecs 1 .. @n - 1 on @klass (ids 1 .. @n - 1, in that order)
 * with their rows of @props, whose base is the instance, and makes
 * @klass's set_property and get_property the table's own: each applies
 * the property's row under the object lock. @props must outlive the
 * class (a static table). */
void gst_train_props_install (GObjectClass *klass, const GstTrainProp *props,
    GParamSpec **pspecs, guint n);

G_END_DECLS

#endif /* __GST_TRAIN_PROPS_H__ */
