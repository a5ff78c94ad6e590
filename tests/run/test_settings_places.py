"""Settings that name places are refused at start when they cannot work, naming the setting: `path` (the
directory of CRs inside the repository) that is absolute or climbs out with `..`, and `cache` / `state` that
exist but are not directories (a file, a FIFO) - not at the first run, minutes later."""

from __future__ import annotations

import os
import pathlib

import pytest

from agent import cli
from agent.errors import ConfigError
from agent.run import settings as config


@pytest.fixture
def no_agent_env(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    for name in config.Settings.model_fields:
        monkeypatch.delenv(f"BINDY_AGENT_{name.upper()}", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


@pytest.mark.parametrize("value, message", [
    ("../other-team", "'../other-team' climbs out with '..': give the directory's path inside the repository"),
    ("dns/../../etc", "climbs out with '..'"),
    ("/etc", "'/etc' is an absolute path: give the directory's path inside the repository"),
])
def test_a_path_outside_the_repository_is_refused_naming_the_setting(value: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        config.load_settings({"repo": "https://git.example/dns.git", "path": value}, environ={})
    text = str(caught.value)
    assert text.startswith("setting path: ") and message in text and "(given by the flag --path)" in text, text


@pytest.mark.parametrize("value, read", [("clusters/prod", "clusters/prod"), ("./clusters/prod/", "clusters/prod"),
                                         (".", ""), ("", "")])
def test_a_path_inside_is_read_as_written(value: str, read: str) -> None:
    settings = config.load_settings({"repo": "https://git.example/dns.git", "path": value}, environ={})
    assert settings.path == read


@pytest.mark.parametrize("setting", ["cache", "state"])
@pytest.mark.parametrize("kind", ["file", "fifo"])
@pytest.mark.usefixtures("no_agent_env")
def test_a_cache_or_state_that_is_not_a_directory_is_refused_at_start(
        tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], setting: str, kind: str) -> None:
    place = tmp_path / setting
    if kind == "file":
        place.write_text("not a directory\n")
    else:
        os.mkfifo(place)
    endpoints = tmp_path / "endpoints.yaml"
    endpoints.write_text("{}\n")
    assert cli.main(["run", "--repo", str(tmp_path), "--endpoints", str(endpoints), f"--{setting}", str(place)]) == 2
    err = capsys.readouterr().err
    assert f"--{setting} {place}: exists and is not a directory; give a directory (it is made when missing)" in err


def test_a_missing_cache_or_state_is_made_when_needed(tmp_path: pathlib.Path) -> None:
    settings = config.load_settings({"repo": "https://git.example/dns.git", "cache": str(tmp_path / "c"),
                                     "state": str(tmp_path / "s"), "endpoints": str(tmp_path / "e.yaml")},
                                    environ={})
    (tmp_path / "e.yaml").write_text("{}\n")
    config.check_runnable(settings)  # no refusal: they are made when first needed
