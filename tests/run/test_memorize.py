"""A long-running agent's memory has one writer (agent/run/memorize.py, on the sync worker): no other
module of the agent assigns a field of it, changes one in place or `setattr`s it; the pod watch's
thread posts what it sees through the trigger queue, which the worker hands over before a run."""

from __future__ import annotations

import ast
import dataclasses
import threading

from agent.model.key import ObjectKey
from agent.run import memorize, throttle
from agent.run.memory import Memory
from tests.conftest import ROOT

FIELDS = {f.name for f in dataclasses.fields(Memory)}
MUTATORS = {"clear", "update", "add", "pop", "remember", "forget", "discard", "append", "setdefault", "remove", "done"}
READERS = {"phase", "kube_fresh", "dns_fresh", "serials_fresh", "reports"}  # Memory's methods that only read


def _memory_field(node: ast.AST) -> str | None:
    """`memory.<field>` or `self.memory.<field>` (the outermost field of an attribute chain)."""
    while isinstance(node, ast.Attribute):
        owner = node.value
        named = isinstance(owner, ast.Name) and owner.id == "memory"
        if (named or isinstance(owner, ast.Attribute) and owner.attr == "memory") and node.attr in FIELDS:
            return node.attr
        node = owner
    return None


def _writes(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = [e for t in node.targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
            targets = [node.func.value]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                ast.unparse(node.func.value) == "self.memory" and node.func.attr not in READERS
                or node.func.attr in ("take_over", "forget_world") and "memory" in ast.unparse(node.func.value)):
            found.append(f"{node.lineno}: {ast.unparse(node)}")  # a method of the memory that is not a read
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
            first = node.args[0] if node.args else None
            if first is not None and "memory" in ast.unparse(first):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        found += [f"{node.lineno}: {ast.unparse(node)}" for t in targets if _memory_field(t) is not None]
    return found


def test_only_memorize_writes_the_memory() -> None:
    writers = {}
    for path in sorted((ROOT / "agent").rglob("*.py")):
        if path.relative_to(ROOT).as_posix() in ("agent/run/memorize.py", "agent/run/memory.py"):
            continue
        found = _writes(ast.parse(path.read_text()))
        if found:
            writers[path.relative_to(ROOT).as_posix()] = found
    assert writers == {}
    assert len(_writes(ast.parse("memory.kube_at = 0.0\nself.memory.dns.sources.clear()\nsetattr(self.memory, 'x', 1)\n"
                                 "self.memory.take_over(1.0)\nmemory.pods_moved.done(x)\nmemory.phase()"))) == 5


def test_what_the_pod_watch_sees_reaches_the_memory_through_the_worker() -> None:
    queue, memory = throttle.Triggers(0), Memory()
    primary, secondary = ObjectKey("Bind9Instance", "dns", "primary"), ObjectKey("Bind9Instance", "dns", "secondary")
    watcher = threading.Thread(target=lambda: (queue.pods_waiting(True), queue.pods_moved({primary}),
                                               queue.pods_moved({secondary}), queue.request("pods")))
    watcher.start()
    watcher.join()
    assert not memory.pods_waiting and not memory.pods_moved  # nothing written from the watch's thread
    assert queue.take(timeout=1) == "pods"
    memorize.pods_seen(memory, *queue.pods_seen())  # the worker, before the run (agent/run/agent.py)
    assert memory.pods_waiting and memory.pods_moved == {primary, secondary}
    memorize.pods_seen(memory, *queue.pods_seen())  # not looked at since: as last seen
    assert memory.pods_waiting and memory.pods_moved == {primary, secondary}
    memorize.statuses_computed(memory, {}, None, written=False, moved=frozenset({primary}))
    assert memory.pods_moved == {secondary}
    memorize.statuses_computed(memory, {}, None, written=True)
    queue.pods_waiting(False)
    memorize.pods_seen(memory, *queue.pods_seen())
    assert not memory.pods_waiting and memory.pods_moved == {secondary}
