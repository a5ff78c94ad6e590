"""A revision's files -> one validated Manifest (`load_files`), every problem with file:line and
field path: each file read within the read budget (agent/model/limits.py: bytes per file and per
revision, checked against the listed size before a byte is read; documents; nesting; alias
expansion), parsed by load/parse.py, joined by load/combine.py. With a FileCache, an unchanged file
is not read again, and a revision that is the last one's files but a few reads only those
(`_reuse`); the answer is always the one reading every file in order gives.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence

from agent.errors import FileRefused, SourceError
from agent.load import combine, parse, readbudget
from agent.load.filecache import NO_FILES, FileCache, Parsed, Positions, add_spent
from agent.load.manifest import Manifest
from agent.load.sourcefile import SourceFile
from agent.model import names
from agent.model.limits import Limits
from agent.model.problems import Origin, Problem, Severity

_Loaded = tuple[list[Manifest], Positions, dict[tuple[str, str], Parsed]]


def load_files(files: Sequence[SourceFile], *, default_namespace: str = names.DEFAULT_NAMESPACE,
               limits: Limits | None = None, cache: FileCache = NO_FILES,
               progress: Callable[[int, int], None] | None = None) -> Manifest:
    """Loads every file of a revision within `limits`; paths in problems are the files' relative
    paths. With a long-running agent's `cache`, files whose content id did not change since the
    last call are reused.
    `progress` hears (files loaded, files), at most a hundred times."""
    limits = limits or Limits()
    cache.use((default_namespace, limits))
    loaded = _reuse(files, cache, limits, default_namespace)
    if loaded is None:
        loaded = _load_in_order(files, cache, limits, default_namespace, progress)
    elif progress is not None:
        progress(len(files), len(files))
    parts, positions, fresh = loaded
    cache.keep(fresh, positions)
    return combine.combine(parts, cache)


def _read(file: SourceFile, budget: readbudget.ReadBudget, problems: list[Problem]) -> str | None:
    """The file's text, or None after reporting why it was not read."""
    try:
        problem = budget.admit(file.path, file.size)  # before a byte is read
        if problem is None:
            data = file.read()
            problem = budget.admit(file.path, len(data))  # in case a source listed too small a size
            if problem is None:
                budget.bytes -= len(data)
                return data.decode("utf-8")
    except FileRefused as exc:
        severity = Severity.WARNING if exc.warning else Severity.ERROR
        problem = Problem(Origin(file.path, exc.line), "", "", str(exc), severity)
    except (UnicodeDecodeError, OSError, SourceError) as exc:
        problem = Problem(Origin(file.path, 1), "", "", f"cannot read file: {exc}")
    problems.append(problem)
    return None


def _content_id(file: SourceFile) -> str:
    return str(getattr(file, "blob", "") or "")


def _one(file: SourceFile, budget: readbudget.ReadBudget, cache: FileCache, default_namespace: str,
         fresh: dict[tuple[str, str], Parsed]) -> tuple[Manifest, tuple[str, str] | None]:
    """One file's part, from the cache or read and parsed, and its cache key (None: not cached)."""
    key = (file.path, _content_id(file))
    part = cache.take(key, budget) if key[1] else None
    if part is not None:
        fresh[key] = cache.entries[key]
        if part.text is not None:
            # this revision's file: the same content, read from this checkout
            part.text.rebind(file)
        return part, key
    before, limited = budget.counters(), budget.limited
    unread: list[Problem] = []
    text = _read(file, budget, unread)
    if text is None:
        return Manifest(objects=[], problems=unread, files=1), None
    part = parse.load_text(text, file.path, default_namespace=default_namespace, budget=budget,
                           source=file)
    # cut by what was left: may read whole next time
    if not cache.keeps or not key[1] or budget.limited != limited:
        return part, None
    cache.count(misses=1)
    fresh[key] = Parsed(part, budget.spent_since(before))
    return part, key


def _load_in_order(files: Sequence[SourceFile], cache: FileCache, limits: Limits,
                   default_namespace: str, progress: Callable[[int, int], None] | None) -> _Loaded:
    budget = readbudget.ReadBudget(limits)
    parts: list[Manifest] = []
    keys: list[tuple[str, str] | None] = []
    fresh: dict[tuple[str, str], Parsed] = {}
    step = max(1, len(files) // 100)
    for i, file in enumerate(files, 1):
        if budget.exhausted:
            break
        part, key = _one(file, budget, cache, default_namespace, fresh)
        parts.append(part)
        keys.append(key)
        if progress is not None and (i % step == 0 or i == len(files)):
            progress(i, len(files))
    if len(parts) < len(files):  # a limit stopped it: the next revision is read in order again
        return parts, Positions(), fresh
    return parts, Positions(list(files), keys,
                            add_spent(fresh[k].spent for k in keys if k is not None)), fresh


def _reuse(files: Sequence[SourceFile], cache: FileCache, limits: Limits,
           default_namespace: str) -> _Loaded | None:
    """The revision's parts when it is the last one's files but a few (a long-running agent's source
    hands out the same file objects while they are unchanged): the few are read or taken from the
    cache, the rest are the last parts as they are, and what they took is charged at once. None
    when that cannot give what reading in order gives: another number of files, most of them
    changed, or a limit reached (then the order decides what is read)."""
    last = cache.last
    if not last.files or len(last.files) != len(files) or len(cache.parts) != len(files):
        return None
    keys = list(last.keys)
    changed = [i for i, same in enumerate(map(operator.is_, last.files, files)) if not same
               or keys[i] is None]
    if len(changed) > len(files) // 4:
        return None
    old = [cache.entries[k] for i in changed if (k := keys[i]) is not None]
    kept = add_spent((o.spent for o in old), -1, last.spent)
    budget = readbudget.ReadBudget(limits)
    if not budget.afford(kept):
        return None
    budget.charge(kept)
    fresh = dict(cache.entries)
    for i in changed:
        if (k := keys[i]) is not None:
            fresh.pop(k, None)
    parts = list(cache.parts)
    hits = cache.hits
    for i in changed:
        parts[i], keys[i] = _one(files[i], budget, cache, default_namespace, fresh)
        # what was left decided: only the order gives the answer
        if budget.exhausted or budget.limited:
            cache.count(hits=hits - cache.hits)  # taken back: the revision is read in order
            return None
    cache.count(hits=len(files) - len(changed))
    spent = add_spent((fresh[k].spent for i in changed if (k := keys[i]) is not None), 1, kept)
    return parts, Positions(list(files), keys, spent), fresh
