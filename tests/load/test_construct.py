"""The one-pass constructor builds exactly what PyYAML's general constructor builds with the same schema
(Kubernetes', load/scalars.py), or steps aside."""

from __future__ import annotations

import yaml

from agent.load import parse, scalars, yamlloader

DOCUMENTS = [
    "a: 1\nb: [0x1f, 0o17, 1_000, -3, +4, 1:20]\nc: {d: 1.5, e: .inf, f: -.Inf, g: .nan, h: 6.02e+23}\n",
    "yes: no\non: off\nTrue: FALSE\nn: ~\nm: null\nq: ''\nr: 'yes'\ns: \"1\"\nt: 2001-12-14t21:59:43.10-05:00\n",
    "list:\n- - 1\n  - [a, {b: c}]\n- x: y\n- ~\n- 2026-11-24\n",
    "name: h1.zone0.example.\nttl: 300\nipv4Addresses: [192.0.2.1, 198.51.100.2]\n",
    "dup: 1\ndup: 2\nother: {k: 1, k: 3}\n1: int\n'1': str\n",
    "base: &b {x: 1}\nuse: *b\n",  # an alias: the general way
    "m: {<<: {x: 1}, y: 2}\n",  # a merge key: the general way
    "t: !!str 123\nu: !!binary aGVsbG8=\n",  # explicit tags: the general way
    "? [a, b]\n: complex key\n",  # a collection as a key: PyYAML's own error
    "",
    "just a scalar\n",
    "- 1\n- 2\n",
]


def _reference(text: str) -> object:
    try:
        return ("ok", yaml.load(text, Loader=scalars.Loader))
    except yaml.YAMLError as exc:
        return ("error", type(exc).__name__)


def _ours(text: str) -> tuple[object, list[tuple[int, str]]]:
    parser = yamlloader.Loader(text)
    parser.duplicates = []
    try:
        node = parser.get_single_node()
        if node is None:
            return ("ok", None), []
        data, nodes = parse._construct(parser, node, text)
        if nodes is None:
            data = parser.construct_document(node)
        return ("ok", data), parser.duplicates
    except yaml.YAMLError as exc:
        return ("error", type(exc).__name__), parser.duplicates
    finally:
        parser.dispose()


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and a != a:
        return b != b  # nan
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) and type(a[k]) is type(b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b and type(a) is type(b)


def test_plain_documents_build_the_same_data_as_pyyaml() -> None:
    for text in DOCUMENTS:
        ours, _ = _ours(text)
        assert _same(ours, _reference(text)), text


def test_duplicate_keys_are_reported_with_their_lines_and_the_last_value_wins() -> None:
    (_, data), duplicates = _ours("dup: 1\ndup: 2\nother: {k: 1, k: 3}\n")
    assert data == {"dup": 2, "other": {"k": 3}}
    assert duplicates == [(2, "dup"), (3, "k")]


def test_a_file_with_an_alias_bomb_is_still_bounded_and_plain_files_still_count_nodes() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefg", "bcdefgh", strict=False))
    manifest = parse.load_text(bomb, "bomb.yaml")
    assert any("alias bomb" in p.message for p in manifest.problems)
    from agent.load import readbudget
    from agent.model.limits import Limits
    budget = readbudget.ReadBudget(Limits(max_nodes=50))
    plain = parse.load_text("items: [" + ", ".join("x" for _ in range(60)) + "]\n", "big.yaml", budget=budget)
    assert any("more than 50 YAML nodes" in p.message for p in plain.problems)
