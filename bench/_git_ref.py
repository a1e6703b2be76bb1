"""A git commit checked out beside this tree, for a bench's ``--compare REF``."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def checkout(root: Path, ref: str) -> Iterator[str | None]:
    """``ref`` checked out into a temporary worktree of ``root``'s repository: its path, or
    ``None`` when ``ref`` names no commit there; removed afterwards."""
    with tempfile.TemporaryDirectory() as tmp:
        other = os.path.join(tmp, "ref")
        added = subprocess.run(
            ["git", "-C", str(root), "worktree", "add", "--detach", "--quiet", other, ref],
            check=False,
        )
        if added.returncode != 0:
            yield None
            return
        try:
            yield other
        finally:
            subprocess.run(
                ["git", "-C", str(root), "worktree", "remove", "--force", other], check=False
            )
