"""nvidia-smi CSV as GPU readings, and GPU processes tied to a service by PID (or not)."""

from __future__ import annotations

import pytest

from tui.core.gpu import (
    APPS_QUERY,
    GPU_QUERY,
    Attribution,
    GpuProblem,
    attribute,
    gpu_values,
    read_apps,
    read_gpus,
)
from tui.core.metrics.model import Metric

pytestmark = pytest.mark.unit

H100 = "0, NVIDIA H100 80GB HBM3, 402.17, 700.00, 98, 72853, 81559, 51\n"
TWO = H100 + "1, NVIDIA H100 80GB HBM3, 68.82, 700.00, 0, 0, 81559, 30\n"


def test_the_queries_are_the_documented_argv() -> None:
    assert GPU_QUERY == (
        "nvidia-smi",
        "--query-gpu=index,name,power.draw,power.limit,utilization.gpu,memory.used,"
        "memory.total,temperature.gpu,uuid",
        "--format=csv,noheader,nounits",
    )
    assert APPS_QUERY == (
        "nvidia-smi",
        "--query-compute-apps=pid,used_memory,gpu_uuid",
        "--format=csv,noheader,nounits",
    )


def test_a_gpu_row_is_read() -> None:
    query = read_gpus(0, H100)
    assert query.problem is None
    (gpu,) = query.gpus
    assert (gpu.index, gpu.name) == (0, "NVIDIA H100 80GB HBM3")
    assert (gpu.power_draw, gpu.power_limit) == (402.17, 700.0)
    assert gpu.utilization == 0.98
    assert (gpu.memory_used, gpu.memory_total, gpu.temperature) == (72853, 81559, 51)
    assert gpu.power_fraction == pytest.approx(0.5745, abs=1e-4)
    assert gpu.values()[Metric.GPU_POWER] == 402.17
    assert gpu_values(query.gpus) == {"gpu0": gpu.values()}


@pytest.mark.parametrize("missing", ["[N/A]", "[Not Supported]", "N/A", "[Unknown Error]"])
def test_values_nvidia_smi_cannot_give_are_none(missing: str) -> None:
    row = f"1, NVIDIA GB10, {missing}, {missing}, 5, {missing}, {missing}, 40\n"
    (gpu,) = read_gpus(0, row).gpus
    assert gpu.power_draw is None and gpu.power_limit is None
    assert gpu.memory_used is None and gpu.memory_total is None
    assert gpu.utilization == 0.05 and gpu.temperature == 40
    assert gpu.power_fraction is None
    assert set(gpu.values()) == {Metric.GPU_UTIL, Metric.GPU_TEMPERATURE}


def test_headers_and_units_are_understood() -> None:
    text = (
        "index, name, power.draw [W], power.limit [W], utilization.gpu [%], memory.used [MiB], "
        "memory.total [MiB], temperature.gpu\n"
        "0, NVIDIA H100 80GB HBM3, 402.17 W, 700.00 W, 98 %, 72853 MiB, 81559 MiB, 51\n"
    )
    (gpu,) = read_gpus(0, text).gpus
    assert (gpu.power_draw, gpu.utilization, gpu.memory_used) == (402.17, 0.98, 72853)


@pytest.mark.parametrize(
    ("status", "stdout", "stderr", "problem"),
    [
        (127, "", "bash: line 1: nvidia-smi: command not found", GpuProblem.NO_NVIDIA_SMI),
        (127, "", "", GpuProblem.NO_NVIDIA_SMI),
        (
            9,
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
            "Make sure that the latest NVIDIA driver is installed and running.",
            "",
            GpuProblem.NO_DRIVER,
        ),
        (6, "No devices were found", "", GpuProblem.NO_DEVICES),
        (0, "", "", GpuProblem.UNREADABLE),
        (2, "", "Invalid combination of input arguments.", GpuProblem.FAILED),
    ],
)
def test_no_telemetry_is_one_quiet_line(
    status: int, stdout: str, stderr: str, problem: GpuProblem
) -> None:
    query = read_gpus(status, stdout, stderr)
    assert query.gpus == () and query.problem is problem
    assert query.message and "\n" not in query.message
    service = attribute(query, None, {1234})
    assert service.gpus == () and service.problem is problem
    assert service.note == query.message


def test_no_nvidia_smi_reads_as_such() -> None:
    query = read_gpus(127, "", "sh: 1: nvidia-smi: not found")
    assert query.message == "no nvidia-smi on this host: no GPU telemetry"


def test_compute_apps_of_the_service_are_tied_by_pid() -> None:
    apps = read_apps(0, "41234, 72852\n41240, 1024\n555, 300\n")
    service = attribute(read_gpus(0, TWO), apps, {41234, 41240, 41250})
    assert service.attribution is Attribution.TIED
    assert service.pids == (41234, 41240)
    assert service.memory == 73876
    assert [g.index for g in service.gpus] == [0, 1]


def test_compute_apps_that_are_not_the_service_are_said_so() -> None:
    apps = read_apps(0, "987654, 72852\n")  # a host PID seen from inside a container
    service = attribute(read_gpus(0, H100), apps, {41234})
    assert service.attribution is Attribution.OTHER_PIDS
    assert service.pids == () and service.memory is None
    assert "987654" in service.note and "container" in service.note
    assert service.gpus  # the GPU rows are still shown


def test_no_compute_apps_listed_is_said_so() -> None:
    for text in ("", "No running processes found\n"):
        service = attribute(read_gpus(0, H100), read_apps(0, text), {41234})
        assert service.attribution is Attribution.NONE_LISTED
        assert "lists no GPU processes" in service.note


def test_apps_with_n_a_memory_and_failed_apps_query() -> None:
    apps = read_apps(0, "41234, [N/A]\n")
    tied = attribute(read_gpus(0, H100), apps, {41234})
    assert tied.attribution is Attribution.TIED and tied.memory is None
    failed = attribute(read_gpus(0, H100), read_apps(127, ""), {41234})
    assert failed.attribution is Attribution.UNKNOWN and "nvidia-smi" in failed.note
    no_run = attribute(read_gpus(0, H100), apps, set())
    assert no_run.attribution is Attribution.NO_SERVICE_PIDS


def test_only_the_services_gpus_are_shown() -> None:
    service = attribute(read_gpus(0, TWO), read_apps(0, ""), {1}, service_gpus=(1,))
    assert [g.index for g in service.gpus] == [1]
    elsewhere = attribute(read_gpus(0, TWO), read_apps(0, ""), {1}, service_gpus=(5,))
    assert elsewhere.gpus == () and "5" in elsewhere.note


def test_to_json_is_plain_data() -> None:
    service = attribute(read_gpus(0, H100), read_apps(0, "41234, 72852\n"), {41234})
    record = service.to_json()
    assert record["attribution"] == "tied" and record["pids"] == [41234]
    assert record["gpus"][0]["power_draw"] == 402.17  # type: ignore[index]
