"""Human-readable sizes and ages, the same everywhere babysit shows them."""

from __future__ import annotations


def human_size(n: int) -> str:
    """``1.23 MiB``; whole bytes below 1 KiB (``512 B``)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{n} B" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def human_age(seconds: float) -> str:
    """``4 s``, ``3 min``, ``2h44m``, ``3 d`` — coarse on purpose."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds // 60:.0f} min"
    if seconds < 86400:
        hours, rest = divmod(int(seconds), 3600)
        return f"{hours}h{rest // 60:02d}m"
    return f"{seconds / 86400:.0f} d"


def duration_words(seconds: float) -> str:
    """``42 s``, ``2m 10s``, ``1h 05m``: finer than :func:`human_age`, for how long a
    startup phase ran (where a minute either way matters)."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        minutes, rest = divmod(seconds, 60)
        return f"{minutes}m {rest:02d}s"
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h {rest // 60:02d}m"
