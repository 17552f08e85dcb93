"""The names of every series ``babysit export`` exposes, and their labels.

They are an interface: the alert rules in ``alerts/babysit.rules.yml``, the README's
dashboard queries and people's own dashboards use them. Change one only with all of
those.

Every series of a service carries ``host`` and ``service`` (the service's label:
``dp-3`` for an instance of ``dp``).
"""

from __future__ import annotations

#: The textfile's name in its folder (node_exporter's textfile collector reads ``*.prom``).
TEXTFILE = "babysit.prom"

#: 1 for each run babysit sees write a service's log; labels ``engine``, ``pid``,
#: ``started`` (the run's start, ISO 8601 in the host's zone), ``log_inode`` and
#: ``run_id`` (``<boot id>/<pid>/<start ticks>``, or a container's
#: ``<id>@<StartedAt>#<RestartCount>``). Absent while there is no run to name.
RUN_INFO = "babysit_run_info"
#: The run's start (host epoch seconds): a new value is a new run (see the crash-loop rule).
RUN_START = "babysit_run_start_timestamp_seconds"
#: 1 for the service's current verdict and 0 for every other one (label ``verdict``:
#: live, starting, wedged, stale, dead, no-log, ambiguous, unknown), so a change never
#: leaves a stale 1 behind.
VERDICT = "babysit_verdict"
#: When the facts of the service's latest answer were read on the host (host epoch
#: seconds); kept, not advanced, while the host cannot be asked.
OBSERVED = "babysit_observed_timestamp_seconds"
#: 1 when the run has said it is ready (its ready line, or /health), else 0.
READY = "babysit_ready"
#: Seconds since the run's last generation progress (a decode line, a counter that
#: grew); absent before any.
PROGRESS_AGE = "babysit_progress_age_seconds"
#: 1 for the phase of its startup the run is in and 0 for the engine's other phases
#: (label ``phase``: launching, …, ready).
STARTUP_PHASE = "babysit_startup_phase"
#: The latest value of each series parsed for the run (label ``name``: the metric, such
#: as ``gen_throughput``; ``part``: its DP rank or engine when it has one).
METRIC = "babysit_metric"
#: Seconds since that value was read.
METRIC_AGE = "babysit_metric_age_seconds"
#: The latest nvidia-smi reading of each GPU of a host, once per host however many of
#: its services share the GPU (labels ``host``, ``gpu``: its index, ``name``: such as
#: ``gpu_power``).
GPU_METRIC = "babysit_gpu_metric"
#: Seconds since that reading was taken.
GPU_METRIC_AGE = "babysit_gpu_metric_age_seconds"
#: 1 for each flag intended (the service's ``launch:``) but missing from the running
#: command line, 0 for each intended flag that is there (label ``flag``).
FLAG_MISSING = "babysit_launch_flag_missing"
#: Bytes of GPU memory held by a process that belongs to no live run of the host's
#: services (labels ``host``, ``gpu``: its index, ``pid``).
ORPHAN_BYTES = "babysit_gpu_orphan_bytes"
#: 1 when the host answered babysit's last round trip, 0 when it could not be asked.
HOST_UP = "babysit_host_up"
#: Seconds the host's last round trip took (answered or failed).
PROBE_DURATION = "babysit_probe_duration_seconds"

#: Every name, in the order the exposition lists them.
ALL = (
    HOST_UP,
    PROBE_DURATION,
    VERDICT,
    OBSERVED,
    RUN_INFO,
    RUN_START,
    READY,
    PROGRESS_AGE,
    STARTUP_PHASE,
    METRIC,
    METRIC_AGE,
    GPU_METRIC,
    GPU_METRIC_AGE,
    FLAG_MISSING,
    ORPHAN_BYTES,
)
