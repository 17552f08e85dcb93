"""A process's stacks as py-spy reads them, else as the kernel shows them in /proc.

``py-spy dump`` pauses the process for the moment it reads its Python stacks and
changes nothing in it; when it cannot (no py-spy, not a Python process, ptrace
denied) the kernel's view is read instead: the process's ``stack``, ``wchan`` and
``status``, and each thread's name, state, ``wchan`` and ``stack``. Every text is
bounded.
"""

import os
import subprocess
import tempfile

#: Folders looked in for py-spy after PATH.
PY_SPY_FOLDERS = ("~/.local/bin", "/usr/local/bin")
PY_SPY = "py-spy"
#: Bytes of py-spy's output kept per process.
MAX_STACK_TEXT = 1024 * 1024
#: Bytes of a /proc file of the kernel's view kept.
MAX_PROC_TEXT = 64 * 1024
#: Bytes of one thread's kernel stack kept.
MAX_THREAD_STACK = 8 * 1024
#: Threads read per process.
MAX_THREADS = 4096
#: Seconds py-spy is given per process.
PY_SPY_TIMEOUT = 10.0
#: What py-spy says when ptrace is denied (lower case).
DENIED_WORDS = ("permission denied", "operation not permitted")


def find_py_spy(named=None):
    """The py-spy to run: the one the request names, else PATH's, else the folders'."""
    if named:
        return named if os.access(os.path.expanduser(named), os.X_OK) else None
    folders = os.environ.get("PATH", "").split(os.pathsep)
    folders += [os.path.expanduser(folder) for folder in PY_SPY_FOLDERS]
    for folder in folders:
        path = os.path.join(folder, PY_SPY) if folder else ""
        if path and os.access(path, os.X_OK) and os.path.isfile(path):
            return path
    return None


def bounded_text(path, limit=MAX_PROC_TEXT):
    """At most ``limit`` bytes of ``path`` as text, or None when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def run_bounded(argv, timeout, limit):
    """(exit status or None on timeout, stdout, stderr) of ``argv``, each output at most
    ``limit`` bytes: they go to files, so a talkative program costs no memory here."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            status = subprocess.call(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            status = None
        except OSError as error:
            return 127, "", str(error)
        texts = []
        for handle in (out, err):
            handle.seek(0)
            texts.append(handle.read(limit).decode("utf-8", "replace"))
        return status, texts[0], texts[1]


def py_spy_dump(py_spy, pid, timeout=PY_SPY_TIMEOUT):
    """(stack text or None, problem or None, denied): ``py-spy dump`` of ``pid``; when it
    does not end within ``timeout`` it is asked again with ``--nonblocking`` (it reads
    without pausing the process)."""
    argv = [py_spy, "dump", "--pid", str(pid)]
    status, out, err = run_bounded(argv, timeout, MAX_STACK_TEXT)
    if status is None:
        status, out, err = run_bounded([*argv, "--nonblocking"], timeout, MAX_STACK_TEXT)
        if status is None:
            return None, "py-spy did not answer within %g s (twice)" % timeout, False
    if status == 0 and out.strip():
        return out, None, False
    said = (err.strip() or out.strip() or "exit status %s" % status).splitlines()
    words = said[-1][:300] if said else ""
    denied = any(word in (err + out).lower() for word in DENIED_WORDS)
    return None, "py-spy: %s" % words, denied


def thread_facts(pid, tid):
    base = "/proc/%d/task/%d/" % (pid, tid)
    stat = bounded_text(base + "stat") or ""
    close = stat.rfind(")")
    fields = stat[close + 2 :].split() if close >= 0 else []
    return {
        "tid": tid,
        "name": (bounded_text(base + "comm") or "").strip() or None,
        "state": fields[0] if fields else None,
        "wchan": (bounded_text(base + "wchan") or "").strip() or None,
        "stack": bounded_text(base + "stack", MAX_THREAD_STACK),
    }


def kernel_view(pid, root):
    """The kernel's view of ``pid``: ``{"stack"`` (``root`` only, else None), ``"threads"``,
    ``"wchan"``, ``"status"``, ``"threads_cut"`` (more threads than MAX_THREADS),
    ``"stack_denied"`` (its stack is there but may not be read)``}``."""
    stack = bounded_text("/proc/%d/stack" % pid) if root else None
    try:
        tids = sorted(int(name) for name in os.listdir("/proc/%d/task" % pid) if name.isdigit())
    except OSError:
        tids = []
    return {
        "stack": stack,
        "threads": [thread_facts(pid, tid) for tid in tids[:MAX_THREADS]],
        "wchan": (bounded_text("/proc/%d/wchan" % pid) or "").strip() or None,
        "status": bounded_text("/proc/%d/status" % pid),
        "threads_cut": len(tids) > MAX_THREADS,
        "stack_denied": root and stack is None and os.path.exists("/proc/%d/stack" % pid),
    }
