"""The words of the agent's wire protocol, shared by the agent and babysit's side.

Every mode, frame kind, kill event kind, one-line answer and record state that
crosses the channel is named here once, and both ends use these names.
"""

#: The name the agent's code runs under: it is in the command line of every agent and
#: of the shells that start one (see BOOTSTRAP in tui/remote/agentcall.py), so one agent
#: never takes itself, another agent or their shells for a server.
AGENT_MARK = "babysit-agent"

# ------------------------------------------------------------------ modes
#: Follow one log file and report it byte by byte (a request with no mode is one).
MODE_FOLLOW = "follow"
#: Answer "which run is this?" once, and exit.
MODE_PROBE = "probe"
#: Stay, and answer one probe request per line of stdin.
MODE_SERVE_PROBES = "serve-probes"
MODE_KILL = "kill"
#: Read back the record of a kill whose channel was lost.
MODE_KILL_RECORD = "kill-record"
MODE_ALIVE = "alive"
MODE_LAUNCH = "launch"
MODE_PREFLIGHT = "preflight"
#: One action on a service's container through its runtime's CLI (``action``: one of
#: the CONTAINER_* words below), each after the container's identity is checked again.
MODE_CONTAINER = "container"

#: One small completion sent to a run's server on the host's loopback (tui/agent/canary.py).
#:
#: Request: ``{"mode": "canary", "pid": P, "start_ticks": T, "port": N, "path": "/v1/completions",
#: "body": {...}, "sampling_at": [...], "sampling_keys": [...], "generation_config": DIR | null,
#: "fallback_sampling": {...} | null, "timeout": S, "limit": BYTES}``. The agent checks that
#: pid P still has start ticks T (a relative DIR is read from the process's cwd), reads
#: ``DIR/generation_config.json`` (at most 64 KiB) and sets the ``sampling_keys`` it gives
#: (finite numbers) at ``sampling_at`` in the body, else those of ``fallback_sampling``;
#: then POSTs the body to 127.0.0.1:N and reads the answer for at most S seconds and
#: ``limit`` bytes, stamping each ``data:`` line as it arrives.
#:
#: Answer: ``{"run": {"pid", "start_ticks", "same": bool, "alive": bool},
#: "sampling": {...}, "sampling_source": "generation_config" | "canary.sampling" | "server",
#: "sampling_path": PATH | null, "recommended": {...} | null, "sampling_problem": WORDS | null,
#: "sent_at": EPOCH, "status": HTTP | null, "events": [[SECONDS_AFTER_SENT, PAYLOAD], ...],
#: "body": TEXT (a non-stream answer, cut at ``limit``), "timed_out": bool, "cut": bool,
#: "error": WORDS | null, "elapsed_s": S, "cpu_s": the agent's own CPU seconds}``.
#: Nothing is sent when the pid's start ticks differ (``same`` false).
MODE_CANARY = "canary"
#: Everything that may explain a hang, gathered without signalling or changing anything
#: (tui/agent/dump.py).
#:
#: Request: ``{"mode": "dump", "pid": P, "start_ticks": T, "boot_id": B, "log": PATH,
#: "dev": D | null, "inode": I | null, "anchor": OFFSET | null, "lines": 200,
#: "record_dir": DIR, "timeout": S, "py_spy": PATH | null}``. The agent checks that pid
#: P still has start ticks T on boot B, then for P and each process below it takes a
#: ``py-spy dump`` (at most S seconds each) when py-spy is on the host (else the kernel's
#: view: ``/proc/PID/stack``, ``wchan``, ``status`` and each thread's state and wchan).
#: The log's lines are read from the anchor on when the file at PATH is inode I.
#:
#: Answer: ``{"run": {"pid", "start_ticks", "same": bool, "boot_id"}, "processes":
#: [{"pid", "ppid", "comm", "cmdline", "start_ticks", "user", "how": "py-spy" | "proc",
#: "stack": TEXT | null, "threads": [{"tid", "name", "state", "wchan", "stack"}],
#: "wchan", "status": TEXT | null, "threads_cut": bool, "problem": WORDS | null}],
#: "processes_cut": bool, "py_spy": PATH | null, "ptrace": {"allowed": bool | null,
#: "why": WORDS | null, "yama_scope": N | null, "cap_sys_ptrace": bool | null},
#: "nvidia_smi": {"status", "text", "error", "apps_status", "apps", "apps_error"},
#: "log": {"path", "dev", "inode", "offset", "lines": [TEXT...], "from_anchor": bool,
#: "cut": bool, "problem"}, "record": {...} | null, "startups": {...} | null,
#: "startups_problem": WORDS | null, "problem": WORDS | null (the run is not P's: then
#: nothing else is gathered), "taken_at": EPOCH, "elapsed_s": S}``.
MODE_DUMP = "dump"

# ------------------------------------------------------------------ probe extras
# A probe request's service may carry ``phases``: [{"name", "lines", "progress"}] (the
# engine's startup phases, tui/engines/spec.py Phase) and ``workers``: [titles]; the
# request may carry ``gpu_owners``: the host's other services (name, log, port, match,
# launch, container, workers), whose runs own GPU memory as surely as the probed ones'.
#
# Answer additions:
# * ``ready.phases``: [{"name", "offset", "at", "dated": "stamp" | "before" | "seen",
#   "done", "total"}], the first line of each phase past the anchor, in log order.
# * ``ready.at_before``: when the ready line carries no stamp, the last stamped line's
#   before it (what dates the run's ``ready_at``), or null.
# * a service entry's ``startups``: the service's run history from
#   ``<record_dir>/startups.json`` (at most STARTUPS_KEPT runs, the newest last), each
#   ``{"boot_id", "pid", "start_ticks", "started", "phases": [{"name", "at"}],
#   "ready_at"}``, with this run's own as the agent just wrote it; ``startups_problem``
#   says why it could not be read or written.
# * a service entry's ``leftovers``: pids of the engine's workers (``workers``) that
#   write the service's log below no run.
# * the answer's ``gpu_csv``: the host's GPUs (nvidia-smi's answers and ``procs``), read
#   and sent once for every service that asked (``gpus``), or null when none did; each
#   service entry's ``gpu_csv`` is true when it asked (the answer's is then its), else
#   false.
# * ``gpu_csv.procs``: one entry per pid nvidia-smi lists, ``{"pid", "start_ticks",
#   "started_at", "ppid", "uid", "user", "cmdline", "comm", "owner": SERVICE | null,
#   "worker_of": SERVICE | null}``; ``owner`` is the service whose live run holds it (a
#   probed service or one of ``gpu_owners``); a pid the agent cannot see is left out.
#   ``gpu_csv.owners_problem`` (WORDS | null) says why some owners' runs could not be
#   found: a pid no run owns is then left out too, never taken for an orphan.
#: Runs kept in a service's ``startups.json``.
STARTUPS_KEPT = 8
STARTUPS_FILE = "startups.json"

#: ``sampling_source`` words of a canary answer.
SAMPLING_MODEL = "generation_config"
SAMPLING_CONFIG = "canary.sampling"
SAMPLING_SERVER = "server"

# ------------------------------------------------------------------ container actions
#: ``docker stop -t GRACE ID``: a kill, with its events and its record as any kill's.
CONTAINER_STOP = "stop"
#: ``docker start ID`` of a stopped container.
CONTAINER_START = "start"
#: ``docker restart -t GRACE ID`` of a running one.
CONTAINER_RESTART = "restart"
#: What ``docker inspect`` says now, and the facts of its log file.
CONTAINER_INSPECT = "inspect"

# ------------------------------------------------------------------ follow frames
FRAME_OPENED = "opened"
FRAME_DATA = "data"
FRAME_RESUME = "resume"
FRAME_TRUNCATED = "truncated"
FRAME_REPLACED = "replaced"
FRAME_DELETED = "deleted"
FRAME_MISSING = "missing"
FRAME_APPEARED = "appeared"
FRAME_WRITER = "writer"
FRAME_WRITER_GONE = "writer-gone"
FRAME_LOST = "lost"
FRAME_EOF = "eof"
FRAME_ERROR = "error"
#: Where a container's log is, and whether it can be followed as a file (follow mode
#: given a container).
FRAME_CONTAINER = "container"

#: What became of the file a ``replaced`` frame leaves (its ``old_state``).
OLD_DELETED = "deleted"
OLD_RENAMED = "renamed"

# ------------------------------------------------------------------ kill events
KILL_STARTED = "started"
KILL_SIGNALLED = "signalled"
KILL_EXITED = "exited"
KILL_GONE = "gone"
KILL_CHANGED = "changed"
KILL_REFUSED = "refused"
KILL_ERROR = "error"
KILL_DONE = "done"
#: A container kill: the runtime was asked to stop the container (``docker stop``).
KILL_STOPPING = "stopping"
#: A container kill: how the container ended (exit code, FinishedAt, OOMKilled).
KILL_STOPPED = "stopped"
#: The killed processes are gone and the kill waits (at most the grace) for them to
#: leave nvidia-smi's process list and for their memory to be free: ``{"pids",
#: "held_mib"}`` each time what is held changes.
KILL_GPU_WAIT = "gpu-wait"
#: The agent's last event of a kill.
KILL_FINAL = (KILL_DONE, KILL_REFUSED, KILL_ERROR)
#: Kinds babysit gives a kill's events itself (the agent never sends them): the channel
#: was lost, the outcome cannot be known, an event could not be read.
KILL_LOST = "lost"
KILL_UNKNOWN = "unknown"
KILL_GARBLED = "garbled"

#: The ``state`` of a kill's record on the host.
KILL_RUNNING = "running"
KILL_FINISHED = "finished"

# ------------------------------------------------------------------ one-line answers
ANSWER_RECORD = "record"
ANSWER_ALIVE = "alive"
ANSWER_PREFLIGHT = "preflight"
ANSWER_LAUNCHED = "launched"
ANSWER_FAILED = "failed"
#: A container as ``docker inspect`` saw it after a container action.
ANSWER_CONTAINER = "container"

# ------------------------------------------------------------------ run record states
#: babysit's last run record of a service, against the host's processes now.
RECORD_EARLIER_BOOT = "from an earlier boot"
RECORD_GONE = "gone"
RECORD_PID_REUSED = "pid reused"
RECORD_RUNNING = "running"
