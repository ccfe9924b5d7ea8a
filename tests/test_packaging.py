"""The package builds as a wheel and an sdist, and the wheel works on its own.

The source tree is copied to a temporary folder (without build products,
caches or virtual environments) and built there with the standard front end,
``python -m build``, in its default mode: the sdist first, then the wheel from
the unpacked sdist, so that a file missing from the sdist breaks the wheel.
The wheel is then installed (not editable) into a fresh virtual environment,
with its dependencies from the package registry (pip's cache makes this fast
after the first time), and imported and fitted from a working directory
outside the source tree, in isolated mode, so that the source cannot be
imported by accident.
"""

import os
import shutil
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("build")
# One build per module: its tests run on one parallel worker (pytest-xdist, loadgroup).
pytestmark = pytest.mark.xdist_group("packaging-build")

ROOT = Path(__file__).resolve().parents[1]

# Build products, caches and local environments: never part of a clean clone.
_NOT_SOURCE = shutil.ignore_patterns(
    ".git",
    ".venv",
    "venv",
    "__pycache__",
    "*.pyc",
    "*.egg-info",
    "build",
    "dist",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    "_build",
    "generated",
    "auto_examples",
    "results",
)

# The import and fit run inside the fresh environment.
_SMOKE = textwrap.dedent(
    """
    import sys, sysconfig
    from pathlib import Path

    import skprivpred
    from sklearn.datasets import make_classification

    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    location = Path(skprivpred.__file__).resolve()
    assert location.is_relative_to(site), f"imported from {location}, not from {site}"
    source = Path(sys.argv[1]).resolve()
    assert not any(Path(p or ".").resolve() == source for p in sys.path), sys.path

    X, y = make_classification(n_samples=600, random_state=0)
    clf = skprivpred.SubsampleAggregateClassifier(
        epsilon=1.0, n_teachers=5, classes=[0, 1], random_state=0
    ).fit(X[:500], y[:500])
    answers = clf.predict(X[500:])
    assert answers.shape == (100,) and set(answers.tolist()) <= {0, 1}
    assert (answers == y[500:]).mean() > 0.6
    skprivpred.show_versions()
    print("OK", skprivpred.__version__, location)
    """
)


def _run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, (
        f"{' '.join(map(str, command))} exited with {result.returncode}\n"
        f"--- stdout ---\n{result.stdout[-4000:]}\n--- stderr ---\n{result.stderr[-4000:]}"
    )
    return result


def _clean_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_USER"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    """The sdist and the wheel, built from a clean copy of the source tree."""
    tmp = tmp_path_factory.mktemp("packaging")
    source = tmp / "src"
    shutil.copytree(ROOT, source, ignore=_NOT_SOURCE)
    dist = tmp / "dist"
    _run(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(source)],
        cwd=tmp,
        env=_clean_env(),
        timeout=600,
    )
    sdists = sorted(dist.glob("skprivpred-*.tar.gz"))
    wheels = sorted(dist.glob("skprivpred-*-py3-none-any.whl"))
    assert len(sdists) == 1 and len(wheels) == 1, sorted(p.name for p in dist.iterdir())
    return sdists[0], wheels[0]


def test_sdist_contents(artifacts):
    sdist, _ = artifacts
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    for required in [
        "pyproject.toml",
        "README.md",
        "LICENSE",
        "PKG-INFO",
        "skprivpred/__init__.py",
        "skprivpred/datasets/__init__.py",
    ]:
        assert required in names, required


def test_wheel_contents(artifacts):
    _, wheel = artifacts
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(metadata_name).decode()
    assert "skprivpred/__init__.py" in names
    assert "skprivpred/datasets/_loaders.py" in names
    assert not any(n.startswith(("tests/", "benchmarks/", "docs/", "examples/")) for n in names)
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), sorted(names)
    for line in ["Name: skprivpred", "Requires-Dist: scikit-learn>=1.6", "Requires-Python: >=3.10"]:
        assert line in metadata, line


def test_wheel_installs_and_fits_in_a_fresh_environment(artifacts, tmp_path):
    _, wheel = artifacts
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], timeout=300)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    env = _clean_env()
    # A plain (non-editable) install of the wheel file; its dependencies come
    # from the registry, or from pip's cache.
    _run(
        [str(python), "-m", "pip", "install", "--no-input", str(wheel)],
        cwd=tmp_path,
        env=env,
        timeout=900,
    )
    work = tmp_path / "elsewhere"
    work.mkdir()
    result = _run([str(python), "-I", "-c", _SMOKE, str(ROOT)], cwd=work, env=env, timeout=300)
    assert "OK" in result.stdout
    assert "scikit-learn:" in result.stdout
