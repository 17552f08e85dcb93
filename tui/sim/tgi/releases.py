"""The TGI releases simulated, the launcher's flag spellings and where router lines come from.

Two router layouts: up to 2.1 the router binary is the ``text_generation_router``
crate (``router/src/main.rs`` warms up and connects, the gRPC client is
``text_generation_client``); from 2.2 the batching backend lives in
``backends/v3`` (``text_generation_router_v3``) and ``Connected`` comes from
``router/src/server.rs``.
"""

from __future__ import annotations

from tui.sim.version import V, Version

DEFAULT_VERSION = "3.0.1"
#: ``text-generation-launcher``'s own default (``#[clap(default_value = "3000")]``); the
#: docker images set ``PORT=80``, which an unprivileged sim cannot bind
DEFAULT_PORT = 3000
DEFAULT_MODEL = "bigscience/bloom-560m"
SUPPORTED = ((V("2.0.0"), V("3.3.9")),)
#: 3.0 on: flashinfer and prefix caching by default, torch >= 2.5 (``torch.OutOfMemoryError``)
V3 = V("3.0.0")
SPLIT = V("2.2.0")

ALIASES = {
    "-p": "port",
    "--hostname": "host",
    "-e": "env",
}

#: (target, file, line) of each router line, per layout
SITES: dict[str, dict[str, tuple[str, str, int]]] = {
    "router": {
        "warmup": ("text_generation_router", "router/src/main.rs", 317),
        "max_batch": ("text_generation_router", "router/src/main.rs", 354),
        "connected": ("text_generation_router", "router/src/main.rs", 355),
        "success": ("text_generation_router::server", "router/src/server.rs", 305),
        "client_error": ("text_generation_client", "router/client/src/lib.rs", 33),
        "request_failed": ("text_generation_router::infer", "router/src/infer.rs", 588),
        "shutdown": ("text_generation_router::server", "router/src/server.rs", 1098),
    },
    "v3": {
        "warmup": ("text_generation_router_v3", "backends/v3/src/lib.rs", 125),
        "max_batch": ("text_generation_router_v3", "backends/v3/src/lib.rs", 137),
        "connected": ("text_generation_router::server", "router/src/server.rs", 2049),
        "success": ("text_generation_router::server", "router/src/server.rs", 432),
        "client_error": ("text_generation_router_v3::client", "backends/v3/src/client/mod.rs", 54),
        "request_failed": ("text_generation_router_v3::backend", "backends/v3/src/backend.rs", 488),
        "shutdown": ("text_generation_router::server", "router/src/server.rs", 2412),
    },
}


def layout(v: Version) -> str:
    """The key of :data:`SITES` for release ``v``."""
    return "v3" if v >= SPLIT else "router"
