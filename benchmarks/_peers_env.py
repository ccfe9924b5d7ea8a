"""The virtual environment of ``benchmarks/peers.py`` (standard library only).

diffprivlib 0.6.6 does not import with scikit-learn >= 1.8, while the project's
own environment follows the newest scikit-learn. ``peers.py`` therefore runs in
an environment of its own, ``benchmarks/.peers-venv`` (ignored by git), with
scikit-learn pinned to a release diffprivlib supports, diffprivlib 0.6.6 and
skprivpred installed from this checkout (editable, so later edits of the
checkout are picked up without a reinstall). The environment is built once and
rebuilt when :data:`REQUIREMENTS` change.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = Path(__file__).resolve().parent / ".peers-venv"

#: What the comparison runs on. scikit-learn 1.7.2 is the newest release that
#: diffprivlib 0.6.6 imports with (1.8 removed private helpers it uses).
REQUIREMENTS = (
    "scikit-learn==1.7.2",
    "diffprivlib==0.6.6",
    "numpy>=1.24,<2.4",
    "scipy>=1.10",
    "pandas>=2.0",
    "matplotlib>=3.7",
    "threadpoolctl>=3.1",
    "tqdm>=4.60",
)
_STAMP = VENV / "peers-requirements.json"


def venv_python(venv_dir: Path = VENV) -> Path:
    """The interpreter of the environment."""
    sub = "Scripts/python.exe" if os.name == "nt" else "bin/python"
    return venv_dir / sub


def inside() -> bool:
    """Whether this interpreter is the one of the peers environment."""
    return Path(sys.prefix).resolve() == VENV.resolve()


def _pip(*args: str) -> None:
    command = [str(venv_python()), "-m", "pip", "--disable-pip-version-check", *args]
    print("+ " + " ".join(command), flush=True)
    subprocess.run(command, check=True)


def ensure(*, rebuild: bool = False) -> Path:
    """Create (or update) the environment; return its interpreter."""
    wanted = {"requirements": list(REQUIREMENTS), "checkout": str(ROOT)}
    if not rebuild and venv_python().exists() and _STAMP.exists():
        try:
            if json.loads(_STAMP.read_text()) == wanted:
                return venv_python()
        except ValueError:
            pass
    print(f"Building the peers environment in {VENV} (once; a few minutes) ...", flush=True)
    venv.EnvBuilder(with_pip=True, clear=rebuild or not venv_python().exists()).create(VENV)
    _pip("install", "--quiet", "--upgrade", "pip")
    _pip("install", "--quiet", *REQUIREMENTS)
    # skprivpred from this checkout, without touching the pinned scikit-learn.
    _pip("install", "--quiet", "--no-deps", "-e", str(ROOT))
    _STAMP.write_text(json.dumps(wanted, indent=1) + "\n")
    return venv_python()


def reexec_inside(script: Path, argv: list[str], *, rebuild: bool = False) -> None:
    """Build the environment if needed and replace this process by ``script`` run in it."""
    python = ensure(rebuild=rebuild)
    os.execv(str(python), [str(python), str(script), *argv])
