"""`babysit --help` and each verb's own help: every verb answers, and the top-level help
loads no verb's module (each verb pays only for its own imports)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tui.cli import RAW_VERBS, VERBS, main

pytestmark = pytest.mark.integration


def loaded_after(argv: list[str]) -> set[str]:
    """The ``tui`` modules a fresh interpreter has loaded after ``main(argv)``."""
    code = (
        "import sys\n"
        "from tui.cli import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('\\n'.join(m for m in sys.modules if m.startswith('tui')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return set(done.stdout.split())


def test_the_top_level_help_loads_no_verbs_module() -> None:
    loaded = loaded_after(["--help"])
    verbs = {module for _, module in VERBS.values()}
    assert not loaded & verbs, loaded & verbs
    assert not any(m.startswith(("tui.core.report", "tui.remote", "tui.app")) for m in loaded)


def test_a_verbs_help_loads_its_own_module_and_no_other() -> None:
    loaded = loaded_after(["status", "--help"])
    others = {module for verb, (_, module) in VERBS.items() if verb != "status"}
    assert VERBS["status"][1] in loaded
    assert not loaded & others, loaded & others


@pytest.mark.parametrize("verb", sorted(set(VERBS) - RAW_VERBS))
def test_every_verb_has_its_help(verb: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([verb, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: babysit {verb}"), out
    assert "-h, --help" in out


def test_the_top_level_help_lists_every_verb(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for verb in VERBS:
        assert f"    {verb} " in out or f"    {verb}\n" in out, verb
