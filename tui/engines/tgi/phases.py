"""TGI's startup phases, in the order a run goes through them, and the lines that say
each began (the launcher's, the router's and the shards' relayed through the launcher).

main @ db931fc and 2024 releases (each line after its ``2024-09-03T04:36:57.507198Z  INFO``)::

    download: text_generation_launcher: Starting check and download process for meta-llama/...
    text_generation_launcher: Download: [1/4] -- ETA: 0:00:21
    shard-manager: text_generation_launcher: Starting shard rank=0
    shard-manager: text_generation_launcher: Waiting for shard to be ready... rank=0
    shard-manager: text_generation_launcher: Shard ready in 47.643196061s rank=0
    text_generation_launcher: Starting Webserver
    text_generation_router_v3: backends/v3/src/lib.rs:125: Warming up model
    text_generation_launcher: Cuda Graphs are enabled for sizes [32, 16, 8, 4, 2, 1]
    text_generation_router::server: router/src/server.rs:2396: Connected

The router starts before the shards warm up: the warmup (and the CUDA graphs the
shards capture in it) comes after ``Starting Webserver``. Each rank of a sharded run
says ``Shard ready``; only ``Starting Webserver`` says they all are. The shards load
their weights without a count; the download counts files.
"""

from __future__ import annotations

from tui.engines.spec import Phase

#: ``Download: [done/total] -- ETA: …``, once per file downloaded
DOWNLOADS = r"Download: \[(\d+)/(\d+)\]"

PHASES = (
    Phase(
        "downloading weights",
        ("Starting check and download process for", "Starting download process"),
        progress=DOWNLOADS,
    ),
    Phase("loading weights", ("Starting shard", "Waiting for shard to be ready")),
    Phase("starting the API server", ("Starting Webserver",)),
    Phase("warming up", ("Warming up model",)),
    Phase("capturing CUDA graphs", ("Cuda Graphs are enabled for sizes",)),
)
