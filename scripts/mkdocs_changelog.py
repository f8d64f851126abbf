"""The docs' changelog page, made from CHANGELOG.md at every build: a MkDocs hook (``hooks:``
in mkdocs.yml), so that the page and the file cannot differ.

CHANGELOG.md sits at the repository's root and links the docs as ``docs/PAGE.md``; the page
sits among the docs, where the same pages are ``PAGE.md``. A relative link to anything outside
docs/ has no page on the site to go to: the build fails, naming it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "CHANGELOG.md"
PAGE = "changelog.md"

# [text](target) and [label]: target, where target is relative (no scheme, not an anchor)
INLINE = re.compile(r"(\]\()(?![a-z][a-z0-9+.-]*:|#)([^)\s]+)(\))")
DEFINITION = re.compile(r"^(\s*\[[^\]]+\]:\s*)(?![a-z][a-z0-9+.-]*:|#)(\S+)()", re.M)


def _relink(match: re.Match[str]) -> str:
    before, target, after = match.groups()
    if not target.startswith("docs/"):
        raise ValueError(
            f"CHANGELOG.md links {target!r}, which is not in docs/: the docs' changelog page "
            "cannot follow it (link a page under docs/, or a full URL)"
        )
    return f"{before}{target.removeprefix('docs/')}{after}"


def page(text: str) -> str:
    """CHANGELOG.md's ``text`` as the docs' page: its links to docs/ made relative to docs/."""
    return DEFINITION.sub(_relink, INLINE.sub(_relink, text))


def on_files(files: Any, config: Any) -> Any:
    """MkDocs: add changelog.md, made from CHANGELOG.md, to the site's files."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, PAGE, content=page(SOURCE.read_text())))
    return files
