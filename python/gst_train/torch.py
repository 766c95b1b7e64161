# SPDX-License-Identifier: LGPL-2.1-or-later
"""gst-train's input stage inside a PyTorch training loop.

    from gst_train.torch import Loader
    loader = Loader("data/train", batch_size=128, width=224, height=224,
                    echo="adaptive", drop_last=True, seed=0)
    for images, labels in loader:      # one epoch, as with a DataLoader
        ...

The Loader runs ``datasetsrc ! imagedec ! augment ! batcher`` (with ``echo``
where ``echo_position`` says) in a GStreamer pipeline, its threads in C, and
hands out each batch as torch tensors over the batch's own memory (DLPack),
held until the tensors are freed. See docs/torch-loader.md for every
argument and for the DataLoader contract it keeps.
"""

import atexit
import math
import os
import threading
import time
import warnings
import weakref

import torch as _torch
from gi.repository import GLib, GObject, Gst

from . import PipelineError, _native, _options, init

__all__ = ["Loader", "PipelineError"]

_SAMPLE_TIMEOUT_NS = 100_000_000  # how long one wait for a batch blocks
_PROBE_SECONDS = 600  # the longest a dataset's listing may take

_live = weakref.WeakSet()


@atexit.register
def _close_all():
    # Pipelines still playing at interpreter exit would run on while Python
    # tears down: stop them first.
    for loader in list(_live):
        loader.close()


def _rank_and_world():
    """(rank, world size): torch.distributed's when it is initialised, else
    torchrun's variables, else an MPI launcher's or Slurm's, else (0, 1)."""
    dist = getattr(_torch, "distributed", None)
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    for rank_var, size_var in (("RANK", "WORLD_SIZE"),
                               ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                               ("PMIX_RANK", "PMIX_SIZE"),
                               ("PMI_RANK", "PMI_SIZE"),
                               ("SLURM_PROCID", "SLURM_NTASKS")):
        if rank_var in os.environ and size_var in os.environ:
            return int(os.environ[rank_var]), int(os.environ[size_var])
    return 0, 1


def _mix_seed(seed, epoch):
    # echo's draws for one epoch's run: a function of the seed and the epoch
    return (seed * 0x9E3779B97F4A7C15 + epoch + 1) & 0xFFFFFFFFFFFFFFFF


class Loader:
    """Batches of images and labels from gst-train's pipeline, as tensors.

    Keyword arguments carry the names of the elements' properties with
    underscores (docs/torch-loader.md lists them); the Loader's own are:

    - ``echo``: None (the default), ``"adaptive"``, or a factor >= 1;
      ``echo_position``: ``"before-decode"``, ``"before-augment"`` (the
      default, the paper's recommendation), ``"after-augment"`` or
      ``"after-batch"``.
    - ``normalize=(mean, std)``: float32 images, (x / 255 - mean) / std per
      channel; else uint8.
    - ``channels_last``: NCHW tensors in PyTorch's channels_last memory
      format (the batcher's NHWC bytes); else contiguous NCHW.
    - ``with_ids``: a third tensor, each sample's index in the dataset.
    - ``pin_memory``, ``device``: page-locked batches, or batches copied
      ahead to a device on a side stream.
    - ``rank``, ``world_size``: the split; by default torch.distributed's,
      else torchrun's RANK and WORLD_SIZE.
    - ``prefetch``: batches the pipeline may finish ahead of the loop.
    - ``timeout``: seconds one batch may take before next() raises
      (0 = no limit).
    """

    def __init__(self, location, batch_size=256, **kwargs):
        _options.check_keywords(kwargs)
        init()
        own = {k: kwargs.pop(k) for k in list(kwargs)
               if k in _options.LOADER_KEYWORDS}
        self._seed = own.get("seed", 0)
        if isinstance(self._seed, bool) or not isinstance(self._seed, int) \
                or self._seed < 0:
            raise ValueError(f"seed={self._seed!r}: takes an integer >= 0")
        echo = own.get("echo")
        position = own.get("echo_position", "before-augment")
        if position not in _options.ECHO_POSITIONS:
            raise ValueError(
                f"echo_position={position!r}: takes one of "
                + ", ".join(_options.ECHO_POSITIONS)
                + _options.suggest(str(position), _options.ECHO_POSITIONS))
        pipeline, elements = self._build(echo, position)
        self._elements = elements
        kwargs["location"] = location
        kwargs["batch_size"] = batch_size
        if "channels_last" in own and not isinstance(own["channels_last"], bool):
            raise TypeError("channels_last: takes True or False")
        Gst.util_set_object_arg(
            elements["batch"], "layout",
            "nhwc" if own.get("channels_last", False) else "nchw")
        for keyword, value in kwargs.items():
            for role, prop in _options.PROPERTIES[keyword]:
                if role == "echo" and "echo" not in elements:
                    raise TypeError(f"{keyword}: there is no echo (echo=None)")
                _options.set_property(elements[role], prop, value, keyword)
        _options.set_property(elements["src"], "seed", self._seed, "seed")
        _options.set_property(elements["aug"], "seed", self._seed, "seed")
        self._fixed_echo_factor = None
        if echo is not None:
            self._configure_echo(elements["echo"], echo)
        self._setup(pipeline, own)

    @classmethod
    def from_pipeline(cls, launch, **kwargs):
        """A Loader over any launch line that ends in a batcher, e.g.
        ``"datasetsrc location=... ! imagedec ! augment ! batcher"``.

        The line's datasetsrc (there must be one) runs one epoch per
        iteration, as in the Loader's own pipeline; the Loader's own
        keywords (normalize, with_ids, rank, ...) apply; the elements'
        properties come from the line."""
        for name in kwargs:
            if name not in _options.LOADER_KEYWORDS or name in (
                    "seed", "echo", "echo_position", "channels_last"):
                raise TypeError(
                    f"from_pipeline() got an unexpected keyword argument "
                    f"'{name}' (set the elements' properties in the launch "
                    "line)")
        init()
        self = cls.__new__(cls)
        self._closed = True  # until set up: __del__ has nothing to close
        self._echo_after_batch = False
        try:
            pipeline = Gst.parse_launch_full(
                launch + " ! appsink name=gst_train_appsink", None,
                Gst.ParseFlags.FATAL_ERRORS)
        except GLib.Error as error:
            raise ValueError(_explain_parse_error(error.message)) from None
        sources = _options.find_by_factory(pipeline, "datasetsrc")
        batchers = _options.find_by_factory(pipeline, "batcher")
        if len(sources) != 1 or not batchers:
            raise ValueError(
                "from_pipeline: the launch line needs one datasetsrc and ends "
                "in a batcher")
        self._elements = {"src": sources[0], "batch": batchers[-1]}
        echoes = _options.find_by_factory(pipeline, "echo")
        self._seed = sources[0].get_property("seed")
        self._fixed_echo_factor = None
        if not echoes:
            self._fixed_echo_factor = 1
        elif len(echoes) == 1 and echoes[0].get_property("mode").value_nick \
                == "fixed":
            factor = echoes[0].get_property("factor")
            if factor == int(factor):
                self._fixed_echo_factor = int(factor)
                self._echo_after_batch = _after(batchers[-1], echoes[0])
        self._setup(pipeline, kwargs)
        return self

    # ---- building ----

    def _build(self, echo, position):
        pipeline = Gst.Pipeline.new("gst-train-loader")
        elements = {}
        chain = []
        for role in ("src", "dec", "aug", "batch"):
            elements[role] = Gst.ElementFactory.make(_options.FACTORIES[role])
            chain.append(elements[role])
            if echo is not None and _options.ECHO_POSITIONS[position] == role:
                elements["echo"] = Gst.ElementFactory.make("echo")
                chain.append(elements["echo"])
        sink = Gst.ElementFactory.make("appsink", "gst_train_appsink")
        chain.append(sink)
        for element in chain:
            pipeline.add(element)
        for a, b in zip(chain, chain[1:]):
            a.link(b)
        self._echo_after_batch = position == "after-batch"
        return pipeline, elements

    def _configure_echo(self, element, echo):
        if echo == "adaptive":
            Gst.util_set_object_arg(element, "mode", "adaptive")
            return
        if isinstance(echo, bool) or not isinstance(echo, (int, float)):
            raise ValueError(
                f"echo={echo!r}: takes None, \"adaptive\" or a factor >= 1"
                + (_options.suggest(echo, ["adaptive"])
                   if isinstance(echo, str) else ""))
        _options.set_property(element, "factor", echo, "echo")
        if echo == int(echo):
            self._fixed_echo_factor = int(echo)

    def _setup(self, pipeline, own):
        self._pipeline = pipeline
        self._bus = pipeline.get_bus()
        self._sink = pipeline.get_by_name("gst_train_appsink")
        self._sink.set_property("sync", False)
        # batches only: an echo after the batcher tells its items are
        # batches by its downstream's caps (for the resume query's unit)
        self._sink.set_property("caps", Gst.Caps.from_string("other/tensors"))
        self._sink.set_property("enable-last-sample", False)
        prefetch = own.get("prefetch", 2)
        if isinstance(prefetch, bool) or not isinstance(prefetch, int) \
                or prefetch < 1:
            raise ValueError(f"prefetch={prefetch!r}: takes an integer >= 1")
        # a bounded appsink: the loop's pace reaches the pipeline as
        # back-pressure, which is what adaptive echo reads
        self._sink.set_property("max-buffers", prefetch)
        self._sink.set_property("drop", False)
        if self._fixed_echo_factor is None and \
                not _options.find_by_factory(pipeline, "echo"):
            self._fixed_echo_factor = 1
        batch = self._elements["batch"]
        self._batch_size = batch.get_property("batch-size")
        self._drop_last = batch.get_property("drop-remainder")
        self._puller = _native.Puller(
            self._sink, batch.get_property("layout").value_nick == "nchw")
        self._with_ids = bool(own.get("with_ids", False))
        self._normalize = _normalizer(own.get("normalize"))
        self._device = _device(own.get("device"))
        # a copy to the device overlaps only from page-locked memory
        self._pin = bool(own.get("pin_memory", False)) or \
            self._device is not None
        self._timeout = float(own.get("timeout", 0))
        rank, world = _rank_and_world()
        self._rank = own.get("rank", rank)
        self._world = own.get("world_size", world)
        if not (isinstance(self._world, int) and self._world >= 1
                and isinstance(self._rank, int)
                and 0 <= self._rank < self._world):
            raise ValueError(
                f"rank={self._rank!r}, world_size={self._world!r}: the rank "
                "takes 0 to world_size - 1")
        src = self._elements["src"]
        if self._world > 1 or rank != 0 or world != 1 or "rank" in own:
            src.set_property("rank", self._rank)
            src.set_property("num-ranks", self._world)
        self._num_samples_cap = src.get_property("num-samples")
        self._epoch_samples = None  # this rank's samples per epoch
        self._dataset_size = None
        self._split_done = False
        self._epoch = 0  # the epoch the next iteration runs
        self._running = None  # the _Epoch iterating now
        self._resume = None  # (batches, samples, fresh) for the next epoch
        self._position = {"epoch": 0, "batches": 0, "samples": 0, "fresh": 0}
        self._position_finished = False
        self._stats = _Stats()
        self._echo_stats = None
        self._warned_pin = False
        self._closed = False
        self._lock = threading.Lock()
        _live.add(self)

    # ---- the DataLoader contract ----

    def __iter__(self):
        if self._closed:
            raise RuntimeError("the Loader is closed")
        self._stop()
        self._even_split()
        epoch = self._epoch
        self._epoch = epoch + 1
        resume, self._resume = self._resume, None
        return _Epoch(self, epoch, resume)

    def __len__(self):
        """Batches one epoch yields on this rank."""
        if self._fixed_echo_factor is None:
            raise TypeError(
                "len() of a Loader with adaptive or fractional echo: the number "
                "of batches in an epoch depends on the echo's draws or on the "
                "timing; count steps instead")
        self._even_split()
        samples = self._learn_epoch_samples()
        if samples is None:
            raise TypeError(
                "len() of a Loader over WebDataset shards: the size of an "
                "epoch is known once one epoch was read")
        f = self._fixed_echo_factor
        whole = (lambda n: n // self._batch_size) if self._drop_last else \
            (lambda n: math.ceil(n / self._batch_size))
        if self._echo_after_batch:
            return whole(samples) * f
        return whole(samples * f)

    def set_epoch(self, epoch):
        """The next iteration runs this epoch (its shuffle, its crops), as
        DistributedSampler.set_epoch; without it each iteration runs the
        epoch after the last one."""
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
            raise ValueError(f"set_epoch({epoch!r}): takes an integer >= 0")
        self._epoch = epoch

    def state_dict(self):
        """Where the loader stands: the epoch and the batches of it already
        handed out (after a whole epoch, the next epoch at batch 0)."""
        state = dict(self._position)
        if self._running is None and (self._position_finished
                                      or state["batches"] == 0):
            # between epochs: the next one, from its start
            state.update(epoch=self._epoch, batches=0, samples=0, fresh=0)
        state.update(batch_size=self._batch_size, seed=self._seed,
                     rank=self._rank, world_size=self._world, version=1)
        return state

    def load_state_dict(self, state):
        """The next iteration goes on where state was taken: the same next
        batch, bitwise, as the run that saved it (with no echo or fixed
        echo; adaptive echo's repeats depend on timing)."""
        for key in ("batch_size", "seed", "world_size", "rank"):
            mine = {"batch_size": self._batch_size, "seed": self._seed,
                    "world_size": self._world, "rank": self._rank}[key]
            if state.get(key) != mine:
                raise ValueError(
                    f"load_state_dict: the state is of a loader with {key}="
                    f"{state.get(key)!r}, this one has {mine!r}")
        self._stop()
        self._epoch = int(state["epoch"])
        if state["batches"] > 0:
            self._resume = (int(state["batches"]), int(state["samples"]),
                            int(state["fresh"]))
        self._position = {k: int(state[k]) for k in
                          ("epoch", "batches", "samples", "fresh")}
        self._position_finished = False

    def stats(self):
        """Rates since the previous call (or the start): ``images_per_second``,
        ``fresh_images_per_second``, ``data_wait_fraction`` (the share of the
        time next() waited for data), ``step_time`` (mean seconds between a
        batch and the next call, the loop's own work), ``echo_factor``
        (images per fresh image); and totals: ``batches``, ``images``,
        ``fresh_images``, ``epoch``."""
        out = self._stats.take()
        out["epoch"] = self._position["epoch"]
        return out

    def close(self):
        """Stops the pipeline and ends its threads; tensors handed out stay
        valid. Also on garbage collection and at interpreter exit."""
        if getattr(self, "_closed", True):
            return
        self._closed = True
        self._stop()
        self._pipeline = None
        self._puller = None
        _live.discard(self)
        _native.stop_unused_threads()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        self.close()

    # ---- epochs ----

    def _stop(self):
        if self._running is not None:
            self._running.finish()
            self._running = None
        if self._pipeline is not None:
            self._pipeline.set_state(Gst.State.NULL)
            self._drain(raise_errors=False)

    def _learn_epoch_samples(self):
        if self._epoch_samples is None:
            self._probe()
        return self._epoch_samples

    def _even_split(self):
        # Every rank the same number of batches (DistributedSampler with
        # drop_last=True): each rank takes the first size // world of its
        # share.
        if self._world == 1 or self._split_done:
            return
        if self._dataset_size is None:
            self._probe()
        self._split_done = True
        if self._dataset_size is None:
            # shards: each rank reads its own shards; their sizes are known
            # only once read (docs/torch-loader.md, "Not done")
            return
        per_rank = self._dataset_size // self._world
        if self._num_samples_cap:
            per_rank = min(per_rank, self._num_samples_cap)
        self._elements["src"].set_property("num-samples", per_rank)
        self._epoch_samples = per_rank

    def _probe(self):
        """Reads the dataset facts (its size, this rank's samples per epoch)
        from a datasetsrc set up as the Loader's, ahead of the first epoch."""
        src = self._elements["src"]
        probe = Gst.Pipeline.new("gst-train-probe")
        copy = Gst.ElementFactory.make("datasetsrc")
        for pspec in src.list_properties():
            # a deprecated alias (shard-index) shares its field with the
            # property it names, and setting it warns under
            # G_ENABLE_DIAGNOSTIC=1
            if pspec.flags & GObject.ParamFlags.DEPRECATED:
                continue
            if pspec.flags & 3 == 3 and pspec.name not in ("name", "parent"):
                copy.set_property(pspec.name, src.get_property(pspec.name))
        sink = Gst.ElementFactory.make("fakesink")
        probe.add(copy)
        probe.add(sink)
        copy.link(sink)
        facts = {}
        bus = probe.get_bus()
        probe.set_state(Gst.State.PAUSED)
        try:
            deadline = time.monotonic() + _PROBE_SECONDS
            while time.monotonic() < deadline:
                msg = bus.timed_pop(100 * Gst.MSECOND)
                if msg is None:
                    continue
                if msg.type == Gst.MessageType.ERROR:
                    raise _pipeline_error(msg)
                if msg.type == Gst.MessageType.TAG:
                    _read_facts(msg.parse_tag(), facts)
                if msg.type in (Gst.MessageType.ASYNC_DONE,
                                Gst.MessageType.EOS):
                    break
        finally:
            probe.set_state(Gst.State.NULL)
        self._dataset_size = facts.get("train-num-samples")
        if self._epoch_samples is None:
            self._epoch_samples = facts.get("train-epoch-samples")

    def _start_epoch(self, epoch, resume):
        src = self._elements["src"]
        start = 0
        if epoch > 0:
            samples = self._learn_epoch_samples()
            if samples is None:
                raise RuntimeError(
                    "a Loader over WebDataset shards can start epoch "
                    f"{epoch} only after reading an epoch whole")
            start = epoch * samples
        src.set_property("start-position", start)
        src.set_property("num-epochs", epoch + 1)
        for echo in _options.find_by_factory(self._pipeline, "echo"):
            if echo is self._elements.get("echo"):
                echo.set_property("seed", _mix_seed(self._seed, epoch))
        skip = 0
        if resume is not None and self._resume_by_skipping(resume):
            skip = resume[0]
            self._puller.answer_resume(0, 0, self._batch_size)
        elif resume is not None:
            batches, samples, fresh = resume
            self._puller.answer_resume(samples, fresh, self._batch_size)
        else:
            self._puller.answer_resume(0, 0, self._batch_size)
        if self._pipeline.set_state(Gst.State.PLAYING) == \
                Gst.StateChangeReturn.FAILURE:
            self._drain(raise_errors=True)
            raise PipelineError("the pipeline did not start (no message)")
        return skip

    def _resume_by_skipping(self, resume):
        """Whether a restore runs the epoch from its start and passes over
        the batches already handed out, rather than have the source start
        after them. A fixed echo rebuilds its shuffle buffer from the items
        that come again on the assumption that its input goes on; near the
        end of an epoch's run its buffer drains instead, so there it is
        replayed in full (exact, at the cost of the batches passed over)."""
        echoes = _options.find_by_factory(self._pipeline, "echo")
        if not echoes:
            return False
        if any(e.get_property("mode").value_nick != "fixed" for e in echoes):
            return False
        samples = self._learn_epoch_samples()
        if samples is None:
            return True
        items_left = samples - resume[2]  # fresh samples still to come
        for echo in echoes:
            held = echo.get_property("shuffle-buffer-size")
            if _after(self._elements["batch"], echo):
                held *= self._batch_size
            if items_left <= 2 * max(held, 1) + self._batch_size:
                return True
        return False

    def _drain(self, raise_errors):
        while self._bus.have_pending():
            msg = self._bus.pop()
            if msg is None:
                break
            kind = msg.type
            if kind == Gst.MessageType.ERROR:
                if raise_errors:
                    self._pipeline.set_state(Gst.State.NULL)
                    raise _pipeline_error(msg)
            elif kind == Gst.MessageType.WARNING:
                warning, _ = msg.parse_warning()
                warnings.warn(f"{msg.src.get_name()}: {warning.message}",
                              RuntimeWarning, stacklevel=4)
            elif kind == Gst.MessageType.TAG:
                facts = {}
                _read_facts(msg.parse_tag(), facts)
                if facts.get("train-epoch-samples"):
                    self._epoch_samples = facts["train-epoch-samples"]
                if facts.get("train-num-samples"):
                    self._dataset_size = facts["train-num-samples"]
            elif kind == Gst.MessageType.ELEMENT:
                s = msg.get_structure()
                if s is not None and s.get_name() == "echo-stats":
                    self._echo_stats = s.to_string()

    # ---- per batch ----

    def _tensors(self, pulled):
        images, labels, ids, fresh, _ = pulled
        images = _torch.from_dlpack(images)
        labels = _torch.from_dlpack(labels)
        if self._normalize is not None:
            images = self._normalize(images)
        out = [images, labels]
        if self._with_ids:
            out.append(_torch.from_dlpack(ids))
        if self._pin:
            if _torch.cuda.is_available():
                out = [t.pin_memory() for t in out]
            elif not self._warned_pin:
                self._warned_pin = True
                warnings.warn(
                    "pin_memory=True but no GPU is usable: batches stay in "
                    "pageable memory", RuntimeWarning, stacklevel=3)
        return out, fresh


class _Epoch:
    """One iteration over the loader: one epoch."""

    def __init__(self, loader, epoch, resume):
        self._loader = loader
        self._epoch = epoch
        self._done = False
        self._ahead = None  # the next batch, already on its way to the device
        loader._running = self
        loader._position_finished = False
        loader._position = {"epoch": epoch, "batches": 0, "samples": 0,
                            "fresh": 0}
        if resume is not None:
            batches, samples, fresh = resume
            loader._position.update(batches=batches, samples=samples,
                                    fresh=fresh)
        skip = loader._start_epoch(epoch, resume)
        self._last_return = None
        for _ in range(skip):
            if self._pull(time.perf_counter(), count=False) is None:
                break

    def __iter__(self):
        return self

    def __next__(self):
        loader = self._loader
        if self._done or loader._running is not self:
            raise StopIteration
        now = time.perf_counter()
        if loader._device is not None:
            return self._next_on_device(now)
        batch = self._pull(now)
        if batch is None:
            raise StopIteration
        return batch

    def _pull(self, called, count=True):
        loader = self._loader
        deadline = None
        if loader._timeout > 0:
            deadline = called + loader._timeout
        while True:
            pulled = loader._puller.pull(_SAMPLE_TIMEOUT_NS, loader._with_ids)
            if loader._bus.have_pending():
                loader._drain(raise_errors=True)
            if pulled:
                break
            if pulled is False:
                # the stream's end: an error posted just before it wins
                loader._drain(raise_errors=True)
                self.finish()
                loader._position_finished = True
                loader._pipeline.set_state(Gst.State.NULL)
                return None
            if deadline is not None and time.perf_counter() > deadline:
                loader._pipeline.set_state(Gst.State.NULL)
                raise TimeoutError(
                    f"no batch in {loader._timeout:g} s (timeout=): the "
                    "pipeline is stalled")
        if not count:
            return pulled
        out, fresh = loader._tensors(pulled)
        n = out[1].shape[0]
        position = loader._position
        position["batches"] += 1
        position["samples"] += n
        position["fresh"] += fresh
        returned = time.perf_counter()
        step = 0.0 if self._last_return is None else called - self._last_return
        loader._stats.add(n, fresh, returned - called, step)
        self._last_return = returned
        return tuple(out)

    def _next_on_device(self, called):
        # The batch copied on the side stream during the previous step is
        # handed out; the next one starts its copy now.
        loader = self._loader
        device, stream = loader._device
        if self._ahead is None:
            self._ahead = self._copy(self._pull(called), device, stream)
        current = self._ahead
        if current is None:
            raise StopIteration
        self._ahead = self._copy(self._pull(time.perf_counter()), device,
                                 stream)
        _torch.cuda.current_stream(device).wait_stream(stream)
        for t in current:
            t.record_stream(_torch.cuda.current_stream(device))
        return current

    @staticmethod
    def _copy(batch, device, stream):
        if batch is None:
            return None
        with _torch.cuda.stream(stream):
            return tuple(t.to(device, non_blocking=True) for t in batch)

    def finish(self):
        self._done = True
        if self._loader._running is self:
            self._loader._running = None


class _Stats:
    def __init__(self):
        self.total_images = self.total_fresh = self.total_batches = 0
        self._reset(time.perf_counter())

    def _reset(self, now):
        self.start = now
        self.images = self.fresh = self.batches = 0
        self.wait = self.step = 0.0

    def add(self, images, fresh, wait, step):
        self.images += images
        self.fresh += fresh
        self.batches += 1
        self.wait += wait
        self.step += step
        self.total_images += images
        self.total_fresh += fresh
        self.total_batches += 1

    def take(self):
        now = time.perf_counter()
        elapsed = max(now - self.start, 1e-9)
        out = {
            "images_per_second": self.images / elapsed,
            "fresh_images_per_second": self.fresh / elapsed,
            "data_wait_fraction": min(self.wait / elapsed, 1.0),
            "step_time": self.step / self.batches if self.batches else 0.0,
            "echo_factor": self.images / self.fresh if self.fresh else
            (float("inf") if self.images else 1.0),
            "batches": self.total_batches,
            "images": self.total_images,
            "fresh_images": self.total_fresh,
        }
        self._reset(now)
        return out


def _normalizer(normalize):
    if normalize is None:
        return None
    try:
        mean, std = normalize
        mean = _torch.tensor([float(m) for m in mean])
        std = _torch.tensor([float(s) for s in std])
    except (TypeError, ValueError):
        raise ValueError(
            "normalize: takes (mean, std), each a sequence of one number per "
            "channel") from None
    if mean.shape != std.shape or bool((std <= 0).any()):
        raise ValueError("normalize: mean and std per channel, std > 0")
    scale = (1.0 / (255.0 * std)).view(1, -1, 1, 1)
    shift = (-mean / std).view(1, -1, 1, 1)

    def apply(images):
        if images.shape[1] != scale.shape[1] and scale.shape[1] != 1:
            raise ValueError(
                f"normalize: {scale.shape[1]} channels given, the images have "
                f"{images.shape[1]}")
        out = images.to(_torch.float32)
        return out.mul_(scale).add_(shift)

    return apply


def _device(device):
    if device is None:
        return None
    device = _torch.device(device)
    if device.type != "cuda":
        raise ValueError(f"device={str(device)!r}: takes a CUDA device or None")
    if not _torch.cuda.is_available():
        raise RuntimeError(f"device={str(device)!r}: no GPU is usable")
    return device, _torch.cuda.Stream(device)


def _after(batcher, echo):
    """Whether echo sits downstream of batcher."""
    pad = batcher.get_static_pad("src")
    while pad is not None and pad.get_peer() is not None:
        element = pad.get_peer().get_parent_element()
        if element is echo:
            return True
        pad = element.get_static_pad("src")
    return False


def _read_facts(tags, facts):
    for name in ("train-epoch-samples", "train-num-samples",
                 "train-num-classes"):
        if tags.get_tag_size(name) > 0:
            facts[name] = int(tags.get_value_index(name, 0))


def _pipeline_error(msg):
    error, debug = msg.parse_error()
    name = msg.src.get_name() if msg.src is not None else "pipeline"
    return PipelineError(f"{name}: {error.message}", element=name, debug=debug)


def _explain_parse_error(text):
    import re
    m = re.search(r'no property "([^"]+)" in element "([^"]+)"', text)
    if m:
        element = Gst.ElementFactory.make(
            re.sub(r"\d+$", "", m.group(2)))
        if element is not None:
            names = [p.name for p in element.list_properties()]
            return text + _options.suggest(m.group(1), names)
    m = re.search(r'no element "([^"]+)"', text)
    if m:
        names = [f.get_name() for f in
                 Gst.Registry.get().get_feature_list(Gst.ElementFactory)]
        return text + _options.suggest(m.group(1), names)
    return text
