"""A problem found after loading (policy, tenancy, generated names) points at its field's own line:
the document's text is read again from its file only then, never kept with every object."""

from __future__ import annotations

import dataclasses

from agent.load import filecache, loader
from agent.load.loaded import Loaded
from agent.load.manifest import Manifest
from agent.model.problems import Origin
from tests.conftest import Repo, load_dir

DOC = ("apiVersion: bindy.firestoned.io/v1beta1\nkind: ARecord\nmetadata:\n  name: www\n  namespace: dns\n"
       "spec:\n  name: www\n  zone: example.com\n  ipv4Addresses:\n  - 192.0.2.1\n  - 192.0.2.2\n")
TWO = "# the second document is the one asked about\n" + DOC.replace("www", "api") + "---\n" + DOC


@dataclasses.dataclass
class Blob:
    """A file of a Git revision, as a source hands it over; counts its reads."""

    path: str
    data: bytes
    blob: str
    reads: int = 0

    @property
    def size(self) -> int:
        return len(self.data)

    def read(self) -> bytes:
        self.reads += 1
        return self.data


def _www(manifest: Manifest) -> Loaded:
    return next(o for o in manifest.objects if o.key.name == "www")


def test_a_field_of_the_second_document_of_a_file_points_at_its_line(repo: Repo) -> None:
    repo.add("r.yaml", TWO)
    www = _www(load_dir(repo.root))
    assert www.origin == Origin("r.yaml", 14)
    assert www.origin_at("spec.ipv4Addresses[1]") == Origin("r.yaml", 24)
    assert www.origin_at("metadata.namespace") == Origin("r.yaml", 18)


def test_a_local_file_changed_since_it_was_loaded_gives_the_objects_own_line_not_a_wrong_one(repo: Repo) -> None:
    repo.add("r.yaml", TWO)
    www = _www(load_dir(repo.root))
    repo.add("r.yaml", "# a line more\n" * 3 + TWO)
    assert www.origin_at("spec.ipv4Addresses[1]") == Origin("r.yaml", 14)
    (repo.root / "r.yaml").unlink()
    assert www.origin_at("spec.ipv4Addresses[1]") == Origin("r.yaml", 14)


def test_a_cached_file_is_read_again_from_the_latest_revision_only_when_a_line_is_asked() -> None:
    cache = filecache.FileCache()
    first = Blob("r.yaml", TWO.encode(), "b1")
    loader.load_files([first], default_namespace="dns", cache=cache)
    second = Blob("r.yaml", TWO.encode(), "b1")  # the next revision: the same blob, from another checkout
    www = _www(loader.load_files([second], default_namespace="dns", cache=cache))
    assert (first.reads, second.reads) == (1, 0)  # parsed once, not read again for the new revision
    assert www.origin_at("spec.ipv4Addresses[1]") == Origin("r.yaml", 24)
    assert www.origin_at("spec.zone") == Origin("r.yaml", 21)
    assert (first.reads, second.reads) == (1, 1)  # the old checkout's file is not used; read once for both
