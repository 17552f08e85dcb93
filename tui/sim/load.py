"""A small load model: requests in, running/queued counts, tokens and timings out.

Time is the real monotonic clock. The main thread of a sim calls
:meth:`LoadModel.advance` whenever it wakes; HTTP threads :meth:`submit` a
request and :meth:`wait` for it. Decode speed per request falls as the batch
grows (``base_tps / (1 + (n-1)/knee)``), so throughput rises with concurrency
and saturates. Speculative decoding multiplies the speed and emits about
``mean_len`` tokens per forward step.

A streamed request (``submit(..., streamed=True)``) makes the main thread wake every
:data:`STREAM_TICK` seconds while it runs, so its tokens reach the client as they are
made rather than all at the end. :meth:`LoadModel.freeze` stops the engine for good (the
wedged scenarios): nothing decodes, finishes or is admitted any more, requests that arrive
are accepted and wait, and the counts keep the values they had.
"""

from __future__ import annotations

import hashlib
import math
import random
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

#: seconds between two wake-ups of the main thread while a streamed request runs
STREAM_TICK = 0.05


@dataclass(frozen=True)
class SpecModel:
    """Speculative decoding: ``k`` draft tokens per verify step.

    ``cond[i]`` is the chance draft ``i+1`` is accepted given all before it
    were, so ``per_pos`` (what vLLM prints) are cumulative products and
    ``mean_len`` (SGLang's accept len, vLLM's mean acceptance length) is
    ``1 + sum(per_pos)``, the bonus token included. ``verify_tokens`` is
    SGLang's ``--speculative-num-draft-tokens``. ``noise`` is the spread of
    the value shown per log line (0 for the too-perfect repeat trap).
    """

    k: int
    cond: tuple[float, ...]
    verify_tokens: int
    noise: float = 0.03

    @property
    def per_pos(self) -> tuple[float, ...]:
        rates: list[float] = []
        product = 1.0
        for chance in self.cond:
            product *= chance
            rates.append(product)
        return tuple(rates)

    @property
    def mean_len(self) -> float:
        return 1.0 + sum(self.per_pos)

    def sample(self, rng: random.Random) -> tuple[float, ...]:
        """Per-position acceptance seen over one log interval (noise on the conditional rates)."""
        if not self.noise:
            return self.per_pos
        rates: list[float] = []
        product = 1.0
        for chance in self.cond:
            product *= min(1.0, max(0.0, chance + rng.gauss(0.0, self.noise / 3)))
            rates.append(product)
        return tuple(rates)

    @classmethod
    def healthy(cls, k: int, verify_tokens: int | None = None) -> SpecModel:
        """Acceptance a well-matched draft model reaches: accept len ≈ 3.9 for k=3."""
        cond = tuple(max(0.5, 0.995 - 0.005 * (i + 1)) for i in range(k))
        return cls(k, cond, verify_tokens or k + 1)

    @classmethod
    def perfect(cls, k: int, verify_tokens: int | None = None) -> SpecModel:
        """Every draft accepted: what a model stuck repeating itself looks like."""
        return cls(k, (1.0,) * k, verify_tokens or k + 1, noise=0.0)


@dataclass(frozen=True)
class LoadProfile:
    """Capacity of one simulated server. Invariant: all values positive."""

    base_tps: float
    max_running: int
    max_total_tokens: int
    prefill_tps: float = 12000.0
    spec: SpecModel | None = None
    decode_log_interval: int = 40
    cache_block: int = 1
    knee: float = 32.0
    #: seconds the first stats window pretends to cover (scheduler init to first log in a real
    #: load); keeps the first throughput figures repeatable under --seed
    startup_gap: float = 30.0

    @property
    def speedup(self) -> float:
        return 1.0 if self.spec is None else 1.0 + (self.spec.mean_len - 1.0) * 0.62

    @property
    def tokens_per_step(self) -> float:
        return 1.0 if self.spec is None else self.spec.mean_len

    def rate(self, running: int, elapsed: float = 0.0) -> float:
        """Tokens per second each of ``running`` requests gets, ``elapsed`` s after start.

        A slow, repeatable wobble of a few percent keeps throughput figures from
        looking machine-made (real batches vary with sequence lengths).
        """
        wobble = 1.0 + 0.035 * math.sin(elapsed / 1.17) + 0.015 * math.sin(elapsed / 0.31)
        return self.base_tps * self.speedup * wobble / (1.0 + max(running - 1, 0) / self.knee)


class Request:
    """One generation request. Mutated only under the model's lock."""

    __slots__ = (
        "aborted",
        "admitted",
        "arrived",
        "cached_tokens",
        "finished",
        "first_token",
        "generated",
        "max_new",
        "prompt_tokens",
        "rid",
        "streamed",
    )

    def __init__(self, rid: int, prompt_tokens: int, cached_tokens: int, max_new: int, now: float):
        self.rid = rid
        self.prompt_tokens = prompt_tokens
        self.cached_tokens = cached_tokens
        self.max_new = max(1, max_new)
        self.arrived = now
        self.admitted: float | None = None
        self.first_token: float | None = None
        self.finished: float | None = None
        self.generated = 0.0
        self.aborted = False
        self.streamed = False

    @property
    def completion_tokens(self) -> int:
        return round(self.generated)


@dataclass
class _Window:
    started: float
    virtual_elapsed: float | None = None
    prompt_tokens: int = 0
    cached_tokens: int = 0
    gen_tokens: float = 0.0
    steps: float = 0.0
    drafts: float = 0.0
    accepted: float = 0.0
    requests: int = 0


@dataclass(frozen=True)
class WindowStats:
    """Work done since the last time this window was taken (``elapsed`` seconds)."""

    elapsed: float
    prompt_tokens: int
    cached_tokens: int
    gen_tokens: float
    steps: float
    drafts: float
    accepted: float
    requests: int


@dataclass(frozen=True)
class Advance:
    """What happened in one :meth:`LoadModel.advance` call."""

    prefilled: tuple[Request, ...]
    finished: tuple[Request, ...]
    decode_log_due: bool


@dataclass
class Totals:
    """Counters since start (what Prometheus counters show)."""

    prompt_tokens: int = 0
    cached_tokens: int = 0
    gen_tokens: float = 0.0
    requests: int = 0
    finished: int = 0
    steps: float = 0.0
    drafts: float = 0.0
    accepted: float = 0.0
    forward_ct: int = 0
    extra: dict[str, float] = field(default_factory=dict)


class LoadModel:
    """Thread-safe request bookkeeping; see the module docstring."""

    WINDOWS = ("decode", "prefill", "stats")

    def __init__(self, profile: LoadProfile, now: float, wake: Callable[[], None]) -> None:
        self.profile = profile
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._wake = wake
        self._waiting: deque[Request] = deque()
        self._running: list[Request] = []
        self._last = now
        self._origin = now
        self._next_rid = 0
        self._steps_since_log = 0.0
        self._step_frac = 0.0
        self._prefix_cache: OrderedDict[str, None] = OrderedDict()
        self._windows = {name: _Window(now, profile.startup_gap) for name in self.WINDOWS}
        self.totals = Totals()
        #: (running, queued, used tokens, pending tokens) when the engine froze, else None
        self._frozen: tuple[int, int, int, int] | None = None

    # -- called from HTTP threads -------------------------------------------------------
    def submit(
        self,
        prompt_tokens: int,
        max_new: int,
        prompt_key: str | None = None,
        *,
        streamed: bool = False,
    ) -> Request:
        """Queue a request; ``prompt_key`` identifies the prompt for the prefix cache;
        ``streamed`` makes every step of it wake :meth:`wait_progress`."""
        now_cached = 0
        with self._lock:
            if prompt_key is not None:
                key = prompt_key.encode("utf-8", "replace")
                digest = hashlib.sha1(key, usedforsecurity=False).hexdigest()
                if digest in self._prefix_cache:
                    block = self.profile.cache_block
                    now_cached = max(0, (prompt_tokens - 1) // block * block)
                    self._prefix_cache.move_to_end(digest)
                else:
                    self._prefix_cache[digest] = None
                    if len(self._prefix_cache) > 4096:
                        self._prefix_cache.popitem(last=False)
            self._next_rid += 1
            request = Request(
                self._next_rid, max(1, prompt_tokens), now_cached, max_new, time.monotonic()
            )
            request.streamed = streamed
            self._waiting.append(request)
        self._wake()
        return request

    def wait(self, request: Request, timeout: float) -> bool:
        """Block until ``request`` finished or was aborted; False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: request.finished is not None, timeout)

    def wait_progress(self, request: Request, seen: int, timeout: float) -> int:
        """Block until ``request`` has more than ``seen`` tokens or ended (or ``timeout``);
        returns its token count then."""
        with self._changed:
            self._changed.wait_for(
                lambda: request.completion_tokens > seen or request.finished is not None, timeout
            )
            return request.completion_tokens

    def freeze(self) -> None:
        """The engine stops for good: see the module docstring."""
        with self._lock:
            if self._frozen is None:
                self._frozen = (
                    len(self._running),
                    len(self._waiting),
                    self._used_tokens(),
                    sum(r.prompt_tokens - r.cached_tokens for r in self._waiting),
                )

    @property
    def frozen(self) -> bool:
        with self._lock:
            return self._frozen is not None

    # -- called from the main thread -----------------------------------------------------
    def advance(self, now: float) -> Advance:
        """Decode up to ``now``, retire finished requests, admit queued ones (one prefill batch)."""
        with self._lock:
            if self._frozen is not None:
                self._last = now
                return Advance((), (), False)
            self._decode(now)
            finished = [r for r in self._running if r.generated >= r.max_new - 1e-6]
            for request in finished:
                request.finished = now
                self._running.remove(request)
            admitted = []
            while self._can_admit():
                request = self._waiting.popleft()
                self._admit(request, now)
                admitted.append(request)
                if request.max_new <= 1:
                    request.finished = now
                    finished.append(request)
                else:
                    self._running.append(request)
            self.totals.finished += len(finished)
            due = bool(self._running) and self._steps_since_log >= self.profile.decode_log_interval
            if finished or admitted or any(r.streamed for r in self._running):
                self._changed.notify_all()
        return Advance(tuple(admitted), tuple(finished), due)

    def _decode(self, now: float) -> None:
        """Every running request gains ``rate * dt`` tokens (capped at its max)."""
        profile = self.profile
        dt = max(0.0, now - self._last)
        self._last = now
        count = len(self._running)
        if not count or dt <= 0:
            return
        rate = profile.rate(count, now - self._origin)
        produced = 0.0
        for request in self._running:
            increment = max(min(rate * dt, request.max_new - request.generated), 0.0)
            request.generated += increment
            produced += increment
        steps = rate * dt / profile.tokens_per_step
        drafts = steps * count if profile.spec else 0.0
        accepted = drafts * (profile.spec.mean_len - 1.0) if profile.spec else 0.0
        for window in self._windows.values():
            window.gen_tokens += produced
            window.steps += steps
            window.drafts += drafts
            window.accepted += accepted
        totals = self.totals
        totals.gen_tokens += produced
        totals.steps += steps
        totals.drafts += drafts
        totals.accepted += accepted
        self._step_frac += steps
        whole = int(self._step_frac)
        self._step_frac -= whole
        totals.forward_ct += whole
        self._steps_since_log += steps

    def _admit(self, request: Request, now: float) -> None:
        """Prefill ``request``: its prompt is processed and its first token produced."""
        new_tokens = request.prompt_tokens - request.cached_tokens
        request.admitted = now
        request.first_token = now + new_tokens / self.profile.prefill_tps + 0.008
        request.generated = 1.0
        for window in self._windows.values():
            window.prompt_tokens += new_tokens
            window.cached_tokens += request.cached_tokens
            window.gen_tokens += 1.0
            window.requests += 1
        self.totals.prompt_tokens += request.prompt_tokens
        self.totals.cached_tokens += request.cached_tokens
        self.totals.gen_tokens += 1.0
        self.totals.requests += 1

    def next_wake(self) -> float | None:
        """Seconds until something happens by itself (a finish or a decode log), or None."""
        profile = self.profile
        with self._lock:
            if self._frozen is not None:
                return None
            if self._can_admit():
                return 0.0
            if not self._running:
                return None
            rate = profile.rate(len(self._running), self._last - self._origin)
            finish = min((r.max_new - r.generated) / rate for r in self._running)
            steps_left = max(profile.decode_log_interval - self._steps_since_log, 0.0)
            log = steps_left * profile.tokens_per_step / rate
            soonest = min(finish, log)
            if any(r.streamed for r in self._running):
                soonest = min(soonest, STREAM_TICK)
            return max(soonest, 0.0)

    def decode_logged(self) -> None:
        """The decode line for this interval was written."""
        with self._lock:
            self._steps_since_log = 0.0

    def take(self, name: str, now: float) -> WindowStats:
        """Return and reset the accumulators of window ``name``."""
        with self._lock:
            window = self._windows[name]
            elapsed = (
                window.virtual_elapsed
                if window.virtual_elapsed is not None
                else now - window.started
            )
            stats = WindowStats(
                elapsed=max(elapsed, 1e-6),
                prompt_tokens=window.prompt_tokens,
                cached_tokens=window.cached_tokens,
                gen_tokens=window.gen_tokens,
                steps=window.steps,
                drafts=window.drafts,
                accepted=window.accepted,
                requests=window.requests,
            )
            self._windows[name] = _Window(now)
            return stats

    def abort_all(self, now: float) -> None:
        """End every request (server going away); waiting handlers return at once."""
        with self._lock:
            for request in [*self._running, *self._waiting]:
                request.aborted = True
                request.finished = now
            self._running.clear()
            self._waiting.clear()
            self._changed.notify_all()

    # -- snapshots -----------------------------------------------------------------------
    def _can_admit(self) -> bool:
        """The head of the queue fits: a free slot and room for its prompt (or nothing running)."""
        if not self._waiting or len(self._running) >= self.profile.max_running:
            return False
        head = self._waiting[0]
        return not self._running or (
            self._used_tokens() + head.prompt_tokens <= self.profile.max_total_tokens
        )

    def _used_tokens(self) -> int:
        return int(sum(r.prompt_tokens + r.generated for r in self._running))

    @property
    def running(self) -> int:
        with self._lock:
            return len(self._running) if self._frozen is None else self._frozen[0]

    @property
    def queued(self) -> int:
        with self._lock:
            return len(self._waiting) if self._frozen is None else self._frozen[1]

    @property
    def used_tokens(self) -> int:
        with self._lock:
            return self._used_tokens() if self._frozen is None else self._frozen[2]

    @property
    def pending_tokens(self) -> int:
        with self._lock:
            if self._frozen is not None:
                return self._frozen[3]
            return sum(r.prompt_tokens - r.cached_tokens for r in self._waiting)
