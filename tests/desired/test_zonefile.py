"""`import --zone-file` stays within its limits whatever the file: every record a $GENERATE makes is counted
(over several lines, in parentheses, several ranges together), a step of 0 is a clear error, and the file is
read through the door of every file the operator names (never more than --max-transfer-bytes read, whatever
size the file claims)."""

from __future__ import annotations

import pathlib
import re

import pytest

from tests.support import clirun

HEAD = """$ORIGIN example.com.
$TTL 300
@ IN SOA ns1 hostmaster 1 3600 600 604800 300
@ IN NS ns1
ns1 IN A 192.0.2.1
"""


def _import(tmp_path: pathlib.Path, body: str, *flags: str) -> clirun.Result:
    path = tmp_path / "zone.db"
    path.write_text(HEAD + body)
    return clirun.main("import", "--zone-file", str(path), "--zone", "example.com", "-n", "dns-system", *flags)


@pytest.mark.parametrize("body", [
    "$GENERATE (\n 1-3000000 ) h$ A 192.0.2.1\n",
    "$GENERATE ( 1-3000000\n ) h$ A 192.0.2.1\n",
    "$generate\t1-3000000 h$ A 192.0.2.1 ; lower case, a tab\n",
    "".join(f"$GENERATE (1-600) g{i}-$ A 192.0.2.1\n" for i in range(3)),
])
def test_no_form_of_generate_makes_more_records_than_the_limit(tmp_path: pathlib.Path, body: str) -> None:
    result = _import(tmp_path, body, "--max-transfer-records", "1000")
    assert result.returncode == 1 and result.stdout == ""
    assert "more than" in result.stderr and "(--max-transfer-records)" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_generate_within_the_limit_in_parentheses_is_read(tmp_path: pathlib.Path) -> None:
    result = _import(tmp_path, "$GENERATE (\n 1-3 ) h$ A 192.0.2.$\n", "--max-transfer-records", "1000")
    assert result.returncode == 0, result.stderr
    assert all(f"name: h{i}\n" in result.stdout for i in (1, 2, 3))


@pytest.mark.parametrize("body", ["$GENERATE 1-10/0 h$ A 192.0.2.$\n", "$GENERATE (\n 1-10/00 ) h$ A 192.0.2.$\n"])
def test_a_generate_step_of_zero_is_a_clear_error(tmp_path: pathlib.Path, body: str) -> None:
    result = _import(tmp_path, body)
    assert result.returncode == 1
    assert re.fullmatch(f"bindy-agent import: error: {re.escape(str(tmp_path))}/zone.db:[67]: a \\$GENERATE range "
                        r"with a step of 0 \(start-stop/step\): give a step of 1 or more\n", result.stderr), result.stderr


def test_a_file_is_never_read_past_the_byte_limit_whatever_size_it_claims() -> None:
    """/proc/self/status claims 0 bytes and holds more: read as a stream, it is refused past the limit."""
    status = pathlib.Path("/proc/self/status")
    if not status.exists() or status.stat().st_size != 0:
        pytest.skip("no /proc file claiming 0 bytes here")
    result = clirun.main("import", "--zone-file", str(status), "--zone", "example.com", "--max-transfer-bytes", "200")
    assert result.returncode == 1
    assert result.stderr == ("bindy-agent import: error: --zone-file /proc/self/status: not read: more than that, "
                             "over the limit of 200 bytes for this file\n")
