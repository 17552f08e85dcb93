"""hosts.yaml: the example parses; every mistake is one line with file, line, key and exit 2."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui.cli import main
from tui.config import Engine, HostKeyPolicy
from tui.errors import ConfigError
from tui.hostsfile import find_config, parse_config, parse_config_file

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.unit
def test_example_hosts_yaml_parses_with_chains() -> None:
    config = parse_config_file(REPO / "hosts.example.yaml")
    assert list(config.hosts) == ["kpro5", "kpro6-ct", "gpu1", "here"]
    kpro5 = config.hosts["kpro5"]
    assert kpro5.transport == "ssh"
    assert kpro5.chain_text() == "ssh root@kpro5.example"
    qwen = kpro5.services["qwen"]
    assert qwen.engine is Engine.SGLANG
    assert qwen.log == "/root/sglang-serve.log"
    assert qwen.port == 30000
    assert qwen.gpus == (0, 1)
    assert qwen.launch is not None
    assert qwen.launch.command[-2:] == ("--port", "30000")
    assert dict(qwen.launch.env) == {"CUDA_VISIBLE_DEVICES": "0,1"}
    assert config.hosts["kpro6-ct"].chain_text() == "ssh root@pve1.example → pct exec 105"
    assert config.hosts["here"].chain() == ("local",)
    in_container = config.hosts["gpu1"].services["qwen"]
    assert (in_container.log, str(in_container.container)) == ("", "vllm-qwen")


@pytest.mark.unit
def test_ssh_options_and_targets() -> None:
    config = parse_config(
        "hosts:\n"
        "  a:\n"
        "    ssh: admin@[fe80::1]:2222\n"
        "    identity_file: ~/keys/id\n"
        "    host_key_policy: accept-new\n"
        "    proxy_jump: jump@bastion\n"
        "  b:\n"
        "    ssh: gpu7\n"
        "    user: ops\n"
        "    port: 2200\n"
    )
    a, b = config.hosts["a"], config.hosts["b"]
    assert a.ssh is not None and b.ssh is not None
    assert (a.ssh.host, a.ssh.port, a.ssh.user) == ("fe80::1", 2222, "admin")
    assert a.ssh.identity_file == str(Path("~/keys/id").expanduser())
    assert a.ssh.host_key_policy is HostKeyPolicy.ACCEPT_NEW
    assert a.chain() == ("ssh jump@bastion", "ssh admin@[fe80::1]:2222")
    assert (b.ssh.host, b.ssh.port, b.ssh.user) == ("gpu7", 2200, "ops")
    assert b.ssh.host_key_policy is HostKeyPolicy.STRICT


@pytest.mark.unit
def test_numbers_in_argv_and_env_keep_their_text() -> None:
    config = parse_config(
        "hosts:\n  h:\n    local: true\n    services:\n      s:\n        log: /l\n"
        "        launch:\n          command: [python3, --tp, 8, --mem, 0.90]\n"
        "          env: {OMP_NUM_THREADS: 8}\n"
    )
    launch = config.hosts["h"].services["s"].launch
    assert launch is not None
    assert launch.command == ("python3", "--tp", "8", "--mem", "0.90")
    assert dict(launch.env) == {"OMP_NUM_THREADS": "8"}


SERVICE = "hosts:\n  a:\n    local: true\n    services:\n      s:\n        log: /l\n"

# Each case: hosts.yaml text, then the exact line the user must see.
MISTAKES = [
    pytest.param(
        "hosts:\n  a:\n    ssh: root@x\n   services: {}\n",
        "{path}:4: YAML syntax error:",
        id="yaml-syntax",
    ),
    pytest.param(
        "hosts:\n  a:\n    ssh: root@x\n    servces: {}\n",
        "{path}:4: hosts.a.servces: unknown key (did you mean 'services'?)",
        id="unknown-key",
    ),
    pytest.param(
        SERVICE + "        engnie: vllm\n",
        "{path}:7: hosts.a.services.s.engnie: unknown key (did you mean 'engine'?)",
        id="unknown-service-key",
    ),
    pytest.param(
        SERVICE + "        port: high\n",
        "{path}:7: hosts.a.services.s.port: must be a whole number, not 'high'",
        id="wrong-type-port",
    ),
    pytest.param(
        SERVICE + "        gpus: 0\n",
        "{path}:7: hosts.a.services.s.gpus: must be a list, not int '0'",
        id="wrong-type-gpus",
    ),
    pytest.param(
        "hosts:\n  a:\n    local: true\n    services:\n      s:\n        engine: sglang\n",
        "{path}:6: hosts.a.services.s.log: missing required key (the server's log file)",
        id="missing-log",
    ),
    pytest.param(
        "hosts:\n  a:\n    local: true\n    services:\n      s: {log: relative.log}\n",
        "{path}:5: hosts.a.services.s.log: must be an absolute path on the host, "
        "not 'relative.log'",
        id="relative-log",
    ),
    pytest.param(
        "hosts:\n  a:\n    ssh: root@x\n    pct: {node: root@pve, vmid: 105}\n",
        "{path}:4: hosts.a.pct: a host has one transport, but this one has ssh and pct",
        id="two-transports",
    ),
    pytest.param(
        "hosts:\n  a:\n    services: {}\n",
        "{path}:3: hosts.a: says neither local: true, ssh: nor pct: (how to reach it?)",
        id="no-transport",
    ),
    pytest.param(
        "hosts:\n  a:\n    pct: {node: root@pve, vmid: 12}\n",
        "{path}:3: hosts.a.pct.vmid: must be between 100 and 999999999, not 12",
        id="bad-vmid",
    ),
    pytest.param(
        "hosts:\n  a:\n    local: true\n  a:\n    local: true\n",
        "{path}:4: hosts.a: repeated key (first given on line 2)",
        id="duplicate-host",
    ),
    pytest.param(
        "hosts:\n  a:\n    local: true\n    services:\n      s:\n        log: /l\n"
        "        launch: {command: python3 -m sglang.launch_server}\n",
        "{path}:7: hosts.a.services.s.launch.command: must be a list (argv)",
        id="command-as-string",
    ),
    pytest.param(
        "hosts:\n  a:\n    ssh: root@x\n    host_key_policy: accept-all\n",
        "{path}:4: hosts.a.host_key_policy: must be one of strict, accept-new, not 'accept-all'",
        id="bad-policy",
    ),
    pytest.param(
        "hosts:\n  a:\n    ssh: root@x:22\n    port: 2222\n",
        "{path}:4: hosts.a.port: is 2222 but hosts.a.ssh says 22",
        id="port-conflict",
    ),
    pytest.param(
        "hosts:\n  a:\n    local: true\n    services:\n      s: {log: /l, match: '(unclosed'}\n",
        "{path}:5: hosts.a.services.s.match: not a valid regular expression",
        id="bad-regex",
    ),
    pytest.param(
        "hosts:\n  a:\n    local: true\n    services:\n"
        "      s:\n        log: /l\n        port: 30000\n        match: sglang\n",
        "{path}:8: hosts.a.services.s.match: 'sglang' is too broad: its literal text 'sglang' "
        "names nothing of this service's own, so it would claim any such process, another "
        "user's included; every way it can match must contain, as literal text, the service's "
        "port, a path",
        id="bare-name-match",
    ),
    pytest.param(
        "hosts:\n  a:\n    local: true\n    services:\n"
        "      s: {log: /l, port: 8000, match: 'vllm serve|--port 8000'}\n",
        "{path}:5: hosts.a.services.s.match: 'vllm serve|--port 8000' is too broad: "
        "its alternative 'vllm serve' names nothing",
        id="bare-name-alternative",
    ),
    pytest.param(
        "hosts:\n  a:\n    local: true\n    services:\n"
        "      s: {log: /l, match: 'python3 -m sglang.launch_server (--port 30000)?'}\n",
        "{path}:5: hosts.a.services.s.match: 'python3 -m sglang.launch_server (--port 30000)?' "
        "is too broad: its literal text 'python3 -m sglang … launch_server ' names nothing",
        id="optional-part-is-not-required-text",
    ),
    pytest.param("", "{path}:1: hosts: the file is empty", id="empty-file"),
    pytest.param(
        "hots:\n  a: {}\n",
        "{path}:1: hots: unknown key (did you mean 'hosts'?)",
        id="top-level-typo",
    ),
]


@pytest.mark.unit
@pytest.mark.parametrize(("text", "expected"), MISTAKES)
def test_each_mistake_is_one_line_with_file_line_key_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    path = tmp_path / "hosts.yaml"
    path.write_text(text)
    status = main(["hosts", "--config", str(path)])
    captured = capsys.readouterr()
    assert status == 2
    assert captured.out == ""
    err_lines = captured.err.strip().splitlines()
    assert len(err_lines) == 1, captured.err
    assert err_lines[0].startswith("babysit: " + expected.format(path=path)), err_lines[0]
    assert "Traceback" not in captured.err


@pytest.mark.unit
def test_unknown_host_name_suggests_the_closest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "hosts.yaml"
    path.write_text("hosts:\n  kpro5:\n    local: true\n  b200:\n    local: true\n")
    status = main(["check", "kpro", "--config", str(path)])
    err = capsys.readouterr().err.strip()
    assert status == 2
    assert err == (
        f"babysit: {path}:1: hosts: no host 'kpro' (did you mean 'kpro5'?); "
        "hosts in this file: kpro5, b200"
    )


@pytest.mark.integration
def test_config_error_from_the_installed_command_has_no_traceback(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("hosts:\n  a:\n    ssh: [not, a, string]\n")
    result = subprocess.run(
        [sys.executable, "-m", "tui", "hosts", "--config", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == f"babysit: {path}:3: hosts.a.ssh: must be a string, not a list"
    assert "Traceback" not in result.stderr


@pytest.mark.unit
def test_config_search_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    user_config = home / ".config" / "babysit" / "hosts.yaml"
    user_config.parent.mkdir(parents=True)
    user_config.write_text("hosts: {}\n")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("BABYSIT_CONFIG", raising=False)
    assert find_config(cwd=work) == user_config
    (work / "hosts.yaml").write_text("hosts: {}\n")
    assert find_config(cwd=work) == work / "hosts.yaml"
    env_config = tmp_path / "env.yaml"
    env_config.write_text("hosts: {}\n")
    monkeypatch.setenv("BABYSIT_CONFIG", str(env_config))
    assert find_config(cwd=work) == env_config
    explicit = tmp_path / "explicit.yaml"
    explicit.write_text("hosts: {}\n")
    assert find_config(str(explicit), cwd=work) == explicit
    with pytest.raises(ConfigError, match="no such file \\(given with --config\\)"):
        find_config(str(tmp_path / "nope.yaml"))
    monkeypatch.setenv("BABYSIT_CONFIG", str(tmp_path / "gone.yaml"))
    with pytest.raises(ConfigError, match=r"named by \$BABYSIT_CONFIG"):
        find_config(cwd=work)


@pytest.mark.unit
def test_no_config_anywhere_says_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("BABYSIT_CONFIG", raising=False)
    with pytest.raises(ConfigError, match=r"no hosts.yaml found \(looked in .*pass --config"):
        find_config(cwd=tmp_path)


yaml_scalars = st.one_of(
    st.integers(), st.booleans(), st.none(), st.text(max_size=12), st.floats(allow_nan=False)
)
yaml_values = st.recursive(
    yaml_scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "ssh",
                    "pct",
                    "local",
                    "services",
                    "log",
                    "port",
                    "gpus",
                    "launch",
                    "command",
                    "env",
                    "node",
                    "vmid",
                    "engine",
                    "user",
                    "x",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=8), yaml_values, max_size=3))
def test_any_document_either_parses_or_raises_config_error(hosts: dict[str, object]) -> None:
    import yaml

    text = yaml.safe_dump({"hosts": hosts})
    try:
        parse_config(text, "fuzz.yaml")
    except ConfigError as error:
        assert error.message.startswith("fuzz.yaml")
        assert "\n" not in error.message.split(": ", 2)[1]


@pytest.mark.unit
@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_text_either_parses_or_raises_config_error(text: str) -> None:
    try:
        parse_config(text, "fuzz.yaml")
    except ConfigError as error:
        assert error.message.startswith("fuzz.yaml")


@pytest.mark.unit
@pytest.mark.parametrize(
    ("pattern", "port"),
    [
        (r"sglang\.launch_server .*--port 30000", None),  # a flag with its value
        ("--served-model-name=qwen", None),
        ("vllm serve Qwen/Qwen3-8B", None),  # a path
        ("/workspace/launch_sglang.sh 7$", None),
        (":30000( |$)", 30000),  # the service's own port
        ("tui sim .*--port[ ](30001|30002)( |$)", None),  # every alternative names a port
    ],
)
def test_a_match_that_names_something_of_the_service_is_accepted(
    pattern: str, port: int | None
) -> None:
    port_line = f"        port: {port}\n" if port else ""
    host = parse_config(
        "hosts:\n  a:\n    local: true\n    services:\n      s:\n        log: /l\n"
        f"{port_line}        match: {json.dumps(pattern)}\n"
    ).hosts["a"]
    assert host.services["s"].match == pattern


@pytest.mark.unit
def test_instances_expand_with_templates() -> None:
    config = parse_config(
        "hosts:\n  b200:\n    local: true\n    services:\n      dp:\n"
        "        engine: sglang\n        instances: 8\n"
        "        log: /workspace/dflash/logs/sglang_gpu{i}.log\n"
        '        port: "{30000 + i}"\n        gpus: ["{i}"]\n'
        "        match: '/workspace/launch_sglang.sh {i}$'\n"
        '        launch: {command: [bash, /workspace/launch_sglang.sh, "{i}"], env: {GPU: "{i}"}}\n'
        "groups:\n  nodes: [b200]\n"
    )
    services = config.hosts["b200"].services
    assert list(services) == [f"dp-{i}" for i in range(8)]
    seven = services["dp-7"]
    assert seven.log == "/workspace/dflash/logs/sglang_gpu7.log"
    assert (seven.port, seven.gpus, seven.match) == (30007, (7,), "/workspace/launch_sglang.sh 7$")
    assert seven.launch is not None
    assert seven.launch.command == ("bash", "/workspace/launch_sglang.sh", "7")
    assert dict(seven.launch.env) == {"GPU": "7"}
    assert config.groups == {"nodes": ("b200",)}


@pytest.mark.unit
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "      dp: {log: '/l{i}', instances: 0}\n",
            "hosts.h.services.dp.instances: must be between 1 and 1024, not 0",
        ),
        (
            "      dp: {log: '/l{i ** 2}', instances: 2}\n",
            "hosts.h.services.dp.log: cannot read template '{i ** 2}'",
        ),
        (
            "      dp: {log: /l, port: '{i}', instances: 2}\n",
            "hosts.h.services.dp-0.port: must be between 1 and 65535, not 0",
        ),
    ],
)
def test_instance_mistakes_are_named(body: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(expected)):
        parse_config("hosts:\n  h:\n    local: true\n    services:\n" + body)


@pytest.mark.unit
def test_group_members_must_be_hosts() -> None:
    with pytest.raises(
        ConfigError, match=r"hosts.yaml:5: groups.g\[1\]: no host 'kpr5' \(did you mean 'kpro5'\?\)"
    ):
        parse_config("hosts:\n  kpro5: {local: true}\ngroups:\n  g: [kpro5,\n      kpr5]\n")


def _bomb(levels: int, width: int) -> str:
    """A list of lists ``levels`` deep, each level ``width`` aliases of the one below."""
    lines, below = [], None
    for level in range(levels):
        items = ",".join(["x"] * width if below is None else [f"*l{below}"] * width)
        lines.append(f"         - &l{level} [{items}]\n")
        below = level
    return "".join(lines)


HOST = "hosts:\n  a:\n    local: true\n    services:\n      s:\n"

# Each case: hosts.yaml text, the line the problem is on (None: the file as a whole),
# the start of the key it names, and what the line says.
ABSURD = [
    pytest.param(
        HOST + "        log: /l\n        gpus: " + "[" * 5000 + "]" * 5000 + "\n",
        "7: hosts.a.services.s.gpus[0][0][0]",
        "is nested more than 32 levels deep",
        id="deep-lists",
    ),
    pytest.param(
        HOST + "        log: /l\n        launch: " + "{a: " * 5000 + "x" + "}" * 5000 + "\n",
        "7: hosts.a.services.s.launch.a.a.a",
        "is nested more than 32 levels deep",
        id="deep-mappings",
    ),
    pytest.param(
        HOST + "        log: /l\n        port: " + "9" * 5000 + "\n",
        "7: hosts.a.services.s.port",
        "is a number of 5000 characters; none here needs more than 64",
        id="5000-digit-integer",
    ),
    pytest.param(
        HOST + "        log: /l\n        stop_grace: " + "1" * 5000 + "\n",
        "7: hosts.a.services.s.stop_grace",
        "is a number of 5000 characters",
        id="5000-digit-seconds",
    ),
    pytest.param(
        HOST + "        log: /l\n        instances: 2\n        port: '{" + "9" * 5000 + " + i}'\n",
        "8: hosts.a.services.s.port",
        "its numbers may have at most 9 digits",
        id="5000-digit-template",
    ),
    pytest.param(
        HOST + "        log: /" + "a" * 200_000 + "\n",
        "6: hosts.a.services.s.log",
        "the value is 200001 characters long, more than the 16384 any hosts.yaml text may hold",
        id="200KB-log-path",
    ),
    pytest.param(
        HOST + "        log: /" + "a" * 5000 + "\n",
        "6: hosts.a.services.s.log",
        "is 5001 characters long; it may hold at most 4095",
        id="log-path-over-PATH_MAX",
    ),
    pytest.param(
        HOST + "        instances: 1024\n        log: /l{i}\n        gpus:\n" + _bomb(9, 9),
        "14: hosts.a.services.s.gpus[5]",
        "the file holds more than 250000 values with its aliases expanded (through the alias *l",
        id="alias-bomb",
    ),
    pytest.param(
        HOST + "        instances: 1024\n        log: /l{i}\n        gpus:\n" + _bomb(5, 8),
        "6: hosts.a.services.s.instances",
        "1024 copies of this service would make the file hold more than 250000 values",
        id="alias-bomb-times-instances",
    ),
    pytest.param(
        HOST + "        log: /l\n        gpus: &g [1, *g]\n",
        "7: hosts.a.services.s.gpus[1]",
        "the alias *g is used inside the value it names",
        id="recursive-alias",
    ),
    pytest.param(
        HOST + "        log: /l\n        gpus: [" + ", ".join(["0"] * 2000) + "]\n",
        "7: hosts.a.services.s.gpus",
        "has 2000 items; it may have at most 1024",
        id="long-list",
    ),
    pytest.param(
        HOST
        + "        log: /l\n        launch:\n          command: ["
        + ", ".join(["x" * 16000] * 20)
        + "]\n",
        "8: hosts.a.services.s.launch",
        "its command and environment are 320020 bytes; a command line may be at most 262144",
        id="huge-command-line",
    ),
    pytest.param(
        "hosts:\n  " + "h" * 300 + ":\n    local: true\n",
        "2: hosts.hhhhhhhh",
        "is 300 characters long; a name may be at most 128",
        id="long-host-name",
    ),
    pytest.param(
        HOST + "        log: /l\n        port: !custom 30000\n",
        "7: hosts.a.services.s.port",
        "must be a whole number, not !custom '30000'",
        id="unknown-tag",
    ),
    pytest.param(
        HOST + "        log: /l\n        stop_grace: !!float thirty\n",
        "7: hosts.a.services.s.stop_grace",
        "'thirty' is not a valid float",
        id="tagged-float-that-is-not",
    ),
    pytest.param(
        HOST + "        log: /l\n        port: 2026-02-30\n",
        "7: hosts.a.services.s.port",
        "'2026-02-30' is not a valid timestamp",
        id="impossible-date",
    ),
    pytest.param(
        "# " + "x" * (1024 * 1024) + "\nhosts: {}\n",
        "",
        "is larger than 1048576 bytes, the most a hosts.yaml may hold",
        id="huge-file",
    ),
]

#: What no line of babysit's output may hold: C0 but tab and newline, DEL, C1, bidi controls.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _refused(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """The one line `hosts` and `status --json` print for ``path``, checked to be the
    same, with exit 2, a JSON envelope, no traceback and no control character."""
    assert main(["hosts", "--config", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err[:2000]
    assert main(["status", "--json", "--config", str(path)]) == 2
    json_run = capsys.readouterr()
    assert json_run.err == captured.err
    envelope = json.loads(json_run.out)
    assert envelope["ok"] is False
    assert envelope["error"]["kind"] == "config"
    assert f"babysit: {envelope['error']['message']}" == lines[0]
    for text in (captured.err, json_run.out):
        assert UNSAFE.search(text) is None, text
    return lines[0].removeprefix("babysit: ")


@pytest.mark.unit
@pytest.mark.parametrize(("text", "where", "message"), ABSURD)
def test_absurd_files_are_refused_with_file_line_and_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, where: str, message: str
) -> None:
    path = tmp_path / "hosts.yaml"
    path.write_text(text)
    said = _refused(path, capsys)
    assert said.startswith(f"{path}:{where}" if where else f"{path}: "), said[:400]
    assert message in said, said[:400]
    assert len(said) < 1000, said


# Each case: hosts.yaml text with a control character or a bidi control in one string
# (written as a YAML escape, or raw where YAML lets it stand), the line and key named,
# and what the error says.
CONTROLS = [
    pytest.param(
        HOST + '        log: "/l\\e]0;title\\a"\n',
        "6: hosts.a.services.s.log",
        "holds the control character U+001B, which could act on the terminal that shows it",
        id="osc-in-log-path",
    ),
    pytest.param(
        HOST + '        log: /l\n        launch: {command: [python3, "\\x9b2J"]}\n',
        "7: hosts.a.services.s.launch.command[1]",
        "holds the control character U+009B",
        id="c1-csi-in-command",
    ),
    pytest.param(
        HOST + '        log: /l\n        launch: {command: [x], env: {A: "1\\x7f"}}\n',
        "7: hosts.a.services.s.launch.env.A",
        "holds the control character U+007F",
        id="del-in-env-value",
    ),
    pytest.param(
        HOST + '        log: /l\n        launch: {command: ["x\\ry"]}\n',
        "7: hosts.a.services.s.launch.command[0]",
        "holds the control character U+000D",
        id="carriage-return-in-command",
    ),
    pytest.param(
        HOST + "        log: /l\n        ready: 'up \u202eydaer'\n",
        "7: hosts.a.services.s.ready",
        "holds the bidirectional control U+202E (RIGHT-TO-LEFT OVERRIDE), which can make "
        "text read as something it is not",
        id="bidi-override-in-ready",
    ),
    pytest.param(
        'hosts:\n  a:\n    local: true\n    services:\n      "s\u2066x": {log: /l}\n',
        "5: hosts.a.services",
        "the key 's\\u2066x' holds the bidirectional control U+2066",
        id="bidi-isolate-in-service-name",
    ),
    pytest.param(
        HOST + '        log: /l\n        launch: {command: [x], cwd: "/srv\u061c"}\n',
        "7: hosts.a.services.s.launch.cwd",
        "holds the bidirectional control U+061C (ARABIC LETTER MARK)",
        id="arabic-letter-mark-in-cwd",
    ),
    pytest.param(
        HOST + "        log: /l\n        port: 8000\n        match: '--port 8000\u200f'\n",
        "8: hosts.a.services.s.match",
        "holds the bidirectional control U+200F",
        id="rlm-in-match",
    ),
    pytest.param(
        HOST + '        log: "/l\\nx"\n',
        "6: hosts.a.services.s.log",
        "holds a line break; only launch.command items and launch.env values may span lines",
        id="newline-in-log",
    ),
    pytest.param(
        "hosts:\n  a:\n    ssh: |\n      root@x\n      evil\n",
        "3: hosts.a.ssh",
        "holds a line break",
        id="newline-in-ssh-target",
    ),
    pytest.param(
        'hosts:\n  "a\\n":\n    local: true\n',
        "2: hosts",
        "the key 'a\\n' holds a line break; a key is one line",
        id="newline-in-host-name",
    ),
    pytest.param(
        HOST + '        log: /l\n        launch: {command: [&k "A\\n"], env: {*k : 1}}\n',
        "7: hosts.a.services.s.launch.env",
        "the key 'A\\n' holds a line break",
        id="newline-in-env-name-through-an-alias",
    ),
    pytest.param(
        'hosts:\n  a: {local: true}\ngroups:\n  "g\\e[2J": [a]\n',
        "4: groups",
        "the key 'g\\x1b[2J' holds the control character U+001B",
        id="csi-in-group-name",
    ),
    pytest.param(
        HOST + '        log: /l\n        "lo\\eg": 1\n',
        "7: hosts.a.services.s",
        "the key 'lo\\x1bg' holds the control character U+001B",
        id="escape-in-an-unknown-key",
    ),
    pytest.param(
        HOST + "        log: /l\x1b[2J\n",
        "6: ",
        "holds the control character U+001B",
        id="raw-escape-in-the-file",
    ),
]


@pytest.mark.unit
@pytest.mark.parametrize(("text", "where", "message"), CONTROLS)
def test_control_and_bidi_characters_are_refused_with_file_line_and_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, where: str, message: str
) -> None:
    path = tmp_path / "hosts.yaml"
    path.write_text(text)
    said = _refused(path, capsys)
    assert said.startswith(f"{path}:{where}"), said
    assert message in said, said


@pytest.mark.unit
def test_command_items_and_env_values_may_span_lines_and_tabs_are_kept() -> None:
    config = parse_config(
        HOST + '        log: /l\n        ready: "up\\tand ready"\n        launch:\n'
        "          command:\n            - bash\n            - -c\n            - |\n"
        "              cd /srv\n              exec ./serve\n"
        '          env: {NOTE: "one\\ntwo"}\n'
    )
    service = config.hosts["a"].services["s"]
    assert service.ready == ("up\tand ready",)
    assert service.launch is not None
    assert service.launch.command == ("bash", "-c", "cd /srv\nexec ./serve\n")
    assert dict(service.launch.env) == {"NOTE": "one\ntwo"}


@pytest.mark.unit
@pytest.mark.parametrize(
    ("fields", "source"),
    [
        ("engine: tgi, port: 3000", "prometheus"),  # its log holds none of its figures
        ("engine: tgi", "log"),  # no port: no page to read
        ("engine: tgi, port: 3000, metrics: log", "log"),  # hosts.yaml says
        ("engine: vllm, port: 8000", "log"),
        ("engine: llamacpp, port: 8080, metrics: prometheus", "prometheus"),
    ],
)
def test_a_services_metrics_come_from_its_engines_source_unless_hosts_yaml_says(
    fields: str, source: str
) -> None:
    from tui.hostsfile import parse_config

    text = f"hosts:\n  h:\n    local: true\n    services:\n      s: {{log: /l, {fields}}}\n"
    assert parse_config(text).hosts["h"].services["s"].metrics.value == source
