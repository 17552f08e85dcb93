"""The llama.cpp builds simulated, the log shape each one prints, and llama-server's flags.

llama.cpp names a release by its build number (``b5890``: the git tag and what
``llama-server --version`` prints as ``version: 5890 (commit)``). The sim also takes
the name of a shape (``2024``, ``2025``, ``2026``, ``2026-06``) for a build that
prints it. Which build first printed a shape is placed by the build's date:
b3680 (2024-09, the server's logging rewrite), b7600 (2026-01, one prefixed line per
timing), b8600 (2026-06, acceptance per position).
"""

from __future__ import annotations

import re

from tui.sim.version import Version

#: first build of each shape (build number), oldest first
SHAPE_2025 = 3680
SHAPE_2026 = 7600
SPEC_PER_POS = 8600
MIN_BUILD = 2500
MAX_BUILD = 9999
#: a build that prints each named shape
NAMED = {"2024": 3400, "2025": 5890, "2026": 7900, "2026-06": 8800}
DEFAULT_VERSION = "b8800"
DEFAULT_PORT = 8080
DEFAULT_MODEL = "/models/Qwen3-8B-Q4_K_M.gguf"
#: llama-server's default -c before 2026 builds (0 = the model's own from then on)
OLD_DEFAULT_CTX = 4096
#: -np default: 1 slot up to 2025, 4 (with a unified KV cache) in 2026 builds
OLD_DEFAULT_SLOTS = 1
DEFAULT_SLOTS = 4
#: --draft-max default
DEFAULT_DRAFT_MAX = 16

_BUILD = re.compile(r"^b?(\d{3,5})$")

#: flag spelling -> destination, as common/arg.cpp spells them
ALIASES = {
    "-m": "model",
    "--model": "model",
    "-c": "ctx_size",
    "--ctx-size": "ctx_size",
    "-ngl": "n_gpu_layers",
    "--gpu-layers": "n_gpu_layers",
    "--n-gpu-layers": "n_gpu_layers",
    "-np": "parallel",
    "--parallel": "parallel",
    "-md": "model_draft",
    "--model-draft": "model_draft",
    "--draft-max": "draft_max",
    "--draft": "draft_max",
    "--draft-n": "draft_max",
    "--draft-min": "draft_min",
    "--draft-n-min": "draft_min",
    "-t": "threads",
    "--threads": "threads",
    "-a": "alias",
    "--alias": "alias",
    "-b": "batch_size",
    "--batch-size": "batch_size",
}


def parse_build(text: str) -> Version:
    """``b5890``, ``5890`` or a shape name, as a Version keyed by its build number."""
    text = text.strip()
    if text in NAMED:
        return Version((NAMED[text], 0, 0, 0), f"b{NAMED[text]}")
    match = _BUILD.match(text)
    if match is None:
        raise ValueError(
            f"not a llama.cpp build: {text!r} (give bNNNN, or one of {', '.join(NAMED)})"
        )
    number = int(match.group(1))
    return Version((number, 0, 0, 0), f"b{number}")


RELEASES = ((parse_build(f"b{MIN_BUILD}"), parse_build(f"b{MAX_BUILD}")),)


def shape(v: Version) -> str:
    """The log shape of build ``v``: ``2024``, ``2025`` or ``2026``."""
    build = v.key[0]
    if build < SHAPE_2025:
        return "2024"
    if build < SHAPE_2026:
        return "2025"
    return "2026"


def commit_of(build: int) -> str:
    """A short commit hash for ``build`` (the same one every run)."""
    return f"{(build * 2654435761) % 16**7:07x}"
