"""Where opgen's copier template is, and which git source and version a project records.

From a git checkout (an editable install) the template is copier.yml and templates/ at
the repository root; in a wheel they are package data under opgen/_template. Either way
copier renders a plain-directory snapshot of them (see render.py), so the answers file
gets the git source and version that `copier update` must use from here, never a
temporary or relative path.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from . import __version__

# The public git repository of opgen's template. OPGEN_TEMPLATE_URL overrides it (forks,
# mirrors, tests with a local repository).
TEMPLATE_GIT_URL = "https://github.com/opgen/opgen.git"


@dataclass(frozen=True)
class TemplateSource:
    root: Path  # holds copier.yml and templates/
    url: str  # recorded as _src_path
    version: str  # recorded as _commit: the git tag of this template version

    def snapshot(self, into: Path) -> Path:
        """Copy the template files (no .git) to `into`, for copier to render as they are."""
        into.mkdir(parents=True)
        shutil.copy2(self.root / "copier.yml", into / "copier.yml")
        shutil.copytree(self.root / "templates", into / "templates",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        return into

    @property
    def recorded(self) -> dict[str, str]:
        """The answers-file entries that tell `copier update` where the template is."""
        return {"_src_path": self.url, "_commit": self.version}


def locate() -> TemplateSource:
    package = Path(__file__).resolve().parent
    for root in (package / "_template", package.parent):
        if (root / "copier.yml").is_file() and (root / "templates").is_dir():
            url = os.environ.get("OPGEN_TEMPLATE_URL", TEMPLATE_GIT_URL)
            return TemplateSource(root=root, url=url, version=f"v{__version__}")
    raise RuntimeError(f"opgen's template is missing next to {package}; reinstall opgen")
