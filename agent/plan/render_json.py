"""The JSON plan (format version 1, its shape in agent/plan/changes.py), produced change by change.

The document is the one `json.dumps(doc, indent=2)` writes, byte for byte, but its envelope is
written by hand around one piece per change: a plan of 100,000 changes is never held as one dict
or one string, and the first bytes go out as soon as the plan is made. Values are encoded as the
json module encodes them (its C string encoder; anything but str, int, bool, None, lists and
str-keyed dicts is left to `json.dumps` itself), so the two never differ.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Callable, Iterator
from typing import Annotated, Any, Literal

import typing_extensions
from pydantic import BaseModel

from agent.desired import hierarchy
from agent.desired.hierarchy import KubeObject
from agent.desired.rrsets import RRset
from agent.load.loaded import Loaded
from agent.plan.changes import (
    FORMAT_VERSION,
    Action,
    Change,
    KubeTarget,
    Plan,
    RRsetTarget,
    Shown,
    ZoneTarget,
)

_string = json.encoder.encode_basestring_ascii  # what json.dumps uses for a str (ensure_ascii)
_STEP = "  "  # indent=2


def value(obj: Any, indent: str = "") -> str:
    """`obj` as `json.dumps(obj, indent=2)` writes it, nested at `indent` (the indent of its
    line)."""
    encode = _ENCODERS.get(type(obj))
    if encode is None:
        # floats (nan, inf), subclasses, anything json refuses: as json does it
        return json.dumps(obj, indent=2).replace("\n", "\n" + indent)
    return encode(obj, indent)


def _array(obj: list[Any] | tuple[Any, ...], indent: str) -> str:
    if not obj:
        return "[]"
    inner = indent + _STEP
    items = [_string(v) if type(v) is str else value(v, inner) for v in obj]
    return "[\n" + inner + (",\n" + inner).join(items) + "\n" + indent + "]"


def _object(obj: dict[Any, Any], indent: str) -> str:
    inner = indent + _STEP
    # every key must be a str (a subclass too), as json's own check: `_string` refuses anything else
    try:
        items = [_string(k) + ": " + (_string(v) if type(v) is str else value(v, inner))
                 for k, v in obj.items()]
    # a key that is not a str (json writes 1, 2.5, None, True as strings), or a value json refuses
    except TypeError:
        return json.dumps(obj, indent=2).replace("\n", "\n" + indent)
    return "{\n" + inner + (",\n" + inner).join(items) + "\n" + indent + "}"


# how each exact type is written (a subclass is not: json.dumps writes it)
_ENCODERS: dict[type, Callable[[Any, str], str]] = {
    str: lambda obj, indent: _string(obj),
    dict: lambda obj, indent: _object(obj, indent) if obj else "{}",
    list: _array,
    tuple: _array,
    type(None): lambda obj, indent: "null",
    bool: lambda obj, indent: "true" if obj else "false",
    int: lambda obj, indent: int.__repr__(obj),
}


_AT = "      "  # the indent of a change's keys


def _target(target: KubeTarget | ZoneTarget | RRsetTarget) -> str:
    """`Change.as_dict()["target"]`, at the indent of a change's keys."""
    if isinstance(target, RRsetTarget):
        return (f'{{\n{_AT}  "zone": {_string(target.zone)},\n{_AT}  "name": '
                f'{_string(target.name)},\n{_AT}  "type": {_string(target.rtype)}\n{_AT}}}')
    if isinstance(target, ZoneTarget):
        return value({"zone": target.zone, "instance": target.instance, "role": target.role}, _AT)
    namespace = "null" if target.namespace is None else _string(target.namespace)
    return (f'{{\n{_AT}  "kind": {_string(target.kind)},\n{_AT}  "namespace": {namespace},\n'
            f'{_AT}  "name": {_string(target.name)}\n{_AT}}}')


def _rrset(rrset: RRset) -> str:
    """A change's `before` or `after` made from an RRset (the usual case, by far), written directly:
    `{"ttl": ..., "values": [...]}` (agent/plan/changes.py `_shown`)."""
    if not rrset.rdatas:
        values = "[]"
    else:
        inner = ",\n".join(f"{_AT}    {_string(v)}" for v in rrset.rdatas)
        values = f"[\n{inner}\n{_AT}  ]"
    return f'{{\n{_AT}  "ttl": {value(rrset.ttl)},\n{_AT}  "values": {values}\n{_AT}}}'


_HEADS = {(action, kind): f'{{\n{_AT}"action": {_string(action.value)},\n{_AT}"layer": '
          f'{_string(kind.layer)},\n{_AT}"target": ' for action in Action
          for kind in (KubeTarget, ZoneTarget, RRsetTarget)}
# no fields, no reason: most changes
_PLAIN_TAIL = f',\n{_AT}"fields": [],\n{_AT}"reason": null\n    }}'


def _cr(shown: Shown) -> str | None:
    """A CR written in Git (a desired object holding its loaded document: most Kubernetes changes)
    as `value` writes its body, by pydantic's own JSON writer, where the two write the same bytes: a
    model of strings, integers, booleans, lists, string-keyed mappings and models only (`_plain`),
    and a text of ASCII without DEL (json escapes the rest). None: not such a CR, written the
    general way."""
    if type(shown) is not KubeObject or type(shown.content) is not Loaded:
        return None
    model = shown.content.model
    if not _plain_model(type(model)) or "managedFields" in model.metadata:
        return None
    text = model.model_dump_json(indent=2, **hierarchy.CR_DUMP)
    return text.replace("\n", "\n" + _AT) if text.isascii() and "\x7f" not in text else None


_PLAIN: dict[type, bool] = {}


def _plain_model(model: type[BaseModel]) -> bool:
    """Whether all an instance of `model` holds (its status aside: a body leaves it out) is
    `_plain`."""
    plain = _PLAIN.get(model)
    if plain is None:
        _PLAIN[model] = False  # a model inside itself: not taken
        plain = _PLAIN[model] = all(_plain(f.annotation) for n, f in model.model_fields.items()
                                    if n != "status")
    return plain


def _plain(annotation: Any) -> bool:
    """Whether pydantic and json write every value of this type alike (not a float, nor Any: a
    metadata's managedFields are looked for in each object instead)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation in (str, int, bool, type(None)) or origin is Literal:
        return all(type(a) in (str, int, bool) for a in args)
    if origin in (Annotated, list, typing.Union, types.UnionType):
        return all(_plain(a) for a in args[:1 if origin is Annotated else None])
    if origin is dict:
        return args[0] is str and _plain(args[1])
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _plain_model(annotation)
    if typing_extensions.is_typeddict(annotation):
        return all(_plain(t) for k, t in typing.get_type_hints(annotation).items()
                   if k != "managedFields")
    return False


def change(c: Change) -> str:
    """One element of "changes", at its indent in the document (`Change.as_dict()`, as json.dumps
    writes it)."""
    old, new = c.old, c.new
    before = "null" if old is None else _rrset(old) if type(old) is RRset else value(c.before, _AT)
    after = ("null" if new is None else _rrset(new) if type(new) is RRset else _cr(new)
             or value(c.after, _AT))
    head = _HEADS.get((c.action, type(c.target)))
    if head is None:  # not one of the three targets as such: as the table would have written it
        head = (f'{{\n{_AT}"action": {_string(c.action.value)},\n{_AT}"layer": '
                f'{_string(c.target.layer)},\n{_AT}"target": ')
    if c.fields or c.reason:
        fields = value(list(c.fields), _AT) if c.fields else "[]"
        reason = _string(c.reason) if c.reason else "null"
        tail = f',\n{_AT}"fields": {fields},\n{_AT}"reason": {reason}\n    }}'
    else:
        tail = _PLAIN_TAIL
    return f'{head}{_target(c.target)},\n{_AT}"before": {before},\n{_AT}"after": {after}{tail}'


def _problem_dicts(plan: Plan) -> list[dict[str, Any]]:
    if plan.base is None:
        return [p.as_dict() for p in plan.problems]
    return ([{**p.as_dict(), "revision": "base"} for p in plan.base_problems]
            + [{**p.as_dict(), "revision": "head"} for p in plan.problems])


def pieces(plan: Plan) -> Iterator[str]:
    """The JSON plan: the envelope, then one piece per change, then the rest; a newline ends it."""
    yield (f'{{\n  "formatVersion": {value(FORMAT_VERSION)},\n  "revision": '
           f'{value(plan.revision, _STEP)},\n  "summary": {value(plan.summary, _STEP)},\n  '
           f'"changes": ')
    if not plan.changes:
        yield "[]"
    else:
        separator = "[\n    "
        for c in plan.changes:
            yield separator + change(c)
            separator = ",\n    "
        yield "\n  ]"
    rest: list[tuple[str, Any]] = [("conflicts", plan.conflicts),
                                   ("problems", _problem_dicts(plan))]
    if plan.base is not None:
        rest.append(("base", plan.base))
    optional = (("refusals", plan.refusals), ("unplanned", plan.unplanned),
                ("invalid", list(plan.invalid)))
    rest += [(key, v) for key, v in optional if v]
    for key, v in rest:
        yield f",\n  {_string(key)}: {value(v, _STEP)}"
    yield "\n}\n"
