"""The README and the guides, checked as a newcomer reads them: every command block tagged,
the runnable ones run as written from a fresh clone and printing what the page shows
(numbers masked), every link resolving, the site building with `mkdocs build --strict`."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from doc_blocks import SHELL_LANGUAGES, Block, argv, blocks, drop_netns, here, mask, matches, netns_with_a_route, run_in_terminal

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
ALL_BLOCKS = [b for page in PAGES for b in blocks(page)]
SHELL_BLOCKS = [b for b in ALL_BLOCKS if b.lang in SHELL_LANGUAGES]
RUNNABLE = [b for b in SHELL_BLOCKS if b.tag in ("run", "root-netns")]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
README_MAX_LINES = 150


def test_every_command_block_says_whether_it_runs():
    untagged = [b.where for b in SHELL_BLOCKS if b.tag is None]
    assert not untagged, f"command blocks without a run / root-netns / not-run tag: {untagged}"
    unexplained = [b.where for b in SHELL_BLOCKS if b.tag == "not-run" and len(b.reason) < 10]
    assert not unexplained, f"not-run blocks must say why: {unexplained}"


def test_the_readme_is_a_front_door():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= README_MAX_LINES
    quick = [b for b in blocks(ROOT / "README.md") if b.tag in ("run", "root-netns")]
    commands = " ".join(c.line for b in quick for c in b.commands())
    # The three quick starts: analyze a capture, ask what if, fix a server safely.
    for needed in ("shortflow analyze", "shortflow graph", "shortflow simulate", "--set",
                   "shortflow testbed compare", "tune apply", "--dry-run", "tune status", "tune revert"):
        assert needed in commands, f"the README's quick starts run no `{needed}`"
    assert all(c.expected for b in quick if b.lang == "console" for c in b.commands() if "revert" not in c.line), \
        "every quick-start command shows its output"


def slug(heading: str) -> str:
    from markdown.extensions.toc import slugify

    return slugify(heading, "-")


def anchors(page: Path) -> set[str]:
    heads = re.findall(r"^#{1,6}\s+(.+?)\s*$", page.read_text(), flags=re.M)
    return {slug(h) for h in heads}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_resolve(page: Path):
    broken = []
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    for target in LINK.findall(text):
        if re.match(r"[a-z]+://|mailto:", target):
            continue
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.name}")
    assert not broken, f"{page.name}: {broken}"


def test_the_site_builds_strictly(tmp_path):
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(ROOT / "mkdocs.yml"),
                        "-d", str(tmp_path / "site")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    for page in ("index.html", "analyze/index.html", "architecture/index.html"):
        assert (tmp_path / "site" / page).exists(), page


@pytest.fixture(scope="session")
def clone(tmp_path_factory) -> Path:
    """A fresh clone of the repository as committed: what a newcomer gets."""
    dest = tmp_path_factory.mktemp("newcomer") / "shortflow"
    if (ROOT / ".git").exists():
        subprocess.run(["git", "clone", "-q", "--local", "--no-hardlinks", str(ROOT), str(dest)], check=True, timeout=120)
    else:  # a source tree without its history
        shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns("target", ".venv", ".git", "bench-data", "out"))
    return dest


def command_env() -> dict[str, str]:
    bindir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": f"{bindir}:{os.environ.get('PATH', '')}", "PYTHONDONTWRITEBYTECODE": "1"}


def run_block(block: Block, cwd: Path) -> None:
    ns = None
    if block.tag == "root-netns":
        if os.geteuid() != 0:
            pytest.skip("needs root for its network namespace")
        ns = netns_with_a_route(uuid.uuid4().hex[:6])
    try:
        for cmd in block.commands():
            status, out, err = run_in_terminal(argv(cmd.line, ns), cwd, command_env(), timeout=120)
            shown = here(out + "\n" + err, cwd)
            assert status == 0, f"{block.where}: `{cmd.line}` exited {status}:\n{shown}"
            want, got = mask("\n".join(cmd.expected)), mask(shown)
            assert matches(want, got), (f"{block.where}: `{cmd.line}` printed, numbers masked:\n" + "\n".join(got)
                                        + "\n\nthe page shows:\n" + "\n".join(want))
    finally:
        if ns is not None:
            drop_netns(ns)


@pytest.mark.parametrize("block", RUNNABLE, ids=lambda b: b.where)
def test_command_block_runs_as_written(block: Block, clone: Path):
    run_block(block, clone)


def test_masking_keeps_words_and_shape_and_drops_only_what_varies():
    # What a run changes: numbers, widths, run ids, colours.
    assert mask("\x1b[1musers waited 22.2 s\x1b[0m over 17   connections (id 3fa9c1)") == \
        mask("users waited 3.83 s over 10 connections (id 0b7e22)")
    assert mask("│ 0.310 │  1.552 │") == mask("│ 0.3100 │ 0.9322 │")
    # What a reader relies on: the words, the causes, the order of lines.
    assert mask("40% think time, 35% the path") != mask("40% the path, 35% think time")
    assert not matches(mask("a\nb"), mask("a\nc"))
    assert not matches(mask("a\nb"), mask("b\na"))
    assert matches(mask("head\n...\ntail"), mask("head\nx\ny\ntail")) and matches(mask("head\n...\ntail"), mask("head\ntail"))
    assert not matches(mask("head\n...\ntail"), mask("head\nx"))
