"""The README's example runs as printed (with this run's names, on a server that may have served
earlier runs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import ACCOUNT_YAML

README = Path(__file__).resolve().parent.parent / "README.md"


def test_the_readme_example_runs(base_url: str, token: str | None, run_id: str, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    example = blocks[0]
    name = f"Readme{run_id}"
    # A server that requires tokens gets this run's; the example shows none.
    address = f'"{base_url}", token={token!r}'
    example = (example.replace('"http://127.0.0.1:8080"', address).replace('"Account"', f'"{name}"')
               .replace('"Account/', f'"{name}/'))
    (tmp_path / "account.yaml").write_text(ACCOUNT_YAML.format(name=name), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    exec(compile(example, str(README), "exec"), {})
    assert "balance - amount >= 0" in capsys.readouterr().out, "the refusal's message was printed"
