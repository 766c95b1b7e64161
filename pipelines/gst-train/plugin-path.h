/* plugin-path.h: gst-train's own plugin folders on GStreamer's plugin path.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef GST_TRAIN_APP_PLUGIN_PATH_H
#define GST_TRAIN_APP_PLUGIN_PATH_H

/* Adds the plugin folders that belong to this gst-train (../gst-plugins
 * beside the binary, the installed plugin folder), those that exist, to
 * GStreamer's plugin path after what the user put there. Call before
 * GStreamer initialises. */
void plugin_path_add_own (void);

#endif
