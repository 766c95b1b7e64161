# SPDX-License-Identifier: LGPL-2.1-or-later
"""gst-train's input stage from Python.

``gst_train.torch.Loader`` runs datasetsrc, imagedec, augment, echo and
batcher in a GStreamer pipeline and yields each batch as torch tensors that
view the batch's own memory. This module holds what does not need torch:
GStreamer's initialisation with gst-train's plugins, and the exception that
carries an element's error message.
"""

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

from . import _paths  # noqa: E402

__all__ = ["PipelineError", "init"]


class PipelineError(RuntimeError):
    """An element of the pipeline failed: the element's own message.

    ``element`` names the element that posted it, ``debug`` holds
    GStreamer's debug text (the file and function that raised it, and the
    element's detail).
    """

    def __init__(self, message, element=None, debug=None):
        super().__init__(message)
        self.element = element
        self.debug = debug


def init():
    """Initialises GStreamer once and makes gst-train's plugins findable.

    The plugins are looked up where GStreamer looks (``GST_PLUGIN_PATH``,
    the system's plugin directory) and, when they are not there, in the
    directory this copy of the package was built or installed with.
    """
    if not Gst.is_initialized():
        Gst.init(None)
    if Gst.ElementFactory.find("datasetsrc") is None:
        Gst.Registry.get().scan_path(_paths.PLUGIN_DIR)
    if Gst.ElementFactory.find("datasetsrc") is None:
        raise ImportError(
            "gst-train's plugins are neither on GStreamer's plugin path nor in "
            f"{_paths.PLUGIN_DIR}, where this package was built to find them: "
            "build the project (ninja -C BUILD) or set GST_PLUGIN_PATH")
    if Gst.ElementFactory.find("appsink") is None:
        raise ImportError(
            "GStreamer's appsink is missing: install gstreamer1.0-plugins-base")
