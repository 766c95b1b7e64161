# SPDX-License-Identifier: LGPL-2.1-or-later
"""The sample-metadata library read from Python through its typelib
(GstTrain 1.0): every sample buffer's index, label, epoch, emissions and
file, every batch's indices, and the dataset facts, off real buffers of
the build's elements, checked against the ImageFolder they were read
from."""

import os
import struct
import unittest

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstTrain", "1.0")
from gi.repository import Gst, GstTrain  # noqa: E402

from loader_fixture import make_dataset  # noqa: E402

Gst.init(None)

CLASSES, PER_CLASS = 3, 4
ROOT = make_dataset(classes=CLASSES, per_class=PER_CLASS, size=(40, 32))
SAMPLES = CLASSES * PER_CLASS


def layout(index):
    """The label and file of sample index: ImageFolder order is class
    folders by name, then files by name."""
    label, i = divmod(index, PER_CLASS)
    return label, os.path.join(ROOT, f"class{label}", f"{i:03d}.jpg")


def run(launch, read):
    """Plays launch to EOS, handing each buffer that reaches its fakesink,
    and each tag list, to read; returns what read returned, in order."""
    pipeline = Gst.parse_launch(launch.format(root=ROOT) + " ! fakesink name=s")
    seen = []

    def probe(pad, info):
        if info.type & Gst.PadProbeType.BUFFER:
            seen.append(read(info.get_buffer()))
        elif info.get_event().type == Gst.EventType.TAG:
            seen.append(info.get_event().parse_tag())
        return Gst.PadProbeReturn.OK

    pad = pipeline.get_by_name("s").get_static_pad("sink")
    pad.add_probe(
        Gst.PadProbeType.BUFFER | Gst.PadProbeType.EVENT_DOWNSTREAM, probe)
    pipeline.set_state(Gst.State.PLAYING)
    message = pipeline.get_bus().timed_pop_filtered(
        60 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    pipeline.set_state(Gst.State.NULL)
    assert message is not None and message.type == Gst.MessageType.EOS, \
        message and message.parse_error()
    return seen


def sample(buffer):
    meta = GstTrain.buffer_get_sample_meta(buffer)
    assert GstTrain.buffer_get_batch_meta(buffer) is None
    return (meta.index, meta.label, meta.epoch, meta.emissions, meta.location)


def batch(buffer):
    meta = GstTrain.buffer_get_batch_meta(buffer)
    assert GstTrain.buffer_get_sample_meta(buffer) is None
    memory = buffer.peek_memory(1)  # tensor 1: the labels, int32
    ok, mapped = memory.map(Gst.MapFlags.READ)
    assert ok
    data = bytes(mapped.data)
    memory.unmap(mapped)
    labels = struct.unpack(f"<{len(data) // 4}i", data)
    return (meta.num_samples, meta.num_fresh, meta.emissions,
            meta.get_indices(), list(labels))


class SampleMeta(unittest.TestCase):
    def test_every_sample_in_order_twice_echoed(self):
        # two epochs in ImageFolder order, each image echoed back to back
        seen = run("datasetsrc location={root} shuffle=false num-epochs=2 "
                   "! imagedec ! echo factor=2 shuffle-buffer-size=0", sample)
        buffers = [s for s in seen if not isinstance(s, Gst.TagList)]
        expected = []
        for epoch in range(2):
            for index in range(SAMPLES):
                label, location = layout(index)
                for emissions in range(2):
                    expected.append(
                        (index, label, epoch, emissions, location))
        self.assertEqual(buffers, expected)

    def test_dataset_facts(self):
        seen = run("datasetsrc location={root} num-epochs=1", lambda b: None)
        tags = [s for s in seen if isinstance(s, Gst.TagList)]
        facts = [GstTrain.dataset_info_from_tag_list(t) for t in tags]
        facts = [info for found, info in facts if found]
        self.assertEqual(len(facts), 1, "the dataset facts come once")
        info = facts[0]
        self.assertEqual(info.num_classes, CLASSES)
        self.assertEqual(info.class_names,
                         [f"class{c}" for c in range(CLASSES)])
        self.assertEqual(info.num_samples, SAMPLES)
        self.assertEqual(info.epoch_samples, SAMPLES)


class BatchMeta(unittest.TestCase):
    def test_indices_and_labels_of_shuffled_batches(self):
        seen = run("datasetsrc location={root} num-epochs=2 seed=3 "
                   "! imagedec ! augment width=8 height=8 "
                   "! batcher batch-size=4", batch)
        batches = [s for s in seen if not isinstance(s, Gst.TagList)]
        self.assertEqual(len(batches), 2 * SAMPLES // 4)
        order = []
        for num_samples, fresh, emissions, indices, labels in batches:
            self.assertEqual((num_samples, fresh, emissions), (4, 4, 0))
            self.assertEqual(len(indices), 4)
            # the label each image carries is its folder's
            self.assertEqual(labels, [layout(i)[0] for i in indices])
            order += indices
        # each epoch is every sample once, shuffled, and the two differ
        first, second = order[:SAMPLES], order[SAMPLES:]
        self.assertEqual(sorted(first), list(range(SAMPLES)))
        self.assertEqual(sorted(second), list(range(SAMPLES)))
        self.assertNotEqual(first, list(range(SAMPLES)))
        self.assertNotEqual(first, second)


if __name__ == "__main__":
    unittest.main()
