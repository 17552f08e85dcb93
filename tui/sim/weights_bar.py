"""The weight loader's tqdm bar, which both engines write while the checkpoint loads."""

from __future__ import annotations

from tui.sim.config import SimConfig

#: the shortest span a bar's rate is computed over (``--load-seconds 0``)
MIN_SPAN = 1e-3


def shard_rate(cfg: SimConfig, drawn: float, span: float, shards: int) -> float:
    """Shards a second the bar shows: ``drawn``, or in ``slow-load`` the pace of its
    updates (``shards`` over ``span`` seconds)."""
    return shards / max(span, MIN_SPAN) if cfg.slow else drawn


def safetensors_bar(done: int, shards: int, rate: float) -> str:
    """One update of the weight loader's tqdm bar, as tqdm writes it: ``\\r`` + bar + ``\\n``.

    Format ``weight_utils._BAR_FORMAT`` (vLLM, copied by SGLang): ``"{desc}: {percentage:3.0f}%
    Completed | {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]\\n"``.
    """

    def clock(seconds: float) -> str:
        whole = round(seconds)
        return f"{whole // 60:02d}:{whole % 60:02d}"

    if done == 0:
        timing = "[00:00<?, ?it/s]"
    else:
        timing = f"[{clock(done / rate)}<{clock((shards - done) / rate)}, {rate:5.2f}it/s]"
    percent = f"{100 * done / shards:3.0f}%"
    bar = f"{percent} Completed | {done}/{shards} {timing}"
    return f"\rLoading safetensors checkpoint shards: {bar}\n"
