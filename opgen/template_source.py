"""Where opgen's copier template is, and which git source and version a project records.

Two ways to run opgen, two places for the template:

- from a git checkout (an editable install): copier.yml and templates/ at the repository
  root. A project records the checkout itself as its source (or OPGEN_TEMPLATE_URL) and
  `git describe --tags --always` of its HEAD as the version: both are real, so
  `copier update` finds the very commit the project was rendered from.
- from a wheel: the same files as data files under <prefix>/share/opgen/template, with
  no git. A project records OPGEN_TEMPLATE_URL or opgen's public repository as its
  source and the tag `v<opgen version>` as its version: the template's version is
  opgen's version.

Either way copier renders a plain-directory snapshot (see render.py), so these values
are passed to the answers file explicitly; it never records a temporary or relative path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from . import __version__

# The public git repository of opgen's template, for projects rendered by an installed
# wheel. OPGEN_TEMPLATE_URL overrides it (forks, mirrors, a local clone).
TEMPLATE_GIT_URL = "https://github.com/opgen/opgen.git"
ANSWERS_FILE = ".copier-answers.yml"  # _answers_file in copier.yml
URL_VARIABLE = "OPGEN_TEMPLATE_URL"


@dataclass(frozen=True)
class TemplateSource:
    root: Path  # holds copier.yml and templates/
    url: str  # recorded as _src_path: a git repository copier can clone
    version: str  # recorded as _commit: a git ref in that repository

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


def recorded_answers(project: Path) -> dict:
    """The answers a project was rendered from ({} if it has no answers file)."""
    import yaml  # copier's own dependency, which writes these files

    answers_file = project / ANSWERS_FILE
    return (yaml.safe_load(answers_file.read_text()) or {}) if answers_file.is_file() else {}


def template_root() -> tuple[Path, bool]:
    """Where copier.yml and templates/ are, and whether that is an installed wheel's copy."""
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / "copier.yml").is_file() and (checkout / "templates").is_dir():
        return checkout, False
    installed = _installed_template()
    if installed is not None:
        return installed, True
    raise RuntimeError(f"opgen's template is missing next to {checkout}; reinstall opgen")


def _installed_template() -> Path | None:
    """The template a wheel installed (share/opgen/template), found in the installed files."""
    from importlib.metadata import PackageNotFoundError, files

    try:
        recorded = files("opgen") or []
    except PackageNotFoundError:
        return None
    for path in recorded:
        if path.as_posix().endswith("share/opgen/template/copier.yml"):
            located = Path(path.locate()).resolve()
            if located.is_file():
                return located.parent
    return None


def locate() -> TemplateSource:
    root, packaged = template_root()
    if packaged:
        url = os.environ.get(URL_VARIABLE) or TEMPLATE_GIT_URL
        return TemplateSource(root=root, url=url, version=f"v{__version__}")
    url = os.environ.get(URL_VARIABLE) or str(root)
    return TemplateSource(root=root, url=url, version=_describe(root))


def _describe(checkout: Path) -> str:
    """What copier records for a git template: `git describe --tags --always` of HEAD."""
    try:
        result = subprocess.run(
            ["git", "describe", "--tags", "--always"], cwd=checkout,
            capture_output=True, text=True, check=True,
        )
        return result.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return f"v{__version__}"  # a source tree without git: the release it came from
