# SPDX-License-Identifier: LGPL-2.1-or-later
"""The Loader's keyword arguments: which element property each one sets,
and the checks that turn a bad name or value into a Python exception with
the element's own terms (its property's range, its enum's values, a "did
you mean") before anything runs, so that GLib never prints a warning."""

import difflib

from gi.repository import GObject, Gst

# The elements of the pipeline the Loader builds, by role.
FACTORIES = {
    "src": "datasetsrc",
    "dec": "imagedec",
    "aug": "augment",
    "echo": "echo",
    "batch": "batcher",
}

# keyword -> [(role, property)]: the element properties that take the same
# name with underscores. num_threads sets imagedec's and augment's n-threads.
PROPERTIES = {
    "location": [("src", "location")],
    "shuffle": [("src", "shuffle")],
    "num_samples": [("src", "num-samples")],
    "read_ahead": [("src", "read-ahead")],
    "extensions": [("src", "extensions")],
    "num_classes": [("src", "num-classes")],
    "shuffle_buffer_size": [("src", "shuffle-buffer-size")],
    "fetch_ahead": [("src", "fetch-ahead")],
    "interleave": [("src", "interleave")],
    "retries": [("src", "retries")],
    "on_error": [("src", "on-error"), ("dec", "on-error")],
    "min_short_side": [("dec", "min-short-side")],
    "max_errors": [("dec", "max-errors")],
    "width": [("aug", "width")],
    "height": [("aug", "height")],
    "crop": [("aug", "crop")],
    "scale_min": [("aug", "scale-min")],
    "scale_max": [("aug", "scale-max")],
    "ratio_min": [("aug", "ratio-min")],
    "ratio_max": [("aug", "ratio-max")],
    "flip": [("aug", "flip")],
    "resize_short": [("aug", "resize-short")],
    "echo_max_factor": [("echo", "max-factor")],
    "echo_shuffle_buffer_size": [("echo", "shuffle-buffer-size")],
    "batch_size": [("batch", "batch-size")],
    "drop_last": [("batch", "drop-remainder")],
    # the decoding and augmenting threads; datasetsrc's n-threads is its
    # read-ahead, where 0 means none (read_threads sets it)
    "num_threads": [("dec", "n-threads"), ("aug", "n-threads")],
    "read_threads": [("src", "n-threads")],
}

# Where echo goes: after which element (A-D of the project's pipeline).
ECHO_POSITIONS = {
    "before-decode": "src",
    "before-augment": "dec",
    "after-augment": "aug",
    "after-batch": "batch",
}

# The Loader's own keywords (not element properties).
LOADER_KEYWORDS = (
    "seed", "echo", "echo_position", "normalize", "channels_last",
    "pin_memory", "device", "with_ids", "prefetch", "rank", "world_size",
    "timeout",
)


def suggest(word, choices):
    """ ' (did you mean "x"?)' for the closest of choices, or ''."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f' (did you mean "{close[0]}"?)' if close else ""


def check_keywords(kwargs):
    """A TypeError, as Python gives for a function, for an unknown name."""
    known = set(PROPERTIES) | set(LOADER_KEYWORDS)
    for name in kwargs:
        if name not in known:
            raise TypeError(
                f"Loader() got an unexpected keyword argument '{name}'"
                + suggest(name, known))


def _enum_nicks(pspec):
    values = type(pspec.default_value).__enum_values__
    return [v.value_nick for v in values.values()]


def set_property(element, prop, value, keyword):
    """Sets element's prop to value after checking it against the property's
    type and range; raises TypeError or ValueError naming the keyword, the
    element and what it takes."""
    factory = element.get_factory().get_name()
    pspec = element.find_property(prop)
    if pspec is None:
        raise TypeError(f"{factory} has no property {prop} (keyword {keyword})")
    where = f"{keyword}={value!r} ({factory} {prop})"
    ptype = pspec.value_type
    if ptype.is_a(GObject.TYPE_ENUM):
        nicks = _enum_nicks(pspec)
        if not isinstance(value, str) or value not in nicks:
            raise ValueError(
                f"{where}: takes one of {', '.join(nicks)}"
                + (suggest(value, nicks) if isinstance(value, str) else ""))
        Gst.util_set_object_arg(element, prop, value)
        return
    if ptype == GObject.TYPE_BOOLEAN:
        if not isinstance(value, bool):
            raise TypeError(f"{where}: takes True or False")
    elif ptype == GObject.TYPE_STRING:
        if not isinstance(value, str):
            raise TypeError(f"{where}: takes a string")
    elif ptype in (GObject.TYPE_DOUBLE, GObject.TYPE_FLOAT):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{where}: takes a number")
        if not pspec.minimum <= value <= pspec.maximum:
            raise ValueError(
                f"{where}: out of range, takes {pspec.minimum:g} to "
                f"{pspec.maximum:g}")
        value = float(value)
    else:  # the integer types
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{where}: takes an integer")
        if not pspec.minimum <= value <= pspec.maximum:
            raise ValueError(
                f"{where}: out of range, takes {pspec.minimum} to "
                f"{pspec.maximum}")
    element.set_property(prop, value)


def find_by_factory(bin_, factory):
    """The elements of bin_ (recursively) made by factory, in link order
    from the source (GStreamer's iterator goes from the sinks up)."""
    found = []
    iterator = bin_.iterate_recurse()
    while True:
        result, element = iterator.next()
        if result == Gst.IteratorResult.DONE:
            break
        if result == Gst.IteratorResult.RESYNC:
            iterator.resync()
            found.clear()
            continue
        if result != Gst.IteratorResult.OK:
            break
        f = element.get_factory()
        if f is not None and f.get_name() == factory:
            found.append(element)
    found.reverse()
    return found
