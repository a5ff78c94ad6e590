"""The resolver patterns of agent/load/scalars.py are linear: the integer pattern accepts exactly what the
old (quadratic) one did."""

from __future__ import annotations

import itertools
import re

from agent.load import scalars

# Issue 23 review: each resolver pattern of load/scalars.py, as it was (quadratic) and as it is (linear)
_OLD_INT = re.compile(r"""[-+]?(?:0[xX][0-9a-fA-F_]*[0-9a-fA-F][0-9a-fA-F_]*
                    |0[oO][0-7_]*[0-7][0-7_]*
                    |0[bB][01_]*[01][01_]*
                    |0[0-7_]*
                    |[1-9][0-9_]*)\Z""", re.X)


def test_the_linear_integer_pattern_accepts_exactly_what_the_old_one_did() -> None:
    edge = ["0x", "0x_", "0x__", "0x_1", "0x1_", "0x_1_", "0xg", "0x1g", "0X_F", "-0x_a_", "+0b_", "0b_1", "0b2",
            "0b1_0_", "0o", "0o_", "0o_7", "0o8", "0O7_", "0", "0_", "00", "0_7", "08", "-0", "+0", "1_", "1__0",
            "_1", "", "-", "+", "0x" + "_" * 50, "0b" + "_" * 50 + "1", "0o" + "7_" * 30]
    alphabets = ("012789afgxXoObB_+-", "01fgxbo_-")
    strings = edge + ["".join(p) for n in range(1, 5) for p in itertools.product(alphabets[0], repeat=n)]
    strings += ["".join(p) for p in itertools.product(alphabets[1], repeat=5)]
    differ = [s for s in strings if bool(_OLD_INT.match(s)) != bool(scalars._INT.match(s))]
    assert differ == []
    assert scalars._INT.match("0x_1_") and not scalars._INT.match("0x__") and not scalars._INT.match("0b2")
