"""TGI's startup: the ``Args`` dump, the weights check, shards, warmup, ``Connected``.

Every step falls at a fixed share of the startup's length (``--load-seconds``, four
times that for ``slow-load``): args at 0, the weights check from 3% to 8%, the shards
start at 10% (weights in memory at 30%), the shards are ready at 56%, the webserver
starts at 60%, warms up from 64% (CUDA graphs at 70%), the batch limit at 90% and
``Connected`` at 95%. ``slow-load`` downloads ``--shards`` weight files instead of
finding them on the host (``Download file:``, ``Downloaded ... in ...``,
``Download: [k/N] -- ETA: ...`` from 4% to 7.5%) and, from 3.0, logs the KV-cache
blocks the warmup allocates (at 67%).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from datetime import timedelta

from tui.sim.tgi.args import args_dump
from tui.sim.tgi.lines import Span, TgiLines
from tui.sim.tgi.releases import V3
from tui.sim.tgi.rust import NANOS_PER_SECOND, duration_debug
from tui.sim.version import Version

#: the shard manager says it is still waiting every 10 s (``wait_time.elapsed() > 10s``)
WAIT_LINE_SECONDS = 10.0
DOWNLOAD = Span("download")
#: where the shard's hub downloads go in TGI's image (``HUGGINGFACE_HUB_CACHE=/data``)
HUB_CACHE = "/data"
#: the story's seconds per weight file (printed, never slept)
DOWNLOAD_SECONDS = 7
#: share of the startup the downloads take in ``slow-load``, from 4%
DOWNLOAD_START = 0.04
DOWNLOAD_SHARE = 0.035


class Startup(TgiLines):
    """The timeline of one launch, first line to ``Connected``."""

    v: Version
    model_id: str
    limits_given: bool
    max_position: int
    max_input_tokens: int
    max_total_tokens: int
    max_prefill: int
    max_batch_total: int
    cuda_graphs: list[int]

    def _uds(self, rank: int) -> str:
        return f"/tmp/text-generation-server-{rank}"  # noqa: S108 - printed only

    def plan(self) -> list[tuple[float, Callable[[], None]]]:
        slow = self.cfg.slow
        total = self.cfg.startup_seconds
        rng = self.host.rng
        mem = self.mem
        ranks = range(self.cfg.tp)
        #: how long the shards take in the story the log tells (printed, never slept)
        shard_secs = rng.uniform(12.0, 48.0) * (4.0 if slow else 1.0)
        ready_nanos = [int((shard_secs + rng.uniform(0.0, 0.4)) * NANOS_PER_SECOND) for _ in ranks]
        steps: list[tuple[float, Callable[[], None]]] = []

        def at(fraction: float, *actions: Callable[[], None]) -> None:
            steps.extend((total * fraction, action) for action in actions)

        at(0.0, lambda: self.host.set_phase("loading"), self._config_lines)
        at(
            0.03,
            lambda: self.launcher(
                f"Starting check and download process for {self.model_id}", span=DOWNLOAD
            ),
        )
        if slow:
            self._plan_downloads(at)
        else:
            at(
                0.06,
                lambda: self.launcher("Files are already present on the host. Skipping download."),
            )
        at(
            0.08,
            lambda: self.launcher(
                f"Successfully downloaded weights for {self.model_id}", span=DOWNLOAD
            ),
        )
        at(
            0.10,
            *(
                lambda r=rank: self.launcher("Starting shard", span=self.shard_span(r))
                for rank in ranks
            ),
        )
        at(0.12, lambda: self.host.set_memory([mem.used_after("context")] * self.cfg.tp))
        waits = math.floor(shard_secs / WAIT_LINE_SECONDS)
        for index in range(waits):
            at(
                0.12 + 0.4 * (index + 1) / (waits + 1),
                *(
                    lambda r=rank: self.launcher(
                        "Waiting for shard to be ready...", span=self.shard_span(r)
                    )
                    for rank in ranks
                ),
            )
        at(0.30, lambda: self.host.set_memory([mem.used_after("weights")] * self.cfg.tp))
        if self.cfg.scenario.name == "oom":
            at(0.50, self.oom)
            return steps
        if self.cfg.scenario.name == "killed-at-load":
            at(0.50, lambda: self.shard_killed(self.cfg.tp - 1, starting=True))
            return steps
        at(
            0.54,
            *(
                lambda r=rank: self.launcher(f"Server started at unix://{self._uds(r)}")
                for rank in ranks
            ),
        )
        at(
            0.56,
            *(
                lambda r=rank: self.launcher(
                    f"Shard ready in {duration_debug(ready_nanos[r])}", span=self.shard_span(r)
                )
                for rank in ranks
            ),
        )
        at(0.60, lambda: self.launcher("Starting Webserver"))
        at(0.64, lambda: self.router("warmup", "Warming up model"))
        if slow and self.v >= V3:
            at(0.67, self._kv_blocks)
        if self.cuda_graphs and self.v >= V3:
            sizes = sorted(self.cuda_graphs, reverse=True)
            at(0.70, lambda: self.launcher(f"Cuda Graphs are enabled for sizes {sizes}"))
        at(0.80, lambda: self.host.set_memory([mem.used_after("graph")] * self.cfg.tp))
        at(
            0.90,
            lambda: self.router(
                "max_batch", f"Setting max batch total tokens to {self.max_batch_total}"
            ),
        )
        at(0.95, self._connected)
        return steps

    def _plan_downloads(self, at: Callable[..., None]) -> None:
        """Each weight file: the shard's ``Download file:``, ``Downloaded ... in ...`` and
        ``Download: [k/N] -- ETA: ...`` (times from the story: each file takes the same)."""
        files = self.cfg.shards
        digest = hashlib.sha1(self.model_id.encode(), usedforsecurity=False).hexdigest()
        cache = f"{HUB_CACHE}/models--{self.model_id.replace('/', '--')}/snapshots/{digest}"
        for index in range(files):
            name = f"model-{index + 1:05d}-of-{files:05d}.safetensors"
            took = timedelta(seconds=DOWNLOAD_SECONDS)
            elapsed = took * (index + 1)
            remaining = files - (index + 1)
            eta = elapsed / (index + 1) * remaining if remaining > 0 else 0
            lines = (
                f"Download file: {name}",
                f"Downloaded {cache}/{name} in {took}.",
                f"Download: [{index + 1}/{files}] -- ETA: {eta}",
            )
            at(
                DOWNLOAD_START + DOWNLOAD_SHARE * index / files,
                lambda line=lines[0]: self.launcher(line, span=DOWNLOAD),
            )
            at(
                DOWNLOAD_START + DOWNLOAD_SHARE * (index + 1) / files,
                *(lambda line=line: self.launcher(line, span=DOWNLOAD) for line in lines[1:]),
            )

    def _kv_blocks(self) -> None:
        """The shard's warmup: blocks of one token with flashinfer's prefix caching (3.0 on)."""
        self.launcher(f"KV-cache blocks: {self.max_batch_total}, size: 1")

    def _config_lines(self) -> None:
        """``{:#?}`` of Args, then what the launcher derives from it."""
        self.launcher(args_dump(self.cfg.flags, self.host.port))
        context = self.model.context_len
        if context > self.max_position and not self.limits_given:
            self.launcher(
                f"Model supports up to {context} but tgi will now set its default to "
                f"{self.max_position} instead. This is to save VRAM by refusing large prompts in "
                "order to allow more users on the same hardware. You can increase that size using "
                f"`--max-batch-prefill-tokens={context + 50} --max-total-tokens={context} "
                f"--max-input-tokens={context - 1}`."
            )
        if self.v >= V3:
            self.launcher("Using attention flashinfer - Prefix caching true")
        flags = self.cfg.flags
        if not flags.has("max_input_tokens", "max_input_length"):
            self.launcher(f"Default `max_input_tokens` to {self.max_input_tokens}")
        if not flags.has("max_total_tokens"):
            self.launcher(f"Default `max_total_tokens` to {self.max_total_tokens}")
        if not flags.has("max_batch_prefill_tokens"):
            self.launcher(f"Default `max_batch_prefill_tokens` to {self.max_prefill}")
        if not flags.has("cuda_graphs") and self.cuda_graphs:
            self.launcher(f"Using default cuda graphs {self.cuda_graphs}")
        if self.cfg.tp > 1:
            self.launcher(f"Sharding model on {self.cfg.tp} processes")

    def _connected(self) -> None:
        self.host.mark_ready(lambda: self.router("connected", "Connected"))
        self.host.http_logging = True
