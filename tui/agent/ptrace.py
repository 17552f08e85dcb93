"""Whether this agent may read another process's memory (ptrace), and why not in plain words.

py-spy reads a process's memory through ptrace's rules, and so does the kernel's
``/proc/PID/stack``. Three things forbid it: Yama's ``kernel.yama.ptrace_scope``,
the agent's missing ``CAP_SYS_PTRACE`` and a process of another user.
"""

import os

YAMA_SCOPE = "/proc/sys/kernel/yama/ptrace_scope"
#: The bit of CAP_SYS_PTRACE in /proc/self/status's CapEff.
CAP_SYS_PTRACE_BIT = 19
#: What each Yama scope allows.
YAMA_WORDS = {
    1: "only a parent may trace its own children (sysctl kernel.yama.ptrace_scope=0 lifts it)",
    2: "only root with CAP_SYS_PTRACE may trace",
    3: "no one may trace (only a reboot lifts it)",
}
#: Files that say this agent runs in a container.
CONTAINER_MARKS = ("/.dockerenv", "/run/.containerenv")
CONTAINER_CGROUPS = ("docker", "kubepods", "containerd", "lxc", "libpod")


def small_text(path, limit=65536):
    """The first ``limit`` bytes of ``path`` as text, or None when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def yama_scope():
    text = small_text(YAMA_SCOPE)
    try:
        return int(text.strip()) if text else None
    except ValueError:
        return None


def has_cap_sys_ptrace():
    """Whether this agent holds CAP_SYS_PTRACE (None when it cannot tell)."""
    for line in (small_text("/proc/self/status") or "").splitlines():
        if line.startswith("CapEff:"):
            try:
                return bool(int(line.split()[1], 16) >> CAP_SYS_PTRACE_BIT & 1)
            except (IndexError, ValueError):
                return None
    return None


def in_container():
    # podman and systemd-nspawn set ``container`` (lower case) in their init's environment
    if any(os.path.exists(mark) for mark in CONTAINER_MARKS) or os.environ.get("container"):  # noqa: SIM112
        return True
    cgroups = small_text("/proc/1/cgroup") or ""
    return any(word in cgroups for word in CONTAINER_CGROUPS)


def process_uid(pid):
    for line in (small_text("/proc/%d/status" % pid) or "").splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    return None


def ptrace_facts():
    """What the rules are here: ``{"allowed": None, "why": None, "yama_scope",
    "cap_sys_ptrace"}`` (``allowed`` is set once a process was read or refused)."""
    return {
        "allowed": None,
        "why": None,
        "yama_scope": yama_scope(),
        "cap_sys_ptrace": has_cap_sys_ptrace(),
    }


def denied_why(facts, pid, user_of):
    """Why reading ``pid`` was denied, in plain words (``user_of``: uid -> name)."""
    reasons = []
    scope = facts.get("yama_scope")
    cap = facts.get("cap_sys_ptrace")
    me = os.geteuid()
    if scope in YAMA_WORDS:
        reasons.append("kernel.yama.ptrace_scope is %d: %s" % (scope, YAMA_WORDS[scope]))
    uid = process_uid(pid)
    if uid is not None and uid != me and not cap:
        reasons.append(
            "process %d belongs to user %s and the agent runs as %s, without CAP_SYS_PTRACE: "
            "only root (with CAP_SYS_PTRACE) may read another user's process"
            % (pid, user_of(uid), user_of(me))
        )
    if cap is False and me == 0:
        if in_container():
            reasons.append(
                "root in this container lacks CAP_SYS_PTRACE: run the container with "
                "--cap-add SYS_PTRACE"
            )
        else:
            reasons.append("the agent runs as root without CAP_SYS_PTRACE")
    if not reasons:
        reasons.append(
            "the kernel refused to let the agent (user %s) read process %d (it may have made "
            "itself undumpable)" % (user_of(me), pid)
        )
    return "; ".join(reasons)
