"""The SGLang releases simulated and their command-line spellings."""

from __future__ import annotations

from tui.sim.version import V, Version

MIN_VERSION = V("0.4.0")
MAX_VERSION = V("0.5.21")
#: The releases simulated: 0.5.19 is left out (its format was not read), and 0.5.22 on
#: redact the args line in a way not simulated.
RELEASES = ((MIN_VERSION, V("0.5.18")), (V("0.5.20"), MAX_VERSION))
DEFAULT_VERSION = "0.5.11"
DEFAULT_PORT = 30000
DEFAULT_MODEL = "Qwen/Qwen3-8B"

#: flag spelling -> ServerArgs field, where they differ from the dashes-to-underscores rule
ALIASES = {
    "--model": "model_path",
    "--tp": "tp_size",
    "--tensor-parallel-size": "tp_size",
    "--dp": "dp_size",
    "--data-parallel-size": "dp_size",
    "--pp": "pp_size",
    "--ep": "ep_size",
    "--speculative-draft-model": "speculative_draft_model_path",
    "--speculative-draft": "speculative_draft_model_path",
    "--tokenizer": "tokenizer_path",
}

#: the torch release each SGLang release ships with (first SGLang release, torch)
TORCH = (
    (V("0.5.6"), V("2.9.1")),
    (V("0.5.0"), V("2.8.0")),
    (V("0.4.7"), V("2.7.1")),
    (V("0.4.2"), V("2.5.1")),
    (V("0.4.0"), V("2.4.0")),
)


def torch_release(v: Version) -> Version:
    """The torch release SGLang ``v`` installs."""
    return next((torch for since, torch in TORCH if v >= since), TORCH[-1][1])
