"""Memo.each: a list's results are reused item by item, by identity, whatever moved in the list."""

from __future__ import annotations

from agent.desired.memo import Memo


class Item:
    def __init__(self, name: str) -> None:
        self.name = name


def _results(memo: Memo, items: list[Item], shared: tuple[object, ...] = ()) -> tuple[list[str], list[str]]:
    computed: list[str] = []

    def compute(item: Item) -> str:
        computed.append(item.name)
        return f"result of {item.name}"

    out = memo.each(("k",), items, compute, name=lambda i: i.name, shared=shared)
    memo.sweep()
    return out, computed


def test_only_changed_added_or_moved_in_items_are_computed_again() -> None:
    memo = Memo()
    a, b, c = Item("a"), Item("b"), Item("c")
    first, computed = _results(memo, [a, b, c])
    assert computed == ["a", "b", "c"]

    b2 = Item("b")  # b changed in place: the same name, another object
    again, computed = _results(memo, [a, b2, c])
    assert computed == ["b"]
    assert again[0] is first[0] and again[2] is first[2]  # the very results, not equal copies

    d = Item("d")  # an item inserted in front shifts every position: names find the rest
    shifted, computed = _results(memo, [d, a, b2, c])
    assert computed == ["d"]
    assert shifted[1:] == again and all(x is y for x, y in zip(shifted[1:], again, strict=True))

    removed, computed = _results(memo, [d, c])
    assert computed == [] and removed == ["result of d", "result of c"]


def test_a_renamed_or_swapped_item_is_not_taken_for_another() -> None:
    memo = Memo()
    a, b = Item("a"), Item("b")
    _results(memo, [a, b])
    swapped, computed = _results(memo, [b, a])  # the same objects at each other's place
    assert computed == [] and swapped == ["result of b", "result of a"]
    x = Item("x")  # another name at a's place: looked up by name, not found, computed
    renamed, computed = _results(memo, [b, x])
    assert computed == ["x"] and renamed == ["result of b", "result of x"]


def test_a_different_shared_input_computes_everything_again() -> None:
    memo = Memo()
    a, b = Item("a"), Item("b")
    token = object()
    _results(memo, [a, b], shared=(token,))
    _, computed = _results(memo, [a, b], shared=(token,))
    assert computed == []
    _, computed = _results(memo, [a, b], shared=(object(),))
    assert computed == ["a", "b"]
