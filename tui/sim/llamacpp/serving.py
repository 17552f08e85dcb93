"""llama-server while serving: a slot per request, the prompt-processing lines, the progress
line of a long generation, and the timing lines when a request ends.

======  ===================================  ==========================  =====================
shape   timings (``print_timings``)          progress (every 3 s once     draft acceptance
                                             100 tokens are out)
======  ===================================  ==========================  =====================
2024    three ``INFO [ print_timings] ...    -                           -
        | key=value`` lines
2025    ``slot print_timing: ... | `` then   ``n_decoded = N, tg = X     ``draft acceptance
        three unprefixed lines               t/s``                       rate = R (A accepted
                                                                         / G generated)``
2026    one prefixed line each, then         ``n_gen = N, tg = X t/s,    ``draft acceptance =
        ``graphs reused = N``                tg_3s = Y t/s``             R (A accepted / G
                                                                         generated), mean len
                                                                         = L`` (from 2026-06:
                                                                         ``mean acceptance
                                                                         length = L,
                                                                         acceptance rate per
                                                                         position = (a, b)``)
======  ===================================  ==========================  =====================
"""

from __future__ import annotations

from dataclasses import dataclass

from tui.sim.llamacpp.lines import LlamaLines
from tui.sim.llamacpp.metrics import SpecCounts, Timing
from tui.sim.llamacpp.releases import SPEC_PER_POS
from tui.sim.load import Advance, Request

#: prompt tokens per llama_decode() call (-b default)
PROMPT_BATCH = 2048
#: the progress line: at most every this many seconds, once this many tokens are out
PROGRESS_SECONDS = 3.0
PROGRESS_MIN_TOKENS = 100
#: prompt processing is reported only once it has taken this long (2026)
PROMPT_REPORT_SECONDS = 3.0
MS = 1000.0


@dataclass
class Task:
    """One request on one slot."""

    request: Request
    slot_id: int
    task_id: int
    last_print: float
    last_n: int = 0


class Serving(LlamaLines):
    """The per-request lines of this build and the counters /metrics and /slots show."""

    def on_advance(self, advance: Advance, now: float) -> None:
        for request in advance.prefilled:
            self._start(request, now)
        for request in advance.finished:
            self._finish(request, now)
        if advance.decode_log_due:
            self.host.load.decode_logged()
        self._progress(now)
        if advance.finished and not self.tasks:
            if self.shape == "2024":
                self.old("update_slots", "all slots are idle")
            elif self.shape == "2025":
                self.srv("update_slots", "all slots are idle")

    # -- a request starts -----------------------------------------------------------------
    def _start(self, request: Request, now: float) -> None:
        with self._lock:
            busy = {task.slot_id for task in self.tasks.values()}
            slot_id = min(set(range(self.n_slots)) - busy, default=0)
            task = Task(request, slot_id, self.next_task, now)
            self.next_task += 1
            self.tasks[request.rid] = task
        cached = request.cached_tokens
        total = request.prompt_tokens
        if self.shape == "2024":
            self.old(
                "launch_slot_with_task",
                "slot is processing task",
                id_slot=slot_id,
                id_task=task.task_id,
            )
            self.old(
                "update_slots",
                "kv cache rm [p0, end)",
                id_slot=slot_id,
                id_task=task.task_id,
                p0=cached,
            )
            return
        say = lambda message: self.slot("update_slots", slot_id, task.task_id, message)  # noqa: E731
        if self.shape == "2025":
            self.slot("launch_slot_with_task", slot_id, task.task_id, "processing task")
            say(
                f"new prompt, n_ctx_slot = {self.n_ctx_slot}, n_keep = 0, n_prompt_tokens = {total}"
            )
            say(f"kv cache rm [{cached}, end)")
            done = cached
            while done < total:
                batch = min(PROMPT_BATCH, total - done)
                done += batch
                say(
                    f"prompt processing progress, n_past = {done}, n_tokens = {batch}, "
                    f"progress = {done / total:.6f}"
                )
            say(f"prompt done, n_past = {total}, n_tokens = {total - cached}")
            return
        self.slot("launch_slot_with_task", slot_id, task.task_id, "processing task, is_child = 0")
        say(f"new prompt, n_ctx_slot = {self.n_ctx_slot}, n_keep = 0, task.n_tokens = {total}")
        say(f"n_tokens = {cached}, memory_seq_rm [{cached}, end)")
        new = total - cached
        seconds = new / self.prefill_tps
        done = 0
        while done < new:
            done = min(done + PROMPT_BATCH, new)
            spent = seconds * done / new
            if spent >= PROMPT_REPORT_SECONDS:
                self.slot(
                    "print_timings_pp",
                    slot_id,
                    task.task_id,
                    f"prompt processing, n_tokens = {done:6d}, progress = {done / new:.2f}, "
                    f"t = {spent:6.2f} s / {self.prefill_tps:.2f} tokens per second",
                )
        say(f"prompt done, n_tokens = {total}, batch.n_tokens = {min(new, PROMPT_BATCH)}")

    # -- while it generates ---------------------------------------------------------------
    def _progress(self, now: float) -> None:
        if self.shape == "2024":
            return
        for task in list(self.tasks.values()):
            request = task.request
            n_gen = int(request.generated)
            if n_gen < PROGRESS_MIN_TOKENS or now - task.last_print < PROGRESS_SECONDS:
                continue
            start = request.first_token or request.arrived
            overall = n_gen / max(now - start, 1e-3)
            window = (n_gen - task.last_n) / max(now - task.last_print, 1e-3)
            if self.shape == "2025":
                message = f"n_decoded = {n_gen:6d}, tg = {overall:6.2f} t/s"
            else:
                message = f"n_gen = {n_gen:6d}, tg = {overall:6.2f} t/s, tg_3s = {window:6.2f} t/s"
            self.slot("print_timings_tg", task.slot_id, task.task_id, message)
            task.last_print = now
            task.last_n = n_gen

    # -- it ends --------------------------------------------------------------------------
    def _finish(self, request: Request, now: float) -> None:
        with self._lock:
            task = self.tasks.pop(request.rid, None)
        if task is None or request.first_token is None:
            return
        n_prompt = request.prompt_tokens - request.cached_tokens
        n_gen = max(request.completion_tokens, 1)
        prompt_ms = max((request.first_token - (request.admitted or request.arrived)) * MS, 0.01)
        gen_ms = max(((request.finished or now) - request.first_token) * MS, n_gen * 0.5)
        spec = self._spec_counts(n_gen)
        timing = Timing(n_prompt, prompt_ms, n_gen, gen_ms, request.cached_tokens, spec)
        with self._lock:
            self.counters.add(timing)
        n_past = request.prompt_tokens + n_gen
        if self.shape == "2024":
            self._timings_2024(task, timing, n_past)
            return
        past = "n_past" if self.shape == "2025" else "n_tokens"
        self.slot(
            "release",
            task.slot_id,
            task.task_id,
            f"stop processing: {past} = {n_past}, truncated = 0",
        )
        lines = [
            f"prompt eval time = {prompt_ms:10.2f} ms / {n_prompt:5d} tokens "
            f"({prompt_ms / max(n_prompt, 1):8.2f} ms per token, "
            f"{n_prompt / prompt_ms * MS:8.2f} tokens per second)",
            f"       eval time = {gen_ms:10.2f} ms / {n_gen:5d} tokens "
            f"({gen_ms / n_gen:8.2f} ms per token, {n_gen / gen_ms * MS:8.2f} tokens per second)",
            f"      total time = {prompt_ms + gen_ms:10.2f} ms / {n_prompt + n_gen:5d} tokens",
        ]
        if self.shape == "2025":
            self.slot("print_timings", task.slot_id, task.task_id, "\n" + "\n".join(lines))
            if spec is not None:
                accepted, generated, _, _ = spec
                self.slot(
                    "print_timings",
                    task.slot_id,
                    task.task_id,
                    f"\ndraft acceptance rate = {accepted / max(generated, 1):0.5f} "
                    f"({accepted:5d} accepted / {generated:5d} generated)",
                )
            return
        lines.append(f"   graphs reused = {max(n_gen - 2, 0):10d}")
        if spec is not None:
            accepted, generated, steps, per_pos = spec
            head = (
                f"draft acceptance = {accepted / max(generated, 1):0.5f} "
                f"({accepted:5d} accepted / {generated:5d} generated)"
            )
            mean = 1.0 + accepted / max(steps, 1)
            if self.v.key[0] >= SPEC_PER_POS:
                rates = ", ".join(f"{rate:.3f}" for rate in per_pos)
                lines.append(
                    f"{head}, mean acceptance length = {mean:5.2f}, "
                    f"acceptance rate per position = ({rates})"
                )
            else:
                lines.append(f"{head}, mean len = {mean:5.2f}")
        for line in lines:
            self.slot("print_timings", task.slot_id, task.task_id, line)

    def _timings_2024(self, task: Task, timing: Timing, n_past: int) -> None:
        n_prompt, prompt_ms, n_gen, gen_ms = (
            timing.n_prompt,
            timing.prompt_ms,
            timing.n_gen,
            timing.gen_ms,
        )
        ids = {"id_slot": task.slot_id, "id_task": task.task_id}
        self.old(
            "print_timings",
            f"prompt eval time     = {prompt_ms:10.2f} ms / {n_prompt:5d} tokens "
            f"({prompt_ms / max(n_prompt, 1):8.2f} ms per token, "
            f"{n_prompt / prompt_ms * MS:8.2f} tokens per second)",
            **ids,
            t_prompt_processing=round(prompt_ms, 3),
            n_prompt_tokens_processed=n_prompt,
            t_token=prompt_ms / max(n_prompt, 1),
            n_tokens_second=n_prompt / prompt_ms * MS,
        )
        self.old(
            "print_timings",
            f"generation eval time = {gen_ms:10.2f} ms / {n_gen:5d} runs   "
            f"({gen_ms / n_gen:8.2f} ms per token, {n_gen / gen_ms * MS:8.2f} tokens per second)",
            **ids,
            t_token_generation=round(gen_ms, 3),
            n_decoded=n_gen,
            t_token=gen_ms / n_gen,
            n_tokens_second=n_gen / gen_ms * MS,
        )
        self.old(
            "print_timings",
            f"          total time = {prompt_ms + gen_ms:10.2f} ms",
            **ids,
            t_prompt_processing=round(prompt_ms, 3),
            t_token_generation=round(gen_ms, 3),
            t_total=round(prompt_ms + gen_ms, 3),
        )
        self.old(
            "update_slots",
            "slot released",
            **ids,
            n_ctx=self.n_ctx,
            n_past=n_past,
            n_system_tokens=0,
            n_cache_tokens=n_past,
            truncated=False,
        )

    def _spec_counts(self, n_gen: int) -> SpecCounts | None:
        """(accepted, drafted, verify steps, acceptance per position) of one request."""
        spec = self.spec
        if spec is None:
            return None
        per_pos = spec.sample(self.host.rng)
        mean = 1.0 + sum(per_pos)
        steps = max(1, round((n_gen - 1) / mean))
        accepted = max(n_gen - 1 - steps, 0)
        return accepted, steps * spec.k, steps, per_pos
