"""The README is a front page and docs/ is the manual: the front page stays short, and no link
in either points at nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MAX_README_LINES = 200

# [text](target) outside code spans; images included.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _pages() -> list[Path]:
    return sorted(DOCS.glob("**/*.md"))


def _links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return LINK.findall(text)


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    anchors = set()
    in_code = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and (heading := re.match(r"#{1,6} (.*)", line)):
            slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
            anchors.add(slug)
    return anchors


def test_the_readme_is_a_front_page() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md is {len(lines)} lines (at most 200)"
    assert lines[0] == "# gizmo-host"
    commands = [line for line in lines[:8] if line.startswith("python3 dev.py ")]
    assert [c.split("#")[0].split() for c in commands] == [
        ["python3", "dev.py", "demo"],
        ["python3", "dev.py", "test"],
    ]
    linked = {link.split("#")[0] for link in _links(README) if link.startswith("docs/")}
    assert len({link for link in linked if link.endswith(".md")}) >= 6


def test_the_manual_has_a_page_per_topic() -> None:
    names = {page.name for page in DOCS.glob("*.md")}
    topics = ("architecture", "run", "settings", "world", "record-replay", "hil", "certify")
    topics += ("rflysim", "mavlink", "foxglove", "zenoh", "deploy", "doctor", "bench")
    for topic in topics:
        assert f"{topic}.md" in names, topic


@pytest.mark.parametrize("page", [README, *_pages()], ids=lambda p: str(p.relative_to(ROOT)))
def test_no_link_points_at_nothing(page: Path) -> None:
    for link in _links(page):
        if re.match(r"[a-z]+:", link):
            continue  # https:, mailto:: not ours to check offline
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        assert target.exists(), f"{page.relative_to(ROOT)}: {link} does not exist"
        if anchor and target.suffix == ".md":
            assert anchor in _anchors(target), f"{page.relative_to(ROOT)}: no heading #{anchor}"
