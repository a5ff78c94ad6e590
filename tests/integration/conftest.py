"""Fixtures for the real components. Each starts on free loopback ports, is torn down after, and
puts its component's log into the report of a failing test. A component that cannot start fails
the test with a message naming it and the command that fixes it - never a silent skip."""

from __future__ import annotations

import os
import pathlib
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import bind as bind_support
from tests.support import dnsworld, gitremote
from tests.support import kube as kube_support
from tests.support import zone_api as zone_api_support

_LOG_SOURCES: list[Any] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for source in _LOG_SOURCES:
            for name, text in source.logs().items():
                report.sections.append((f"log of {name}", text))


@pytest.fixture(scope="session", autouse=True)
def _kubectl_from_the_venv() -> Iterator[None]:
    """`kubectl` in every test is the pinned one of the test extras, not whatever the machine has."""
    before = os.environ["PATH"]
    os.environ["PATH"] = f"{kube_support.KUBECTL.parent}{os.pathsep}{before}"
    yield
    os.environ["PATH"] = before


def _control_plane(root: pathlib.Path) -> Iterator[kube_support.KubeCluster]:
    """A started control plane whose logs a failing test shows; stopped afterwards."""
    cluster = kube_support.KubeCluster(root)
    _LOG_SOURCES.append(cluster)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        _LOG_SOURCES.remove(cluster)


@pytest.fixture(scope="session")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kube_support.KubeCluster]:
    yield from _control_plane(tmp_path_factory.mktemp("kube"))


@pytest.fixture
def kube_client(kube: kube_support.KubeCluster) -> Iterator[Any]:
    client = kube.api_client()
    yield client
    client.close()


@pytest.fixture
def namespace(kube_client: Any) -> Iterator[str]:
    """A fresh namespace per test keeps tests independent."""
    from kubernetes import client

    name = f"t-{uuid.uuid4().hex[:8]}"
    core = client.CoreV1Api(kube_client)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    core.delete_namespace(name)


@pytest.fixture(scope="session")
def bind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[bind_support.BindPair]:
    """A primary (127.0.0.10) and a secondary (127.0.0.11) named, sharing a TSIG key."""
    pair = bind_support.start_pair(tmp_path_factory.mktemp("bind"))
    _LOG_SOURCES.append(pair)
    try:
        yield pair
    finally:
        pair.stop()
        _LOG_SOURCES.remove(pair)


@pytest.fixture(scope="session")
def zone_api(bind: bind_support.BindPair) -> Iterator[dict[str, zone_api_support.ZoneApi]]:
    """The sidecar's zone HTTP API for each named: {"primary": ..., "secondary": ...}."""
    token = uuid.uuid4().hex
    apis = {"primary": zone_api_support.ZoneApi(bind.primary, token).start(),
            "secondary": zone_api_support.ZoneApi(bind.secondary, token).start()}
    _LOG_SOURCES.extend(apis.values())
    try:
        yield apis
    finally:
        for api in apis.values():
            api.stop()
            _LOG_SOURCES.remove(api)


@pytest.fixture
def own_dns(tmp_path: pathlib.Path) -> Iterator[dnsworld.Dns]:
    """A named pair and zone APIs of this test's own, for tests that kill, stop or restart them."""
    pair = bind_support.start_pair(tmp_path / "bind")
    token = uuid.uuid4().hex
    apis = {"primary": zone_api_support.ZoneApi(pair.primary, token).start(),
            "secondary": zone_api_support.ZoneApi(pair.secondary, token).start()}
    world = dnsworld.Dns(pair, apis, dnsworld.endpoint_map(tmp_path / "endpoints", pair, apis))
    _LOG_SOURCES.extend([pair, *apis.values()])
    try:
        yield world
    finally:
        for server in world.servers:  # a test that failed while named was stopped
            if server.proc is not None and server.proc.proc.poll() is None:
                server.resume()
        for api in apis.values():
            api.stop()
        pair.stop()
        for source in (pair, *apis.values()):
            _LOG_SOURCES.remove(source)


@pytest.fixture
def own_kube(tmp_path: pathlib.Path) -> Iterator[kube_support.KubeCluster]:
    """A control plane of this test's own, for tests that kill or restart the API server."""
    yield from _control_plane(tmp_path / "kube")


@pytest.fixture
def git_remote(tmp_path: pathlib.Path) -> gitremote.GitRemote:
    return gitremote.GitRemote(tmp_path)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = pathlib.Path(__file__).parent
    for item in items:
        if here in pathlib.Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)
