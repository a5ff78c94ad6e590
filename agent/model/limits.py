"""How much of a revision the agent reads: bytes per file and per revision, documents, YAML aliases.

A repository is untrusted input: these bound the memory and time one commit can cost before it is
refused with a problem naming the file. The defaults are sized for 100,000 record documents, which
weigh 19.9 MB in the benchmark's shape (199 bytes each, bench/parse_bench.py), with room to spare;
each is a setting (`bindy-agent run`) and a flag of validate, plan and sync.
"""

from __future__ import annotations

import dataclasses

MiB = 1024 * 1024
MAX_DEPTH = 100  # nesting levels of one YAML document; a Deployment's deepest field is about 15
# YAML nodes of one document; the largest RRset that fits an UPDATE has ~2,000
MAX_DOCUMENT_NODES = 100_000
MAX_PATH_BYTES = 4096  # a file's path inside the revision (Linux PATH_MAX)


@dataclasses.dataclass(frozen=True)
class Limits:
    max_file_bytes: int = dataclasses.field(default=32 * MiB, metadata={"help": (
        "largest YAML file read, in bytes (default 32 MiB: all 100,000 records of a big repository "
        "in one file weigh about 20 MB)")})
    max_revision_bytes: int = dataclasses.field(default=64 * MiB, metadata={"help": (
        "largest total of the YAML files of one revision, in bytes (default 64 MiB: 100,000 "
        "records weigh about 20 MB; room for comments and long TXT values)")})
    max_documents: int = dataclasses.field(default=250_000, metadata={"help": (
        "most YAML documents in one revision (default 250,000: 100,000 records plus zones and "
        "clusters, 2.5x over)")})
    max_nodes: int = dataclasses.field(default=5_000_000, metadata={"help": (
        "most YAML nodes (keys, values, lists, mappings) in one revision, which bound its memory "
        "(default 5,000,000: 100,000 records have 2.3 million)")})
    max_alias_nodes: int = dataclasses.field(default=100_000, metadata={"help": (
        "most YAML nodes that aliases (*anchor, <<: *anchor) may add to one revision when "
        "expanded (default 100,000; a 619-byte alias bomb adds 6 million)")})

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            if getattr(self, field.name) < 1:
                raise ValueError(f"{field.name} must be at least 1")


def help_of(name: str) -> str:
    """The description of one limit (shared by the settings and the CLI flags)."""
    return str(next(f.metadata["help"] for f in dataclasses.fields(Limits) if f.name == name))


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")
