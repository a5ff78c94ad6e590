"""Pydantic's schema errors in the words of a YAML author (pure): what a strict type expects and
what YAML made of the value written (`"80"` is a string: write the number without quotes), Bindy's
camelCase spelling of a field written as a Python attribute, the closest allowed key of a misspelled
one, and a fully qualified name's missing final dot.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Any

import pydantic
import typing_extensions


def _unwrap(annotation: Any) -> Any:
    """Strip Optional/list/dict/Annotated wrappers down to a model class, if there is one."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            annotation = args[0] if len(args) == 1 else None
        elif origin is list:
            annotation = typing.get_args(annotation)[0]
        elif origin is dict:
            annotation = typing.get_args(annotation)[1]
        else:
            return annotation


def _fields(shape: Any) -> dict[str, Any] | None:
    """A model's or a TypedDict's keys as written in YAML, each with its annotation; None
    otherwise."""
    if isinstance(shape, type) and issubclass(shape, pydantic.BaseModel):
        return {f.alias or n: f.annotation for n, f in shape.model_fields.items()}
    if typing_extensions.is_typeddict(shape):
        return typing_extensions.get_type_hints(shape)
    return None


def _shape_at(model: type[pydantic.BaseModel], loc: tuple[Any, ...]) -> Any:
    """The model or TypedDict at a location of a document (None: none is known there)."""
    current: Any = model
    for step in loc:
        fields = _fields(current)
        if isinstance(step, int) or fields is None:
            continue
        if step not in fields:
            return None
        current = _unwrap(fields[step])
    return current


def _allowed_keys(model: type[pydantic.BaseModel], loc: tuple[Any, ...]) -> list[str]:
    return list(_fields(_shape_at(model, loc)) or ())


def _bindy_spelling(model: type[pydantic.BaseModel], loc: tuple[Any, ...]) -> str | None:
    """Bindy's name of a field written as the agent's Python attribute (volume_mounts:
    volumeMounts)."""
    shape = _shape_at(model, loc[:-1])
    if isinstance(shape, type) and issubclass(shape, pydantic.BaseModel):
        field = shape.model_fields.get(str(loc[-1]))
        if field is not None and field.alias and field.alias != loc[-1]:
            return field.alias
    return None


# what a strict type error expects; the API server checks the CRD's types the same way
_EXPECTED = {"int_type": "an integer", "string_type": "a string", "bool_type": "true or false",
             "list_type": "a list", "dict_type": "a mapping", "model_type": "a mapping"}


def _integer(value: int) -> str:
    # no 4,300-digit str()
    return f"the integer {value}" if value.bit_length() <= 128 else "an integer"


def _string(value: str) -> str:
    return f"the string {value[:40]!r}" + ("..." if len(value) > 40 else "")


# what YAML made of a value, by its type: the first that the value is an instance of (a bool is an
# int too)
_YAML_TYPES: tuple[tuple[type, Callable[[Any], str]], ...] = (
    (bool, lambda value: f"the boolean {str(value).lower()}"),
    (int, _integer),
    (float, lambda value: f"the number {value!r} (not an integer)"),
    (str, _string),
    (type(None), lambda value: "null"),
    (dict, lambda value: "a mapping"),
    (list, lambda value: "a list"),
)


def _yaml_type(value: Any) -> str:
    """What YAML made of a value, in the words of a YAML author."""
    for kind, described in _YAML_TYPES:
        if isinstance(value, kind):
            return described(value)
    return f"a {type(value).__name__}"


def _type_message(kind: str, value: Any) -> str:
    expected = _EXPECTED[kind]
    message = f"must be {expected} (the API server checks types strictly), not {_yaml_type(value)}"
    if kind == "int_type" and isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return f"{message}: write the number without quotes"
    if (kind == "int_type" and isinstance(value, float) and value.is_integer()
        and abs(value) < 2**63):
        return f"{message}: write {int(value)}"
    if kind == "string_type" and isinstance(value, (bool, int, float)):
        return (f"{message}: quote it to keep it text (YAML reads unquoted numbers, true/false, "
                "yes/no, on/off and y/n as other types)")
    if kind == "bool_type" and isinstance(value, str) and value.lower() in ("true", "false"):
        return f"{message}: write {value.lower()} without quotes"
    return message


def _mailbox_message(value: str) -> str:
    """An SOA mailbox written as an e-mail address: the DNS spelling, its '@' a '.'."""
    import re  # only for this mistake

    local, _, domain = value.partition("@")
    domain = domain.rstrip(".") or "example.org"
    said = (f"{value!r} is an e-mail address; the SOA spells the mailbox as a DNS name, its '@' as "
            f"a '.'")
    if re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?", local):
        return f"{said} (write '{local}.{domain}.')"
    return (f"{said}, and Bindy's adminEmail takes only letters, digits and '-' before it "
            f"({local!r} has others): use a mailbox such as 'hostmaster.{domain}.'")


def message(err: Any, model: type[pydantic.BaseModel]) -> tuple[tuple[Any, ...], str]:
    """The location and the message of one of pydantic's errors on a document of `model`."""
    loc, kind, value = tuple(err["loc"]), err["type"], err.get("input")
    if kind == "extra_forbidden":
        return loc, _unknown_field_message(model, loc)
    if kind in _EXPECTED:
        return loc, _type_message(kind, value)
    if kind == "missing":
        return loc, "required field is missing"
    msg = err["msg"]
    msg = msg[0].lower() + msg[1:]
    if kind == "string_pattern_mismatch" and isinstance(value, str):
        return loc, _pattern_message(loc, value, err.get("ctx", {}).get("pattern", ""))
    if not isinstance(value, (dict, list)):
        msg += f" (got {value!r})"
    return loc, msg


def _unknown_field_message(model: type[pydantic.BaseModel], loc: tuple[Any, ...]) -> str:
    """An unknown field, with the field it may have meant: Bindy's spelling of it, or the closest
    allowed one."""
    bindy = _bindy_spelling(model, loc)
    if bindy is not None:
        return (f"unknown field (did you mean '{bindy}'?): Bindy's fields are spelled in "
                "camelCase, as in its CRDs")
    allowed = _allowed_keys(model, loc[:-1])
    import difflib  # only for an unknown field

    close = difflib.get_close_matches(str(loc[-1]), allowed, n=1, cutoff=0.6)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"unknown field{hint}"


def _pattern_message(loc: tuple[Any, ...], value: str, pattern: str) -> str:
    """A string that does not match its pattern: the usual mistakes said how to fix."""
    if loc and loc[-1] == "adminEmail" and "@" in value:
        return _mailbox_message(value)
    if pattern.endswith(r"\.$") and not value.endswith("."):
        return f"must be a fully qualified name ending with '.' (write '{value}.')"
    return f"{value!r} does not match the required pattern {pattern}"
