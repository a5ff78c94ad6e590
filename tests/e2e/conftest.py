"""Fixtures of the end-to-end tests: one real single-node Kubernetes per pytest run
(tests/support/node.py; `scripts/node up` starts the same node by hand), with the images built
by images/build. A node already running (`scripts/node up`) is reused and left running; a node this
session started is stopped at its end. A component that cannot start fails the tests with a message
naming it and the fix - never a silent skip."""

from __future__ import annotations

import pathlib
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.node import Node
from tests.support.procs import ComponentError

_NODES: list[Node] = []


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = pathlib.Path(__file__).parent
    for item in items:
        if here in pathlib.Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)
            # the first test also waits for the node (session fixture) and its first pods
            item.add_marker(pytest.mark.timeout(900))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for node in _NODES:
            for name, text in node.logs(40).items():
                report.sections.append((f"log of {name}", text))


@pytest.fixture(scope="session")
def node() -> Iterator[Node]:
    with Node.lock():
        yield from _node()


def _node() -> Iterator[Node]:
    node = Node()
    started_at = time.monotonic()
    failure = None
    try:
        started = node.up()
    except ComponentError as exc:
        failure = str(exc)
    if failure is not None:
        pytest.fail(f"the e2e node could not start: {failure}\n(the components' logs: {node.log_dir})", pytrace=False)
    if started:
        print(f"\n[e2e] node up in {time.monotonic() - started_at:.1f} s")
    _NODES.append(node)
    yield node
    _NODES.remove(node)
    if started:
        node.down()


@pytest.fixture(scope="session")
def api(node: Node) -> Any:
    from kubernetes import config

    return config.new_client_from_config(str(node.kubeconfig))
