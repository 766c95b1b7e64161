/* gst-train.c: runs a training pipeline and shows how it is doing.
 *
 *   gst-train [--dot-dir DIR] [--summary FILE] [--quiet] [--resume CKPT]
 *             LAUNCH-LINE...
 *   gst-train [--dot-dir DIR] [--summary FILE] [--quiet] [--resume CKPT]
 *             -f FILE.pipeline
 *
 * A small GLib application on the GStreamer API, written to be read by
 * those who embed gst-train in their own programs: it finds its own plugins
 * (beside itself in the build tree, or where it was installed), builds the
 * pipeline with gst_parse_launch (a property value out of its range is an
 * error, not a warning), watches the bus, prints a progress line for every
 * `train-stats` message of cudatrainsink (and the result of an eval run),
 * turns the first Ctrl-C (or SIGTERM) into a stop: cudatrainsink finishes
 * its step and writes its final checkpoint without training on what is
 * still queued (a second one aborts), closes with the step it stopped at,
 * writes graphviz dot dumps of the pipeline with every property at every
 * state change, at EOS and on error (--dot-dir), and a JSON summary
 * (--summary). --resume CKPT sets resume-from on every cudatrainsink: run
 * with the launch line (or pipeline file) and seeds of the run that wrote
 * CKPT, training goes on exactly where it stopped, and datasetsrc starts
 * there without reading what was trained on. Exit status: 0 when the pipeline reached EOS, 1 on an error
 * (its text on stderr), 2 on bad usage (a bad property value included), 130
 * when aborted.
 *
 * Under a launcher (mpirun -np N gst-train ..., srun: one process per rank
 * of a data-parallel job, docs/distributed.md) rank 0 alone prints progress,
 * results and the closing line, and writes dot dumps and the summary; every
 * rank prints its errors and warnings, each line starting with "rank R: ".
 */
#include "train-report.h"
#include "gt-launcher.h"

#include <gst/gst.h>
#include <glib-unix.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

/* Where the installed plugins are, relative to the folder of the installed
 * gst-train (or absolute); set by meson. */
#ifndef GST_TRAIN_PLUGINS_RELDIR
#define GST_TRAIN_PLUGINS_RELDIR "../lib/gstreamer-1.0"
#endif
#define TRAIN_SINK_FACTORY "cudatrainsink"

typedef struct
{
  GstElement *pipeline;
  GMainLoop *loop;
  gboolean quiet;
  const gchar *dot_dir;
  gint dots;
  gint interrupts;
  /* under eos_lock: send_eos has not returned (eos_done when it does) */
  gboolean eos_in_flight;
  GMutex eos_lock;
  GCond eos_done;
  gint exit_status;
  gchar *error;
  GstStructure *last_stats;
  GstStructure *eval_result;
  gint64 start;
  /* the cudatrainsinks of the pipeline (refs), and the last step each
   * reported (sink name -> guint64 *) */
  GList *sinks;
  GHashTable *last_steps;
  gboolean played;
  /* a rank other than 0 of a data-parallel job: errors and warnings only */
  gboolean follower;
} App;

/* "rank R: " before every line on stderr in a job of more than one rank,
 * else "" (set in main). */
static gchar rank_prefix[32];

/* An element's @message without the rank it starts with (cudatrainsink
 * names it): the line starts with the rank already. */
static const gchar *
without_rank (const gchar *message)
{
  return g_str_has_prefix (message, rank_prefix)
      ? message + strlen (rank_prefix)
      : message;
}

/* ---- finding our own plugins ---- */

/* Appends @dir to the plugin path GStreamer will read (GST_PLUGIN_PATH_1_0
 * when the user set it, GST_PLUGIN_PATH otherwise), after what the user put
 * there, unless it is there already. */
static void
append_plugin_path (const gchar *dir)
{
  const gchar *variable = g_getenv ("GST_PLUGIN_PATH_1_0")
      ? "GST_PLUGIN_PATH_1_0"
      : "GST_PLUGIN_PATH";
  const gchar *current = g_getenv (variable);
  gchar **entries, *joined;
  gboolean present = FALSE;
  gint i;

  if (current == NULL || current[0] == '\0') {
    g_setenv (variable, dir, TRUE);
    return;
  }
  entries = g_strsplit (current, G_SEARCHPATH_SEPARATOR_S, -1);
  for (i = 0; entries[i] && !present; i++)
    present = g_strcmp0 (entries[i], dir) == 0;
  g_strfreev (entries);
  if (present)
    return;
  joined = g_strconcat (current, G_SEARCHPATH_SEPARATOR_S, dir, NULL);
  g_setenv (variable, joined, TRUE);
  g_free (joined);
}

/* Adds the plugin folders that belong to this gst-train to GStreamer's
 * plugin path, so that it runs from a new shell without GST_PLUGIN_PATH:
 * ../gst-plugins beside the binary in the build tree, the installed plugin
 * folder once installed. Only folders that exist; before gst_init. */
static void
add_own_plugin_path (void)
{
  const gchar *relative[] = { "../gst-plugins", GST_TRAIN_PLUGINS_RELDIR };
  gchar *exe, *bindir;
  guint i;

  exe = g_file_read_link ("/proc/self/exe", NULL);
  if (exe == NULL)
    return;
  bindir = g_path_get_dirname (exe);
  for (i = 0; i < G_N_ELEMENTS (relative); i++) {
    gchar *dir = g_path_is_absolute (relative[i])
        ? g_strdup (relative[i])
        : g_build_filename (bindir, relative[i], NULL);
    gchar *canonical = g_canonicalize_filename (dir, NULL);

    if (g_file_test (canonical, G_FILE_TEST_IS_DIR))
      append_plugin_path (canonical);
    g_free (canonical);
    g_free (dir);
  }
  g_free (bindir);
  g_free (exe);
}

/* ---- property values out of range ---- */

/* GLib warns about a property value out of range, sets nothing and goes on:
 * while the launch line is parsed, such warnings (and criticals) are
 * collected instead, to be reported as errors. */
typedef struct
{
  GPtrArray *messages;
  guint handlers[2];
} ParseLog;

static void
collect_log_message (const gchar *domain, GLogLevelFlags level,
    const gchar *message, gpointer data)
{
  ParseLog *log = data;

  g_ptr_array_add (log->messages, g_strdup (message));
}

static void
parse_log_begin (ParseLog *log)
{
  const gchar *domains[] = { "GLib-GObject", "GStreamer" };
  guint i;

  log->messages = g_ptr_array_new_with_free_func (g_free);
  for (i = 0; i < G_N_ELEMENTS (domains); i++)
    log->handlers[i] = g_log_set_handler (domains[i],
        G_LOG_LEVEL_WARNING | G_LOG_LEVEL_CRITICAL | G_LOG_FLAG_FATAL
            | G_LOG_FLAG_RECURSION,
        collect_log_message, log);
}

/* Removes the handlers: the default handler is back. */
static void
parse_log_end (ParseLog *log)
{
  g_log_remove_handler ("GLib-GObject", log->handlers[0]);
  g_log_remove_handler ("GStreamer", log->handlers[1]);
}

/* The text between @open and the next @close after it in @text, or NULL. */
static gchar *
text_between (const gchar *text, const gchar *open, const gchar *close)
{
  const gchar *start = strstr (text, open), *end;

  if (start == NULL)
    return NULL;
  start += strlen (open);
  end = strstr (start, close);
  return end ? g_strndup (start, end - start) : NULL;
}

/* "MIN to MAX" for a numeric property, NULL for other kinds. */
static gchar *
describe_range (GParamSpec *pspec)
{
#define RANGE(TYPE, FORMAT)                                                    \
  if (G_IS_PARAM_SPEC_##TYPE (pspec))                                          \
    return g_strdup_printf (FORMAT " to " FORMAT,                              \
        G_PARAM_SPEC_##TYPE (pspec)->minimum,                                  \
        G_PARAM_SPEC_##TYPE (pspec)->maximum);
  RANGE (INT, "%d");
  RANGE (UINT, "%u");
  RANGE (LONG, "%ld");
  RANGE (ULONG, "%lu");
  RANGE (INT64, "%" G_GINT64_FORMAT);
  RANGE (UINT64, "%" G_GUINT64_FORMAT);
  RANGE (FLOAT, "%g");
  RANGE (DOUBLE, "%g");
#undef RANGE
  return NULL;
}

/* Whether @text, read as a value of @pspec's type, is one @pspec refuses. */
static gboolean
value_refused (GParamSpec *pspec, const gchar *text)
{
  GValue value = G_VALUE_INIT;
  gboolean refused;

  g_value_init (&value, pspec->value_type);
  if (!gst_value_deserialize (&value, text)) {
    g_value_unset (&value);
    return TRUE;
  }
  /* validating changes a value it refuses */
  refused = g_param_value_validate (pspec, &value);
  g_value_unset (&value);
  return refused;
}

/* The value the user wrote for @pspec in @launch, when it is set there
 * once: GLib's message has it converted (-3 for an unsigned property reads
 * 18446744073709551613; doubles have six decimals). Otherwise GLib's text,
 * doubles shortened. */
static gchar *
user_value (const gchar *launch, GParamSpec *pspec, const gchar *text)
{
  gchar *key = g_strconcat (pspec->name, "=", NULL);
  const gchar *at, *found = NULL;
  gint count = 0;

  for (at = strstr (launch, key); at; at = strstr (at + 1, key))
    if (at == launch || g_ascii_isspace (at[-1])) {
      found = at + strlen (key);
      count++;
    }
  g_free (key);
  if (count == 1) {
    gsize length = 0;

    while (found[length] && !g_ascii_isspace (found[length])
        && found[length] != '!')
      length++;
    if (length > 0)
      return g_strndup (found, length);
  }
  if (G_IS_PARAM_SPEC_DOUBLE (pspec) || G_IS_PARAM_SPEC_FLOAT (pspec))
    return g_strdup_printf ("%g", g_ascii_strtod (text, NULL));
  return g_strdup (text);
}

/* Prints one collected warning as an error: which element, which property,
 * the value and the range the property takes. Elements of @pipeline that
 * have the property and refuse the value are named (GLib's message names
 * neither the element nor the range). */
static void
report_refused_value (
    GstElement *pipeline, const gchar *launch, const gchar *message)
{
  gchar *value = text_between (message, "value \"", "\"");
  gchar *property = text_between (message, "for property '", "'");
  GParamSpec *found = NULL;
  GString *owners = g_string_new (NULL);
  GstIterator *it;
  GValue item = G_VALUE_INIT;

  if (value == NULL || property == NULL || !GST_IS_BIN (pipeline)) {
    g_printerr (
        "gst-train: the pipeline does not parse cleanly: %s\n", message);
    goto done;
  }
  it = gst_bin_iterate_recurse (GST_BIN (pipeline));
  while (gst_iterator_next (it, &item) == GST_ITERATOR_OK) {
    GstElement *element = g_value_get_object (&item);
    GParamSpec *pspec =
        g_object_class_find_property (G_OBJECT_GET_CLASS (element), property);

    if (pspec && value_refused (pspec, value)) {
      found = pspec;
      /* the iterator goes from the last element added to the first */
      if (owners->len > 0)
        g_string_prepend (owners, " or ");
      g_string_prepend (owners, GST_OBJECT_NAME (element));
    }
    g_value_reset (&item);
  }
  g_value_unset (&item);
  gst_iterator_free (it);
  if (found == NULL) {
    g_printerr (
        "gst-train: the pipeline does not parse cleanly: %s\n", message);
  } else {
    gchar *range = describe_range (found),
          *shown = user_value (launch, found, value);

    if (range)
      g_printerr ("gst-train: %s: %s=%s is out of range: %s takes %s\n",
          owners->str, property, shown, property, range);
    else
      g_printerr ("gst-train: %s: %s=%s is not a value %s takes\n", owners->str,
          property, shown, property);
    g_free (range);
    g_free (shown);
  }
done:
  g_string_free (owners, TRUE);
  g_free (value);
  g_free (property);
}

static gchar *
read_pipeline_file (const gchar *path, GError **error)
{
  gchar *text, **lines, *joined;
  GString *launch;
  gint i;

  if (!g_file_get_contents (path, &text, NULL, error))
    return NULL;
  /* '#' starts a comment line; the rest is one launch line */
  lines = g_strsplit (text, "\n", -1);
  launch = g_string_new (NULL);
  for (i = 0; lines[i]; i++) {
    gchar *line = g_strstrip (lines[i]);

    if (line[0] == '#' || line[0] == '\0')
      continue;
    g_string_append_c (launch, ' ');
    g_string_append (launch, line);
  }
  g_strfreev (lines);
  g_free (text);
  joined = g_string_free (launch, FALSE);
  return joined;
}

static gdouble
field_double (const GstStructure *s, const gchar *name)
{
  gdouble value = 0;

  gst_structure_get_double (s, name, &value);
  return value;
}

static void
print_progress (App *app, const GstStructure *s)
{
  guint64 step = 0;

  if (app->quiet)
    return;
  gst_structure_get_uint64 (s, "step", &step);
  g_print ("step %" G_GUINT64_FORMAT " | epoch %.2f | loss %.4f | lr %.4g | "
           "%.1f img/s | fresh %.1f img/s | echo x%.2f | data wait %.0f%%\n",
      step, field_double (s, "epoch"), field_double (s, "loss"),
      field_double (s, "lr"), field_double (s, "images-per-second"),
      field_double (s, "fresh-images-per-second"),
      field_double (s, "echo-factor"),
      100.0 * field_double (s, "data-wait-fraction"));
}

/* ---- the cudatrainsinks ---- */

/* Every cudatrainsink in @pipeline, in bins too (refs). */
static GList *
find_train_sinks (GstElement *pipeline)
{
  GList *sinks = NULL;
  GstIterator *it;
  GValue item = G_VALUE_INIT;

  if (!GST_IS_BIN (pipeline)) {
    GstElementFactory *factory = gst_element_get_factory (pipeline);

    if (factory
        && g_strcmp0 (GST_OBJECT_NAME (factory), TRAIN_SINK_FACTORY) == 0)
      sinks = g_list_append (sinks, gst_object_ref (pipeline));
    return sinks;
  }
  it = gst_bin_iterate_recurse (GST_BIN (pipeline));
  while (gst_iterator_next (it, &item) == GST_ITERATOR_OK) {
    GstElement *element = g_value_get_object (&item);
    GstElementFactory *factory = gst_element_get_factory (element);

    if (factory
        && g_strcmp0 (GST_OBJECT_NAME (factory), TRAIN_SINK_FACTORY) == 0)
      sinks = g_list_prepend (sinks, gst_object_ref (element));
    g_value_reset (&item);
  }
  g_value_unset (&item);
  gst_iterator_free (it);
  return g_list_reverse (sinks);
}

static gboolean
sink_evaluates (GstElement *sink)
{
  GParamSpec *pspec =
      g_object_class_find_property (G_OBJECT_GET_CLASS (sink), "mode");
  GEnumValue *value;
  gint mode;

  if (pspec == NULL || !G_IS_PARAM_SPEC_ENUM (pspec))
    return FALSE;
  g_object_get (sink, "mode", &mode, NULL);
  value = g_enum_get_value (G_PARAM_SPEC_ENUM (pspec)->enum_class, mode);
  return value && g_strcmp0 (value->value_nick, "eval") == 0;
}

/* "gst-train: ", or "gst-train: NAME: " when there are several sinks. */
static gchar *
sink_prefix (App *app, GstElement *sink)
{
  if (app->sinks && app->sinks->next)
    return g_strdup_printf ("gst-train: %s: ", GST_OBJECT_NAME (sink));
  return g_strdup ("gst-train: ");
}

/* Once PLAYING, before the first progress line (which can take minutes on
 * the CPU): says that it runs and when the first line will come. */
static void
announce_playing (App *app)
{
  GList *l;

  if (app->played)
    return;
  app->played = TRUE;
  if (app->quiet || app->last_stats)
    return;
  for (l = app->sinks; l; l = l->next) {
    gchar *prefix = sink_prefix (app, l->data);
    guint interval = 0;

    if (sink_evaluates (l->data)) {
      g_print ("%splaying; evaluating, the result comes at the end of the "
               "data\n",
          prefix);
    } else {
      g_object_get (l->data, "stats-interval", &interval, NULL);
      if (interval == 0)
        g_print (
            "%splaying; progress only at the end (stats-interval=0)\n", prefix);
      else
        g_print ("%splaying; the first progress line comes after "
                 "stats-interval steps (%u)\n",
            prefix, interval);
    }
    g_free (prefix);
  }
}

/* Before the first progress line: what the trainer runs on (the BLAS and
 * its kernels on the CPU, the GPU and cuDNN), from train-stats. */
static void
announce_compute (App *app, GstMessage *message, const GstStructure *stats)
{
  const gchar *compute = gst_structure_get_string (stats, "compute");
  gchar *prefix;

  if (app->quiet || compute == NULL || *compute == '\0')
    return;
  prefix = sink_prefix (app, GST_ELEMENT (GST_MESSAGE_SRC (message)));
  g_print ("%straining on %s\n", prefix, compute);
  g_free (prefix);
}

/* Asks every cudatrainsink that has the "stop" action signal to finish its
 * step in flight, write its final statistics and checkpoint and end the
 * stream without training on what is still queued. Returns how many did. */
static gint
stop_train_sinks (App *app)
{
  gint stopped = 0;
  GList *l;

  for (l = app->sinks; l; l = l->next) {
    guint id = g_signal_lookup ("stop", G_OBJECT_TYPE (l->data));
    GSignalQuery query;
    GValue instance = G_VALUE_INIT, result = G_VALUE_INIT;

    if (id == 0)
      continue;
    g_signal_query (id, &query);
    if (query.n_params != 0)
      continue;
    /* g_signal_emitv: whatever the signal returns has a place to go */
    g_value_init (&instance, G_OBJECT_TYPE (l->data));
    g_value_set_object (&instance, l->data);
    if (query.return_type != G_TYPE_NONE)
      g_value_init (&result, query.return_type & ~G_SIGNAL_TYPE_STATIC_SCOPE);
    g_signal_emitv (
        &instance, id, 0, query.return_type != G_TYPE_NONE ? &result : NULL);
    if (G_IS_VALUE (&result))
      g_value_unset (&result);
    g_value_unset (&instance);
    stopped++;
  }
  return stopped;
}

/* The line that closes a training run: the step it stopped at and where the
 * final checkpoint is. An eval run has its result line instead, a failed
 * run its error. */
static void
print_closing (App *app)
{
  GList *l;

  if (app->exit_status == 1)
    return;
  for (l = app->sinks; l; l = l->next) {
    const guint64 *step =
        g_hash_table_lookup (app->last_steps, GST_OBJECT_NAME (l->data));
    gchar *prefix, *location = NULL, *where;

    if (sink_evaluates (l->data))
      continue;
    prefix = sink_prefix (app, l->data);
    g_object_get (l->data, "checkpoint-location", &location, NULL);
    where = step ? g_strdup_printf ("at step %" G_GUINT64_FORMAT, *step)
                 : g_strdup ("before training a step");
    /* aborted: the step is the last one reported, and whatever the sink
     * was writing was not waited for */
    if (app->exit_status == 130 && step)
      g_print ("%saborted; the last step reported was %" G_GUINT64_FORMAT
               "; the final checkpoint was not waited for\n",
          prefix, *step);
    else if (app->exit_status == 130)
      g_print ("%saborted before a step was reported\n", prefix);
    else if (location)
      g_print (
          "%sstopped %s; checkpoint written to %s\n", prefix, where, location);
    else
      g_print ("%sstopped %s; no checkpoint-location set\n", prefix, where);
    g_free (where);
    g_free (location);
    g_free (prefix);
  }
}

/* ---- dot dumps ---- */

/* "\nname=value" for every readable property of @element, default values
 * included, escaped as GStreamer's dumps write values. Objects, pointers and
 * boxed values other than caps (the last sample, statistics) are left out,
 * as are name and parent, which the label shows already. */
static void
append_every_param (GString *label, GstElement *element)
{
  GParamSpec **pspecs;
  guint n, i;

  pspecs = g_object_class_list_properties (G_OBJECT_GET_CLASS (element), &n);
  for (i = 0; i < n; i++) {
    GParamSpec *pspec = pspecs[i];
    GType type = pspec->value_type;
    GValue value = G_VALUE_INIT;
    gchar *contents, *escaped;

    if (!(pspec->flags & G_PARAM_READABLE) || g_str_equal (pspec->name, "name")
        || g_str_equal (pspec->name, "parent") || type == G_TYPE_POINTER
        || G_TYPE_IS_OBJECT (type) || G_TYPE_IS_INTERFACE (type)
        || (G_TYPE_FUNDAMENTAL (type) == G_TYPE_BOXED && type != GST_TYPE_CAPS))
      continue;
    g_value_init (&value, type);
    g_object_get_property (G_OBJECT (element), pspec->name, &value);
    /* enums and flags by their nicks, as GStreamer's own labels show them;
     * numbers with their significant digits (0.00005, not 0.000050) */
    if (G_VALUE_HOLDS_ENUM (&value) || G_VALUE_HOLDS_FLAGS (&value))
      contents = gst_value_serialize (&value);
    else if (G_VALUE_HOLDS_DOUBLE (&value))
      contents = g_strdup_printf ("%g", g_value_get_double (&value));
    else if (G_VALUE_HOLDS_FLOAT (&value))
      contents = g_strdup_printf ("%g", g_value_get_float (&value));
    else
      contents = NULL;
    if (contents == NULL)
      contents = g_strdup_value_contents (&value);
    escaped = g_strescape (contents, NULL);
    g_string_append_printf (label, "\\n%s=%s", pspec->name, escaped);
    g_free (escaped);
    g_free (contents);
    g_value_unset (&value);
  }
  g_free (pspecs);
}

/* GStreamer's dumps show only the properties that differ from the default
 * of their GParamSpec (whatever the details flags): a default-valued
 * property, or one that an element's own default overrides, is not shown.
 * Rewrites the label of every element's cluster in @dot to its first three
 * lines (type, name, state) and every property. */
static void
show_every_param (GString *dot, GstBin *pipeline)
{
  GstIterator *it = gst_bin_iterate_recurse (pipeline);
  GValue item = G_VALUE_INIT;

  while (gst_iterator_next (it, &item) == GST_ITERATOR_OK) {
    GstElement *element = g_value_get_object (&item);
    gchar *id, *key, *cluster, *label, *end, *cut;
    GString *replacement;
    gint newlines = 0;

    /* GStreamer names the cluster after the element's name and address */
    id = g_strdup_printf ("%s_%p", GST_OBJECT_NAME (element), (void *)element);
    g_strcanon (id, G_CSET_A_2_Z G_CSET_a_2_z G_CSET_DIGITS "_", '_');
    key = g_strdup_printf ("subgraph cluster_%s {\n", id);
    cluster = strstr (dot->str, key);
    label = cluster ? strstr (cluster + strlen (key), "label=\"") : NULL;
    if (label) {
      label += strlen ("label=\"");
      /* the closing quote: the first one not escaped */
      for (end = label; *end && *end != '"'; end++)
        if (*end == '\\' && end[1])
          end++;
      /* after type, name and state: the third "\n", or the end when
       * GStreamer showed no property */
      for (cut = label; cut < end; cut++)
        if (cut[0] == '\\' && cut[1] == 'n' && ++newlines == 3)
          break;
      if (*end == '"' && newlines >= 2) {
        gsize at = cut - dot->str, length = end - cut;

        replacement = g_string_new (NULL);
        append_every_param (replacement, element);
        g_string_erase (dot, at, length);
        g_string_insert (dot, at, replacement->str);
        g_string_free (replacement, TRUE);
      }
    }
    g_free (key);
    g_free (id);
    g_value_reset (&item);
  }
  g_value_unset (&item);
  gst_iterator_free (it);
}

/* Writes DIR/NNNN-NAME.dot, every property shown. gst_debug_bin_to_dot_data
 * rather than GST_DEBUG_BIN_TO_DOT_FILE, which needs GST_DEBUG_DUMP_DOT_DIR
 * set before GStreamer initialises (and option parsing initialises it). */
static void
dump_dot (App *app, const gchar *name)
{
  gchar *data, *file, *path;
  GString *dot;
  GError *error = NULL;

  if (app->dot_dir == NULL)
    return;
  dot = g_string_new (NULL);
  data = gst_debug_bin_to_dot_data (
      GST_BIN (app->pipeline), GST_DEBUG_GRAPH_SHOW_VERBOSE);
  g_string_assign (dot, data);
  g_free (data);
  show_every_param (dot, GST_BIN (app->pipeline));
  data = g_string_free (dot, FALSE);
  file = g_strdup_printf ("%04d-%s.dot", app->dots++, name);
  path = g_build_filename (app->dot_dir, file, NULL);
  if (!g_file_set_contents (path, data, -1, &error)) {
    g_printerr ("could not write %s: %s\n", path, error->message);
    g_error_free (error);
  }
  g_free (path);
  g_free (file);
  g_free (data);
}

static gboolean
on_bus_message (GstBus *bus, GstMessage *message, gpointer data)
{
  App *app = data;

  switch (GST_MESSAGE_TYPE (message)) {
    case GST_MESSAGE_ELEMENT: {
      const GstStructure *s = gst_message_get_structure (message);

      if (gst_structure_has_name (s, "train-stats")) {
        guint64 *step = g_new0 (guint64, 1);

        gst_structure_get_uint64 (s, "step", step);
        g_hash_table_replace (app->last_steps,
            g_strdup (GST_OBJECT_NAME (GST_MESSAGE_SRC (message))), step);
        if (app->last_stats)
          gst_structure_free (app->last_stats);
        else
          announce_compute (app, message, s);
        app->last_stats = gst_structure_copy (s);
        print_progress (app, s);
      } else if (gst_structure_has_name (s, "eval-result") && !app->follower) {
        guint64 images = 0;

        if (app->eval_result)
          gst_structure_free (app->eval_result);
        app->eval_result = gst_structure_copy (s);
        gst_structure_get_uint64 (s, "images", &images);
        g_print ("eval: %" G_GUINT64_FORMAT " images, loss %.4f, top-1 "
                 "%.2f%%, top-5 %.2f%%\n",
            images, field_double (s, "loss"), 100 * field_double (s, "top1"),
            100 * field_double (s, "top5"));
      }
      break;
    }
    case GST_MESSAGE_STATE_CHANGED:
      if (GST_MESSAGE_SRC (message) == GST_OBJECT (app->pipeline)) {
        GstState old_state, new_state;
        gchar *name;

        gst_message_parse_state_changed (message, &old_state, &new_state, NULL);
        name = g_strdup_printf ("%s_%s", gst_element_state_get_name (old_state),
            gst_element_state_get_name (new_state));
        dump_dot (app, name);
        g_free (name);
        if (new_state == GST_STATE_PLAYING)
          announce_playing (app);
      }
      break;
    case GST_MESSAGE_WARNING: {
      GError *error = NULL;

      gst_message_parse_warning (message, &error, NULL);
      g_printerr ("%swarning from %s: %s\n", rank_prefix,
          GST_OBJECT_NAME (message->src), without_rank (error->message));
      g_error_free (error);
      break;
    }
    case GST_MESSAGE_ERROR: {
      GError *error = NULL;
      gchar *debug = NULL;

      gst_message_parse_error (message, &error, &debug);
      /* the first error is the cause; later ones are its consequences */
      if (app->error == NULL)
        app->error = debug ? g_strdup_printf ("%s: %s (%s)",
                         GST_OBJECT_NAME (message->src), error->message, debug)
                           : g_strdup_printf ("%s: %s",
                               GST_OBJECT_NAME (message->src), error->message);
      g_printerr ("%serror from %s: %s\n", rank_prefix,
          GST_OBJECT_NAME (message->src), without_rank (error->message));
      dump_dot (app, "error");
      app->exit_status = 1;
      g_error_free (error);
      g_free (debug);
      g_main_loop_quit (app->loop);
      break;
    }
    case GST_MESSAGE_EOS:
      /* the last look at the pipeline, before it goes to NULL */
      dump_dot (app, "eos");
      g_main_loop_quit (app->loop);
      break;
    default:
      break;
  }
  return G_SOURCE_CONTINUE;
}

/* Sends EOS into the pipeline, on one of GStreamer's own threads. */
static void
send_eos (GstElement *pipeline, gpointer data)
{
  App *app = data;

  if (!gst_element_send_event (pipeline, gst_event_new_eos ()))
    g_printerr ("%sinterrupt: the pipeline did not take EOS; Ctrl-C again "
                "to abort\n",
        rank_prefix);
  g_mutex_lock (&app->eos_lock);
  app->eos_in_flight = FALSE;
  g_cond_broadcast (&app->eos_done);
  g_mutex_unlock (&app->eos_lock);
}

/* Waits up to @seconds for send_eos to return; TRUE when it has. */
static gboolean
wait_eos_sent (App *app, gint seconds)
{
  gint64 deadline = g_get_monotonic_time () + seconds * G_TIME_SPAN_SECOND;
  gboolean sent;

  g_mutex_lock (&app->eos_lock);
  while (app->eos_in_flight
      && g_cond_wait_until (&app->eos_done, &app->eos_lock, deadline))
    ;
  sent = !app->eos_in_flight;
  g_mutex_unlock (&app->eos_lock);
  return sent;
}

/* First Ctrl-C (or SIGTERM): the sinks stop after their step in flight
 * and write their final checkpoint; the second: stop now. */
static gboolean
on_interrupt (gpointer data)
{
  App *app = data;

  if (++app->interrupts == 1) {
    /* cudatrainsink's "stop" does not wait for the batches queued before
     * it; EOS from the sources too, for pipelines without that sink (or
     * with one that has no "stop"), where what is queued is trained on */
    if (stop_train_sinks (app) > 0)
      g_printerr ("%sinterrupt: stopping after the step in flight; the "
                  "batches still queued are not used, the final checkpoint "
                  "(or eval result) is written (Ctrl-C again to abort)\n",
          rank_prefix);
    else
      g_printerr ("%sinterrupt: ending the stream; the batches already "
                  "queued are trained on, then the final checkpoint is "
                  "written (Ctrl-C again to abort)\n",
          rank_prefix);
    /* not from the main loop: a source whose streaming thread is stuck
     * pushing holds a lock that sending it an event waits for, and the
     * second Ctrl-C must still get through */
    g_mutex_lock (&app->eos_lock);
    app->eos_in_flight = TRUE;
    g_mutex_unlock (&app->eos_lock);
    gst_element_call_async (app->pipeline, send_eos, app, NULL);
    return G_SOURCE_CONTINUE;
  }
  g_printerr ("%sinterrupt: aborting\n", rank_prefix);
  app->exit_status = 130;
  g_main_loop_quit (app->loop);
  return G_SOURCE_CONTINUE;
}

/* Appends ,\n  "@key": {fields of @s} to the summary. */
static void
append_fields (GString *json, const gchar *key, const GstStructure *s)
{
  TrainJsonObject object;

  g_string_append (json, ",\n  ");
  train_json_append_string (json, key);
  g_string_append (json, ": ");
  train_json_object_begin (&object, json);
  gst_structure_foreach (s, train_json_object_add_field, &object);
  train_json_object_end (&object);
}

static gboolean
write_summary (App *app, const gchar *path)
{
  GString *json = g_string_new ("{\n");
  GError *error = NULL;
  gboolean ok;

  g_string_append_printf (json,
      "  \"exit-status\": %d,\n  \"seconds\": %.3f,\n", app->exit_status,
      (g_get_monotonic_time () - app->start) / 1e6);
  g_string_append (json, "  \"error\": ");
  if (app->error)
    train_json_append_string (json, app->error);
  else
    g_string_append (json, "null");
  if (app->last_stats)
    append_fields (json, "last-train-stats", app->last_stats);
  if (app->eval_result)
    append_fields (json, "eval-result", app->eval_result);
  g_string_append (json, "\n}\n");
  ok = g_file_set_contents (path, json->str, -1, &error);
  if (!ok) {
    g_printerr ("could not write the summary: %s\n", error->message);
    g_error_free (error);
  }
  g_string_free (json, TRUE);
  return ok;
}

int
main (int argc, char **argv)
{
  /* freed on every way out */
  g_autofree gchar *file = NULL;
  g_autofree gchar *dot_dir = NULL;
  g_autofree gchar *summary = NULL;
  g_autofree gchar *launch = NULL;
  g_autofree gchar *resume = NULL;
  gboolean quiet = FALSE;
  GOptionEntry entries[] = {
    { "file", 'f', 0, G_OPTION_ARG_FILENAME, &file,
        "Read the launch line from FILE ('#' lines are comments)", "FILE" },
    { "dot-dir", 0, 0, G_OPTION_ARG_FILENAME, &dot_dir,
        "Write graphviz dot dumps of the pipeline to DIR at every state "
        "change and on error",
        "DIR" },
    { "summary", 0, 0, G_OPTION_ARG_FILENAME, &summary,
        "Write a JSON summary (last statistics, eval result, error) to FILE",
        "FILE" },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "No progress lines", NULL },
    { "resume", 0, 0, G_OPTION_ARG_FILENAME, &resume,
        "Resume every cudatrainsink from the checkpoint CKPT (its "
        "resume-from): with the same pipeline and seeds, training goes on "
        "exactly where CKPT stopped, the source starting there",
        "CKPT" },
    { NULL },
  };
  GOptionContext *context;
  GError *error = NULL;
  GtLauncherPosition position;
  App app = { 0 };
  ParseLog parse_log;
  GstBus *bus;
  GList *l;
  guint signal_sources[2], i;
  gboolean stuck = FALSE;

  g_mutex_init (&app.eos_lock);
  g_cond_init (&app.eos_done);
  /* before option parsing, which initialises GStreamer */
  add_own_plugin_path ();
  context = g_option_context_new ("[LAUNCH-LINE...]");
  g_option_context_set_summary (context,
      "Runs a gst-train pipeline: progress lines, Ctrl-C writes the final "
      "checkpoint, dot dumps and a JSON summary on request.");
  g_option_context_add_main_entries (context, entries, NULL);
  g_option_context_add_group (context, gst_init_get_option_group ());
  if (!g_option_context_parse (context, &argc, &argv, &error)) {
    g_printerr ("gst-train: %s\n", error->message);
    return 2;
  }
  g_option_context_free (context);

  if (file != NULL && argc > 1) {
    g_printerr ("gst-train: give a launch line or -f FILE, not both\n");
    return 2;
  }
  if (file != NULL) {
    launch = read_pipeline_file (file, &error);
    if (launch == NULL) {
      g_printerr ("gst-train: %s\n", error->message);
      return 2;
    }
  } else if (argc > 1) {
    launch = g_strjoinv (" ", argv + 1);
  } else {
    g_printerr ("gst-train: no pipeline (see --help)\n");
    return 2;
  }

  /* a data-parallel job: rank 0 speaks for it */
  if (gt_launcher_position (&position) && position.size > 1) {
    g_snprintf (rank_prefix, sizeof (rank_prefix), "rank %d: ", position.rank);
    app.follower = position.rank > 0;
    quiet |= app.follower;
    if (app.follower)
      g_clear_pointer (&dot_dir, g_free);
    if (app.follower)
      g_clear_pointer (&summary, g_free);
  }
  if (dot_dir) {
    if (g_mkdir_with_parents (dot_dir, 0755) < 0) {
      g_printerr (
          "gst-train: cannot create %s: %s\n", dot_dir, g_strerror (errno));
      return 2;
    }
    app.dot_dir = dot_dir;
  }
  gst_init (NULL, NULL);

  app.quiet = quiet;
  app.start = g_get_monotonic_time ();
  parse_log_begin (&parse_log);
  app.pipeline = gst_parse_launch (launch, &error);
  parse_log_end (&parse_log);
  if (app.pipeline == NULL || error != NULL) {
    g_printerr ("%sgst-train: the pipeline does not parse: %s\n", rank_prefix,
        error ? error->message : "unknown error");
    if (app.pipeline)
      gst_object_unref (app.pipeline);
    g_ptr_array_unref (parse_log.messages);
    return 1;
  }
  if (parse_log.messages->len > 0) {
    /* GLib kept the default and would go on: nothing runs */
    for (i = 0; i < parse_log.messages->len; i++)
      report_refused_value (app.pipeline, launch, parse_log.messages->pdata[i]);
    g_ptr_array_unref (parse_log.messages);
    gst_object_unref (app.pipeline);
    return 2;
  }
  g_ptr_array_unref (parse_log.messages);
  app.sinks = find_train_sinks (app.pipeline);
  if (resume != NULL && app.sinks == NULL) {
    g_printerr ("%sgst-train: --resume: the pipeline has no %s\n", rank_prefix,
        TRAIN_SINK_FACTORY);
    gst_object_unref (app.pipeline);
    return 2;
  }
  for (l = app.sinks; resume != NULL && l != NULL; l = l->next)
    g_object_set (l->data, "resume-from", resume, NULL);
  app.last_steps =
      g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  app.loop = g_main_loop_new (NULL, FALSE);
  bus = gst_element_get_bus (app.pipeline);
  gst_bus_add_watch (bus, on_bus_message, &app);
  gst_object_unref (bus);
  signal_sources[0] = g_unix_signal_add (SIGINT, on_interrupt, &app);
  signal_sources[1] = g_unix_signal_add (SIGTERM, on_interrupt, &app);

  if (gst_element_set_state (app.pipeline, GST_STATE_PLAYING)
      == GST_STATE_CHANGE_FAILURE) {
    /* the error message on the bus says why: let the watch see it */
    app.exit_status = 1;
    while (g_main_context_iteration (NULL, FALSE))
      ;
  } else {
    g_main_loop_run (app.loop);
  }

  /* After an abort with the EOS still being sent (for 10 s more), a
   * streaming thread holds what stopping the pipeline would wait for (the
   * EOS holds the pipeline's state lock while the source's thread is
   * stuck): leave it running, the process ends anyway; what was written
   * stays written. Otherwise stopping it lets the sinks write their final
   * checkpoint. */
  stuck = app.exit_status == 130 && !wait_eos_sent (&app, 10);
  if (stuck)
    g_printerr ("%sinterrupt: the pipeline is stuck (the EOS of the first "
                "Ctrl-C is not through): exiting without stopping it\n",
        rank_prefix);
  else
    gst_element_set_state (app.pipeline, GST_STATE_NULL);
  for (i = 0; i < G_N_ELEMENTS (signal_sources); i++)
    g_source_remove (signal_sources[i]);
  if (app.exit_status == 1 && app.error == NULL)
    g_printerr ("%sgst-train: the pipeline failed to start\n", rank_prefix);
  if (!app.follower)
    print_closing (&app);
  if (summary && !write_summary (&app, summary) && app.exit_status == 0)
    app.exit_status = 1;

  if (app.last_stats)
    gst_structure_free (app.last_stats);
  if (app.eval_result)
    gst_structure_free (app.eval_result);
  g_free (app.error);
  g_list_free_full (app.sinks, gst_object_unref);
  g_hash_table_unref (app.last_steps);
  g_main_loop_unref (app.loop);
  if (stuck) {
    /* the stuck pipeline's threads still run and hold it: end the process
     * here, without taking it down (everything above is written) */
    fflush (stdout);
    fflush (stderr);
    _exit (app.exit_status);
  }
  gst_object_unref (app.pipeline);
  g_mutex_clear (&app.eos_lock);
  g_cond_clear (&app.eos_done);
  return app.exit_status;
}
