"""How much of a revision may be read and parsed (pure).

The limits' running budget while files are read, the nesting depth, and the expansion of YAML
aliases.

Aliases: libyaml composes `*anchor` as the very node the anchor names, so a document is a graph
whose distinct nodes are bounded by its size while its expansion - what constructing, validating
or serialising it visits - can be exponential (the "billion laughs"). Counting the expansion over
the graph, with each node's expanded size remembered, takes one visit per distinct node.

Before composing: the libyaml binding composes recursively in C and crashes the process (SIGSEGV)
at some tens of thousands of levels, and a composed node costs about 300 bytes, so two bytes per
node (`[1,1,1,...]`) would turn 8 MiB into 1.2 GB. Cheap bounds over the text rule out deep nesting
(block nesting needs indentation or '- ' / '? ' indicators at the start of a line, flow nesting a
'[' or '{' per level) and too many nodes (each needs one of a few characters) for ordinary files;
only when they cannot, the parser's events are counted, stopping at the first limit passed.
"""

from __future__ import annotations

import re

import yaml

from agent.model.limits import MAX_DEPTH, MAX_DOCUMENT_NODES, Limits, MiB, flag
from agent.model.problems import Origin, Problem

# no line starting with this many of ' -?:' -> block nesting <= 2 * (_PREFIX - 1) + 2 levels
_PREFIX = 24
# a line starting with _PREFIX of them: the first line (`match`), or one after a newline (`search`
# for the newline first is five times faster than `^` in MULTILINE mode, which the engine tries at
# every character)
_LONG_PREFIX = re.compile(rf"[ \t?:-]{{{_PREFIX}}}")
_LONG_PREFIX_LINE = re.compile(rf"\n[ \t?:-]{{{_PREFIX}}}")
_DOC_MARKER = re.compile(r"^(?:---|\.\.\.)(?=\s|$)", re.M)
# an alias token (or, harmlessly, text that looks like one)
_ALIAS = re.compile(r"(?<=[\s,\[{])\*[^\s,\[\]{}]")
TOO_DEEP = (f"nested more than {MAX_DEPTH} levels deep; no Bindy or Kubernetes object is, so the "
            "file is not loaded - flatten it")
TOO_BIG = (f"a YAML document of more than {MAX_DOCUMENT_NODES:,} nodes (keys, values, lists, "
           "mappings); no Bindy object needs as many, so the file is not loaded - split it")
_FLOW = MAX_DEPTH - 2 * _PREFIX  # levels flow collections ('[', '{') may add to the block levels


def _size(n: int) -> str:
    return f"{n / MiB:.1f} MiB" if n >= MiB else f"{n:,} bytes"


class _Recursive(Exception):
    def __init__(self, line: int) -> None:
        self.line = line


class ReadBudget:
    """What is left of a revision's limits while its files are loaded, in order."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.bytes = limits.max_revision_bytes
        self.documents = limits.max_documents
        self.alias_nodes = limits.max_alias_nodes
        self.nodes = limits.max_nodes
        self.exhausted = False  # a revision-wide limit was hit: nothing more is read
        # how many times something was refused for what the revision had left (it depends on the
        # files read before it)
        self.limited = 0

    def counters(self) -> tuple[int, int, int, int]:
        return (self.bytes, self.documents, self.nodes, self.alias_nodes)

    def spent_since(self, before: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
        b, d, n, a = before
        return (b - self.bytes, d - self.documents, n - self.nodes, a - self.alias_nodes)

    def afford(self, spent: tuple[int, int, int, int]) -> bool:
        """Whether a file that took `spent` before fits what is left (then nothing is reported)."""
        size, documents, nodes, alias_nodes = spent  # once per cached file: no generator
        return (self.bytes >= size and self.documents >= documents and self.nodes >= nodes
                and self.alias_nodes >= alias_nodes)

    def charge(self, spent: tuple[int, int, int, int]) -> None:
        size, documents, nodes, alias_nodes = spent
        self.bytes -= size
        self.documents -= documents
        self.nodes -= nodes
        self.alias_nodes -= alias_nodes

    def admit(self, file: str, size: int) -> Problem | None:
        """Whether a file of `size` bytes may be read; spends nothing."""
        limits = self.limits
        if size > limits.max_file_bytes:
            return Problem(Origin(file, 1), "", "",
                           f"not read: the file is {_size(size)}, over the "
                           f"{_size(limits.max_file_bytes)} allowed for one file; split it into "
                           f"smaller files (or raise the limit: {flag('max_file_bytes')})")
        if size > self.bytes:
            self.exhausted = True
            self.limited += 1
            return Problem(Origin(file, 1), "", "",
                           f"not read: the revision's YAML files add up to more than "
                           f"{_size(limits.max_revision_bytes)}; this file and the files after it "
                           f"were not read (raise the limit: {flag('max_revision_bytes')})")
        return None

    def precheck(self, text: str, file: str) -> Problem | None:
        """Before composing a file: no document too deep or too big, the revision's nodes within
        the limit. A problem means the file is not loaded."""
        if self._safe(text):
            return None
        loader = yaml.CSafeLoader(text)
        depth = nodes = total = 0
        try:
            while loader.check_event():
                event = loader.get_event()
                if isinstance(event, yaml.DocumentStartEvent):
                    nodes = 0
                elif isinstance(event, yaml.ScalarEvent | yaml.SequenceStartEvent
                                | yaml.MappingStartEvent):
                    depth += not isinstance(event, yaml.ScalarEvent)
                    nodes, total = nodes + 1, total + 1
                    if problem := self._passed(file, event, depth, nodes, total):
                        return problem
                elif isinstance(event, yaml.SequenceEndEvent | yaml.MappingEndEvent):
                    depth -= 1
        except yaml.MarkedYAMLError as exc:
            # libyaml 0.2.5+ (PyYAML 6.0.3+) stops at 1,000 levels itself, and may do so before the
            # first event when it scans ahead in flow context: that is the same refusal as ours
            if exc.problem and "nesting depth" in exc.problem:
                return Problem(Origin(file, exc.problem_mark.line + 1 if exc.problem_mark else 1),
                               "", "", TOO_DEEP)
            return None  # within the limits up to the error; the parse reports the error itself
        except yaml.YAMLError:
            return None
        finally:
            loader.dispose()
        return None

    def _safe(self, text: str) -> bool:
        if (_LONG_PREFIX.match(text) or _LONG_PREFIX_LINE.search(text)
            or (whole := _node_bound(text)) > self.nodes):
            return False
        if whole <= MAX_DOCUMENT_NODES and _flows(text) <= _FLOW:
            return True
        return all(_node_bound(text, a, b) <= MAX_DOCUMENT_NODES and _flows(text, a, b) <= _FLOW
                   for a, b in _spans(text))

    def _passed(self, file: str, event: yaml.Event, depth: int, nodes: int,
                total: int) -> Problem | None:
        line = event.start_mark.line + 1 if event.start_mark else 1
        if depth > MAX_DEPTH:
            return Problem(Origin(file, line), "", "", TOO_DEEP)
        if nodes > MAX_DOCUMENT_NODES:
            return Problem(Origin(file, line), "", "", TOO_BIG)
        return self._too_many_nodes(file, line) if total > self.nodes else None

    def _too_many_nodes(self, file: str, line: int) -> Problem:
        self.exhausted = True
        self.limited += 1
        return Problem(Origin(file, line), "", "",
                       f"more than {self.limits.max_nodes:,} YAML nodes (keys, values, "
                       f"lists, mappings) in the revision; the rest was not read (raise the limit: "
                       f"{flag('max_nodes')})")

    @staticmethod
    def plain(node: yaml.Node, text: str) -> bool:
        """Whether a composed document is a plain tree: no alias can make it a graph."""
        start, end = node.start_mark.index, node.end_mark.index
        return text.find("*", start, end) < 0 or not _ALIAS.search(text, start, end)

    def spend(self, node: yaml.Node, text: str, file: str,
              nodes: int | None = None) -> Problem | None:
        """Counts one composed document (`nodes`: its count, when the caller has it already, for
        a plain tree); a problem when it may not be used."""
        line = node.start_mark.line + 1
        if self.documents == 0:
            self.exhausted = True
            self.limited += 1
            return Problem(Origin(file, line), "", "",
                           f"more than {self.limits.max_documents:,} YAML documents "
                           f"in the revision; the rest was not read (raise the limit: "
                           f"{flag('max_documents')})")
        self.documents -= 1
        if nodes is None and not self.plain(node, text):
            return self._aliases(node, file)
        self.nodes -= _count(node) if nodes is None else nodes
        return self._too_many_nodes(file, line) if self.nodes < 0 else None

    def _aliases(self, node: yaml.Node, file: str) -> Problem | None:
        try:
            added, depth, culprit, distinct = expansion(node, self.alias_nodes)
        except _Recursive as exc:
            return Problem(Origin(file, exc.line), "", "",
                           "a YAML alias inside the anchor it refers to makes "
                           "a structure contain itself; no Bindy or Kubernetes object can - write "
                           "the value out")
        if depth > MAX_DEPTH:
            return Problem(Origin(file, node.start_mark.line + 1), "", "",
                           "expanding its YAML aliases nests this "
                           f"document more than {MAX_DEPTH} levels deep; write the values out "
                           f"instead")
        if added > self.alias_nodes:
            self.limited += 1
            limit = self.limits.max_alias_nodes
            left = "" if self.alias_nodes == limit else f" ({self.alias_nodes:,} of them left)"
            return Problem(Origin(file, culprit), "", "",
                           f"YAML aliases of the anchor at this line expand the "
                           f"document by {added:,} nodes; a revision may add {limit:,}{left} (an "
                           f"alias bomb?). Write the values out instead of repeating aliases (or "
                           f"raise the limit: {flag('max_alias_nodes')})")
        self.alias_nodes -= added
        self.nodes -= distinct
        return self._too_many_nodes(file, node.start_mark.line + 1) if self.nodes < 0 else None


def expansion(root: yaml.Node, allowed: int) -> tuple[int, int, int, int]:
    """(nodes the aliases add when expanded, expanded depth, line of the anchor whose repetition
    first went over `allowed` else 0, distinct nodes). One visit per distinct node; raises
    _Recursive on a cycle."""
    sizes: dict[int, tuple[int, int]] = {}
    active: set[int] = set()
    added, culprit = 0, 0

    def visit(node: yaml.Node) -> tuple[int, int]:
        nonlocal added, culprit
        key = id(node)
        if key in active:
            raise _Recursive(node.start_mark.line + 1)
        if key in sizes:  # an alias: the whole subtree again
            added += sizes[key][0]
            if added > allowed and not culprit:
                culprit = node.start_mark.line + 1
            return sizes[key]
        active.add(key)
        size, depth = 1, 0
        children = ([n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode)
                    else node.value if isinstance(node, yaml.SequenceNode) else [])
        for child in children:
            child_size, child_depth = visit(child)
            size, depth = size + child_size, max(depth, child_depth)
        active.discard(key)
        sizes[key] = (size, depth + 1)
        return sizes[key]

    _, depth = visit(root)
    return added, depth, culprit, len(sizes)


def _node_bound(text: str, start: int = 0, end: int | None = None) -> int:
    """At most this many nodes in text[start:end]: a collection needs one of ':?-[{', a scalar
    sits by one of ':?-,[{' (a mapping entry's two by one ':')."""
    end = len(text) if end is None else end
    return 3 * sum(text.count(c, start, end) for c in ":?-,[{") + 2


def _spans(text: str) -> list[tuple[int, int]]:
    """Where the documents of `text` are (split at '---' / '...' lines)."""
    cuts = [m.start() for m in _DOC_MARKER.finditer(text)]
    return list(zip([0, *cuts], [*cuts, len(text)], strict=True))


def _flows(text: str, start: int = 0, end: int | None = None) -> int:
    end = len(text) if end is None else end
    return text.count("[", start, end) + text.count("{", start, end)


def _count(root: yaml.Node) -> int:
    """Distinct nodes of a document without aliases."""
    count, todo = 0, [root]
    while todo:
        node = todo.pop()
        count += 1
        if isinstance(node, yaml.MappingNode):
            todo += [n for pair in node.value for n in pair]
        elif isinstance(node, yaml.SequenceNode):
            todo += node.value
    return count
