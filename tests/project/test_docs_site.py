"""The documentation site as a reader gets it: `mkdocs build --strict` passes, every page of the nav is
built, the first-zone page's YAML validates and plans, and the CLI reference (generated from the parser)
holds every verb and every flag that `bindy-agent VERB --help` shows."""

from __future__ import annotations

import html
import json
import os
import pathlib
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest
import yaml

from tests.conftest import ROOT
from tests.support.firstzone import check_first_zone

BIN = pathlib.Path(sys.executable).parent
AGENT = BIN / "bindy-agent"


def build_site(out: pathlib.Path) -> subprocess.CompletedProcess[str]:
    """`mkdocs build --strict` of the repository's mkdocs.yml into `out`, from the repository's root as CI runs it."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([str(BIN / "mkdocs"), "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
                           "--site-dir", str(out)], capture_output=True, text=True, cwd=ROOT, env=env, check=False,
                          timeout=300)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("site")
    done = build_site(out)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def _nav_pages(nav: object) -> Iterator[str]:
    if isinstance(nav, str):
        yield nav
    elif isinstance(nav, list):
        for item in nav:
            yield from _nav_pages(item)
    elif isinstance(nav, dict):
        for value in nav.values():
            yield from _nav_pages(value)


class _Loader(yaml.SafeLoader):
    """mkdocs.yml may hold tags of MkDocs' own (!!python/name, !ENV): none of them is needed here."""


_Loader.add_multi_constructor("", lambda loader, suffix, node: None)


def test_the_site_builds_strict_with_every_page_of_the_nav(site: pathlib.Path) -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=_Loader)  # a SafeLoader
    pages = list(_nav_pages(config["nav"]))
    assert len(pages) >= 20, pages
    for page in pages:
        assert (ROOT / "docs" / page).is_file(), page
        built = site / page.replace(".md", ".html")
        assert built.is_file(), built
        assert "<h1" in built.read_text(), f"{page} has no title"
    every_md = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert every_md == set(pages), "a page outside the nav, or a nav entry without its page"


def test_a_broken_link_fails_the_strict_build(tmp_path: pathlib.Path) -> None:
    """--strict is what keeps the pages linked: a link to a page that is not there stops the build."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the missing page](missing.md).\n")
    (tmp_path / "mkdocs.yml").write_text("site_name: t\nnav: [index.md]\n")
    done = subprocess.run([str(BIN / "mkdocs"), "build", "--strict", "--site-dir", str(tmp_path / "out")],
                          capture_output=True, text=True, cwd=tmp_path, check=False, timeout=120,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode != 0 and "missing.md" in done.stdout + done.stderr


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def yaml_blocks(page: str) -> list[str]:
    """The YAML code blocks of a built page, as a reader copies them (the highlighting removed)."""
    return [_text(block) for block in re.findall(r'<div class="language-yaml highlight"><pre>.*?<code>(.*?)</code>',
                                                 page, re.DOTALL)]


def test_the_first_zone_page_yaml_validates_and_plans(site: pathlib.Path, tmp_path: pathlib.Path) -> None:
    page = (site / "quickstart.html").read_text()
    blocks = yaml_blocks(page)
    assert len(blocks) == 3, len(blocks)  # the cluster, the zone, the records
    names = re.findall(r"<code>my-dns/([\w-]+\.yaml)</code>:", page)
    assert names == ["cluster.yaml", "zone.yaml", "records.yaml"], names
    check_first_zone(dict(zip(names, blocks, strict=True)), tmp_path)


def help_of(*argv: str) -> str:
    done = subprocess.run([str(AGENT), *argv, "--help"], capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def verbs() -> list[str]:
    """The verbs `bindy-agent --help` lists, in its order."""
    listed = help_of().split("positional arguments:", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^ {4}([a-z][\w-]*)(?: |$)", listed, re.MULTILINE)


def flags_of(help_text: str) -> set[str]:
    """Every option string `--help` shows: the lines that start an option (two spaces, then a dash)."""
    starts = re.findall(r"^  (-\S.*?)(?: {2,}|$)", help_text, re.MULTILINE)
    return {flag for line in starts for flag in re.findall(r"(?<![\w-])--?[A-Za-z][\w-]*", line)}


def sections(page: str) -> dict[str, str]:
    """The built reference page cut at its second-level headings, by anchor."""
    parts = re.split(r'<h2 id="([\w-]+)">', page)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_the_cli_reference_holds_every_verb_and_every_flag_help_shows(site: pathlib.Path) -> None:
    page = (site / "reference" / "cli.html").read_text()
    by_verb = sections(page)
    listed = verbs()
    assert len(listed) >= 10, listed
    missing: dict[str, set[str]] = {}
    for verb in ["global", *listed]:
        assert verb in by_verb, f"no section for {verb}"
        shown = help_of(verb) if verb != "global" else help_of()
        codes = " ".join(_text(c) for c in re.findall(r"<code>(.*?)</code>", by_verb[verb], re.DOTALL))
        on_page = set(re.findall(r"(?<![\w-])--?[A-Za-z][\w-]*", codes))
        if lost := flags_of(shown) - on_page:
            missing[verb] = lost
        if verb != "global":  # the verb's own description, word for word as --help wraps it
            description = " ".join(shown.split("\n\n")[1].split())
            assert description[:60] in " ".join(_text(by_verb[verb]).split()), verb
    assert not missing, f"flags --help shows that the reference lacks: {missing}"


def test_the_reference_says_each_flags_default_as_help_does(site: pathlib.Path) -> None:
    """%(default)s expanded: the reference reads `(default: 300.0)` where --help does, never the template."""
    page = _text((site / "reference" / "cli.html").read_text())
    assert "%(default)s" not in page and "%%" not in page
    assert "default: 300" in " ".join(help_of("sync").split()) and "default: 300" in page


def test_the_site_loads_nothing_from_other_machines(site: pathlib.Path) -> None:
    """No web fonts, scripts or styles from elsewhere: the site reads the same offline and behind a firewall."""
    for page in site.rglob("*.html"):
        text = page.read_text()
        outside = re.findall(r'<(?:script|link|img)[^>]*(?:src|href)="(https?://[^"]+)"', text)
        assert not outside, f"{page.name} loads {outside}"


@pytest.mark.integration
def test_a_browser_shows_the_home_page_with_its_navigation_and_the_cli_reference_with_every_verb(
        site: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """Headless Chromium, as a reader's browser: the home page renders with the site's navigation, the
    CLI reference page lists every verb `bindy-agent --help` lists, and both screenshots are drawn pages."""
    from tests.support import browser

    chromium = browser.Chromium(tmp_path / "chromium")
    with browser.serve(site) as base:
        home_dom = chromium.dom(base + "index.html")
        cli_dom = chromium.dom(base + "reference/cli.html")
        shots = {name: chromium.screenshot(base + path, tmp_path / f"{name}.png")
                 for name, path in (("home", "index.html"), ("cli", "reference/cli.html"))}

    primary = home_dom.split('class="md-nav md-nav--primary"', 1)[1]
    nav = {" ".join(_text(link).split()) for link in
           re.findall(r'class="md-nav__link[^"]*"[^>]*>(.*?)</(?:a|label)>', primary, re.DOTALL)}
    for title in ("Quickstart and first zone", "Concepts", "Install in a cluster", "CI and pull requests",
                  "Rolling back a bad commit", "CLI reference"):
        assert title in nav, f"the home page's navigation lacks {title!r}: {sorted(nav)}"
    assert re.search(r"<h1[^>]*>bindy-agent", home_dom)

    assert re.search(r"<h1[^>]*>CLI reference", cli_dom)
    shown = set(re.findall(r'<h2 id="([\w-]+)"', cli_dom))
    assert set(verbs()) <= shown, f"verbs missing from the CLI reference in the browser: {set(verbs()) - shown}"

    for name, png in shots.items():
        assert browser.png_size(png) == chromium.size, name
        pixels = browser.png_pixels(png)
        assert len(png) > 20_000 and len(set(pixels)) > 64, f"the {name} screenshot is blank ({len(png)} bytes)"


def test_each_yaml_example_of_the_concepts_page_is_a_repository_that_validates_and_plans(
        tmp_path: pathlib.Path) -> None:
    blocks = re.findall(r"^```yaml\n(.*?)\n```$", (ROOT / "docs" / "concepts.md").read_text(), re.DOTALL | re.MULTILINE)
    assert blocks
    for n, block in enumerate(blocks):
        repo = tmp_path / f"example-{n}"
        repo.mkdir()
        (repo / "dns.yaml").write_text(block + "\n")
        valid = subprocess.run([str(AGENT), "validate", str(repo)], capture_output=True, text=True, check=False)
        assert valid.returncode == 0 and "(0 warnings)" in valid.stdout + valid.stderr, valid.stdout + valid.stderr
        planned = subprocess.run([str(AGENT), "plan", str(repo), "-o", "json"], capture_output=True, text=True,
                                 check=False)
        assert planned.returncode == 0, planned.stderr
        zones = [c for c in json.loads(planned.stdout)["changes"] if c["layer"] == "zones"]
        assert len(zones) == 2, f"example {n}: the zone on a primary and a secondary"


def test_every_page_that_names_the_agents_secrets_names_all_it_mounts() -> None:
    """A page telling which Secrets to create (install, troubleshooting, README) lists every one the shipped
    Deployment mounts, or the pods wait in ContainerCreating for the one it forgot."""
    deployment = yaml.safe_load((ROOT / "deploy" / "deployment.yaml").read_text())
    mounted = {v["secret"]["secretName"] for v in deployment["spec"]["template"]["spec"]["volumes"] if "secret" in v}
    assert "bindy-agent-git" in mounted, mounted
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    naming = [page for page in pages if "bindy-agent-git" in page.read_text()]
    assert len(naming) >= 3, naming
    for page in naming:
        assert not [s for s in mounted if s not in page.read_text()], f"{page.name} misses a Secret of {mounted}"
