"""A revision's Manifest from its files' parts, in file order (pure): each object key once, the
first definition winning and every later one a "duplicate object" problem at its own file:line. With
a long-running agent's FileCache whose last revision defined no key twice, only the keys of the
files that changed are checked (`FileCache.changed_keys`) and the files' lists are read as one.
"""

from __future__ import annotations

import itertools

from agent.load.filecache import FileCache
from agent.load.loaded import Loaded
from agent.load.manifest import Manifest
from agent.model.key import ObjectKey
from agent.model.problems import Origin, Problem


def combine(parts: list[Manifest], cache: FileCache) -> Manifest:
    """One manifest of the files' parts, in file order; each object key once (the first
    definition wins, the others are problems)."""
    seen = cache.changed_keys(parts)
    clean = True
    if seen is None:
        total = Manifest(objects=[], problems=[], files=len(parts))
        seen = {}
        for part in parts:
            clean &= not _merge(total, part, seen)
        total.objects = list(itertools.chain.from_iterable(total.by_file))
    else:  # nothing defined twice: the files' lists as they are; a kind's index when asked
        # a kind no changed file has: the very list joined last time
        total = Manifest.joined(parts, cache.asked())
    # filled as the revision is asked for kinds
    cache.remember(parts, seen if clean else None, total.asked())
    return total


def _merge(total: Manifest, part: Manifest, seen: dict[ObjectKey, Origin]) -> bool:
    """Adds one file's part; True when it defines a key again."""
    total.documents += part.documents
    total.problems += part.problems
    # usually the file's own list, shared: the same object run after run for a cache
    kept = part.objects
    keys = part.keys()
    # or defined twice within
    twice = seen.keys() & keys.keys() if len(keys) == len(kept) else set(keys)
    if twice:
        kept_now: list[Loaded] = []
        for obj in part.objects:
            first = seen.setdefault(obj.key, obj.origin)
            if first is obj.origin:
                kept_now.append(obj)
            else:
                total.problems.append(Problem(obj.origin, str(obj.key), "",
                                              f"duplicate object: already defined at {first}"))
        total.add_file(kept_now)
    else:
        seen.update(keys)
        total.add_file(kept, part.kinds())
    return bool(twice)
