"""`babysit hosts`, `babysit check`, `--help` and `--version`, run as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.sshd import Sshd

from tui import __version__
from tui.cli import main

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parent.parent


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=REPO,
    )


def test_help_lists_the_verbs_and_version_prints() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    for verb in ("hosts", "check"):
        assert f"\n    {verb} " in result.stdout
    version = run_cli("--version")
    assert version.stdout.strip() == f"babysit {__version__}"


def test_a_mistyped_verb_is_not_taken_for_a_host() -> None:
    result = run_cli("chek", "kpro5", "--config", "hosts.example.yaml")
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "babysit: no host 'chek' in hosts.example.yaml, and no verb 'chek' "
        "(did you mean the verb 'check'?)"
    )
    unknown = run_cli("kpro", "--config", "hosts.example.yaml")
    assert unknown.returncode == 2
    assert "no host 'kpro' (did you mean 'kpro5'?)" in unknown.stderr


def test_hosts_lists_hosts_services_and_chains() -> None:
    result = run_cli("hosts", "--config", "hosts.example.yaml")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "hosts.example.yaml: 4 host(s)"
    assert "  kpro5     ssh root@kpro5.example" in lines
    assert "  kpro6-ct  ssh root@pve1.example → pct exec 105" in lines
    assert "  here      local" in lines
    assert any("qwen: /root/sglang-serve.log (sglang, port 30000, gpus 0,1)" in li for li in lines)
    assert any("qwen: container vllm-qwen (vllm, port 8000, gpus 0,1)" in li for li in lines)
    data = json.loads(run_cli("hosts", "--config", "hosts.example.yaml", "--json").stdout)
    assert data["schema"] == 1
    assert [h["chain"] for h in data["hosts"]] == [
        ["ssh root@kpro5.example"],
        ["ssh root@pve1.example", "pct exec 105"],
        ["ssh root@gpu1.example"],
        ["local"],
    ]
    in_container = data["hosts"][2]["services"][0]
    assert (in_container["log"], in_container["container"]) == (None, "vllm-qwen")


def _hosts_file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "hosts.yaml"
    path.write_text("hosts:\n" + "".join(f"  {line}\n" for line in body.splitlines()))
    return path


def test_check_over_pct_reports_everything(
    sshd: Sshd, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sshd.add_container(105)
    log = tmp_path / "server log with 'quotes' $HOME.log"
    log.write_text("hello\n")
    entry = sshd.pct_host_yaml("ct", 105).rstrip("\n")
    services = (
        "  services:\n"
        "    present:\n"
        f"      log: {json.dumps(str(log))}\n"
        "    absent:\n"
        f"      log: {json.dumps(str(tmp_path / 'missing.log'))}\n"
    )
    config = _hosts_file(tmp_path, entry + "\n" + services)
    status = main(["check", "ct", "--config", str(config), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert status == 1
    assert report["ok"] is False
    assert report["chain"] == [f"ssh {sshd.user}@127.0.0.1:{sshd.port}", "pct exec 105"]
    assert report["user"] == sshd.user
    assert report["kernel"].startswith("Linux ")
    assert report["python3"]["ok"] is True
    assert report["nvidia_smi"]["path"] is None
    assert report["round_trip_ms"] > 0
    present, absent = report["logs"]
    assert (present["service"], present["exists"], present["size"]) == ("present", True, 6)
    assert present["inode"] == log.stat().st_ino
    assert (absent["service"], absent["exists"]) == ("absent", False)
    assert report["problems"] == [f"absent: log {tmp_path / 'missing.log'} does not exist on ct"]


def test_check_text_all_good_over_ssh(
    sshd: Sshd, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _hosts_file(tmp_path, sshd.host_yaml("gpu"))
    status = main(["check", "gpu", "--config", str(config)])
    out = capsys.readouterr().out
    assert status == 0, out
    assert out.splitlines()[0] == f"gpu: ssh {sshd.user}@127.0.0.1:{sshd.port}"
    assert "nvidia-smi  not found (no GPU telemetry on this host)" in out
    assert out.rstrip().endswith("all good")


def test_check_unreachable_host_exits_3_with_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from support.sshd import free_port

    config = _hosts_file(tmp_path, f"down:\n  ssh: root@127.0.0.1:{free_port()}\n")
    status = main(["check", "down", "--config", str(config), "--json"])
    captured = capsys.readouterr()
    assert status == 3
    error = json.loads(captured.out)["error"]
    assert error["kind"] == "unreachable"
    assert "connection refused" in error["message"]
    assert "Traceback" not in captured.err


def _fake_bin(tmp_path: Path, tools: dict[str, str]) -> Path:
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    for name, script in tools.items():
        path = bin_dir / name
        path.write_text(script)
        path.chmod(0o755)
    return bin_dir


NVIDIA_SMI = """#!/bin/sh
# prints what a two-card machine prints for the query babysit check uses
case "$*" in
  *--query-gpu=index,name,memory.total*--format=csv,noheader*)
    echo "0, NVIDIA H100 80GB HBM3, 81559 MiB"
    echo "1, NVIDIA H100 80GB HBM3, 81559 MiB" ;;
  *) echo "unexpected arguments: $*" >&2; exit 2 ;;
esac
"""

NVIDIA_SMI_BROKEN = """#!/bin/sh
echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." >&2
exit 9
"""


def test_check_local_with_gpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bin_dir = _fake_bin(tmp_path, {"nvidia-smi": NVIDIA_SMI})
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    config = _hosts_file(tmp_path, "box:\n  local: true\n")
    assert main(["check", "box", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "nvidia-smi  answers: 2 GPU(s)" in out
    assert "0, NVIDIA H100 80GB HBM3, 81559 MiB" in out


def test_check_local_with_broken_driver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bin_dir = _fake_bin(tmp_path, {"nvidia-smi": NVIDIA_SMI_BROKEN})
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    config = _hosts_file(tmp_path, "box:\n  local: true\n")
    main(["check", "box", "--config", str(config)])
    out = capsys.readouterr().out
    assert "nvidia-smi  does not answer: NVIDIA-SMI has failed because it couldn't " in out


def _path_without_python(tmp_path: Path, extra: dict[str, str]) -> str:
    """A PATH holding only the tools the check script needs, plus ``extra`` scripts."""
    bin_dir = _fake_bin(tmp_path, extra)
    for tool in ("sh", "id", "uname", "stat", "timeout", "true"):
        real = next(
            (Path(d) / tool for d in ("/usr/bin", "/bin") if (Path(d) / tool).exists()), None
        )
        assert real is not None, tool
        (bin_dir / tool).symlink_to(real)
    return str(bin_dir)


def test_check_says_when_python3_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", _path_without_python(tmp_path, {}))
    config = _hosts_file(tmp_path, "box:\n  local: true\n")
    assert main(["check", "box", "--config", str(config)]) == 1
    out = capsys.readouterr().out
    assert "python3     NOT FOUND (needed, >= 3.6)" in out
    assert "python3 not found on box" in out


def test_check_says_when_python3_is_too_old(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old_python = "#!/bin/sh\necho 3.5.2\n"
    monkeypatch.setenv("PATH", _path_without_python(tmp_path, {"python3": old_python}))
    config = _hosts_file(tmp_path, "box:\n  local: true\n")
    assert main(["check", "box", "--config", str(config), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["python3"]["ok"] is False
    assert report["python3"]["version"] == "3.5.2"
    assert "needs 3.6 or newer" in report["problems"][0]


def test_core_imports_neither_textual_nor_asyncssh() -> None:
    code = (
        "import sys, pkgutil, importlib, tui.core\n"
        "for m in pkgutil.walk_packages(tui.core.__path__, 'tui.core.'):\n"
        "    importlib.import_module(m.name)\n"
        "bad = [n for n in sys.modules if n.split('.')[0] in ('textual', 'asyncssh')]\n"
        "assert not bad, bad\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
