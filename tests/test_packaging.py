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

The README's install line for users (``pip install "skprivpred[...]"``) is installed the
same way, from the wheel and from the sdist, each into its own fresh environment, and the
README's quick start runs there verbatim (it reads the Adult data from the cache,
``~/skprivpred_data`` or ``$SKPRIVPRED_DATA``, fetching it once if missing).
"""

import os
import re
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
    from importlib.metadata import version

    assert version("skprivpred") == skprivpred.__version__, version("skprivpred")
    import skops.io  # a core dependency: saving a fitted model never misses a package

    print("OK", skprivpred.__version__, location)
    """
)


def _readme():
    return (ROOT / "README.md").read_text(encoding="utf-8")


def readme_install_extra():
    """The extra of the README's user install line, ``pip install "skprivpred[EXTRA]"``."""
    lines = re.findall(r'^pip install "skprivpred\[(\w+)\]"$', _readme(), re.M)
    assert len(lines) == 1, f"the README shows {len(lines)} user install lines"
    checkout = f'pip install -e ".[{lines[0]}]"'
    assert checkout in _readme(), f"the README does not show the checkout form {checkout}"
    return lines[0]


def readme_quick_start():
    """The README's quick start, verbatim: the first Python block of its section."""
    text = _readme()
    section = text[text.index("## Quick start") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


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
    """The sources, the tests and the docs sources; no data cache and no build output."""
    sdist, _ = artifacts
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    for required in [
        "pyproject.toml",
        "README.md",
        "LICENSE",
        "CHANGELOG.md",
        "CONTRIBUTING.md",
        "PKG-INFO",
        ".ci/floors.txt",
        ".pre-commit-config.yaml",
        "skprivpred/__init__.py",
        "skprivpred/py.typed",
        "skprivpred/datasets/__init__.py",
        "tests/conftest.py",
        "tests/test_packaging.py",
        "docs/conf.py",
        "docs/index.rst",
        "docs/user_guide/deploying.rst",
        "examples/README.rst",
        "benchmarks/run.py",
    ]:
        assert required in names, required
    unwanted = [
        n
        for n in names
        if n.endswith((".pyc", ".skops", ".db", ".data", ".test", ".dat", ".whl", ".tar.gz"))
        or any(part in n.split("/") for part in ("__pycache__", "_build", "generated"))
        or any(part in n.split("/") for part in ("auto_examples", "results", ".venv", "dist"))
        or n.startswith(("build/", ".git"))
    ]
    assert not unwanted, unwanted


def test_wheel_contents(artifacts):
    _, wheel = artifacts
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(metadata_name).decode()
    assert "skprivpred/__init__.py" in names
    assert "skprivpred/datasets/_loaders.py" in names
    assert "skprivpred/py.typed" in names  # PEP 561: the annotations are for users too
    assert not any(n.startswith(("tests/", "benchmarks/", "docs/", "examples/")) for n in names)
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), sorted(names)
    import skprivpred

    for line in [
        "Name: skprivpred",
        f"Version: {skprivpred.__version__}",
        "Requires-Dist: scikit-learn>=1.6",
        "Requires-Dist: skops>=0.11",  # core: saving a fitted model never misses a package
        "Requires-Python: >=3.10",
        "Classifier: Typing :: Typed",
        "Classifier: Operating System :: POSIX :: Linux",
        *(f"Classifier: Programming Language :: Python :: 3.{minor}" for minor in range(10, 14)),
        'Requires-Dist: pandas>=2.0.3; extra == "pandas"',
        'Requires-Dist: pandas>=2.0.3; extra == "serve"',  # a DataFrame-fitted model is served
        'Requires-Dist: pandas>=2.0.3; extra == "dask"',  # dask.dataframe needs both
        'Requires-Dist: pyarrow>=14.0.1; extra == "dask"',
    ]:
        assert line in metadata, line
    # The long description is the README: no link that resolves only inside the repository.
    relative = re.findall(r"\]\((?!https?://|#)([^)]+)\)", metadata)
    assert not relative, relative


# Pins that follow another package's floor rather than a line of pyproject.toml.
_COMPANIONS = {"distributed": "dask", "psycopg-binary": "psycopg"}
_RUNTIME_EXTRAS = ("pandas", "dask", "serve", "postgres")
#: Test tools pinned at their floor too (a test uses their Python API).
_PINNED_TEST_TOOLS = ("schemathesis",)


def _declared_floors():
    """{name: floor} of the core dependencies, the runtime extras and the pinned test tools."""
    from packaging.requirements import Requirement

    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    blocks = [re.search(r"^dependencies = \[(.*?)^\]", text, re.S | re.M).group(1)]
    for extra in _RUNTIME_EXTRAS:
        block = re.search(rf"^{extra} = \[(.*?)\]$", text, re.S | re.M)
        assert block, f"no extra {extra!r} in pyproject.toml"
        blocks.append(block.group(1))
    floors = {}
    for block in blocks:
        for spec in re.findall(r'"([^"]+)"', block):
            requirement = Requirement(spec)
            (floor,) = [s.version for s in requirement.specifier if s.operator == ">="]
            floors[requirement.name.replace("_", "-").lower()] = floor
    test = re.search(r"^test = \[(.*?)^\]", text, re.S | re.M)
    assert test, "no test extra in pyproject.toml"
    for spec in re.findall(r'^\s*"([^"]+)"', test.group(1), re.M):
        requirement = Requirement(spec)
        if requirement.name in _PINNED_TEST_TOOLS:
            (floor,) = [s.version for s in requirement.specifier if s.operator == ">="]
            floors[requirement.name] = floor
    return floors


def test_floors_file_pins_the_declared_floors():
    """.ci/floors.txt pins each runtime dependency (and schemathesis) at its declared floor."""
    from packaging.version import Version

    pins = {}
    for line in (ROOT / ".ci" / "floors.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[name.replace("_", "-").lower()] = version
    declared = _declared_floors()
    assert set(declared) | set(_COMPANIONS) == set(pins), (sorted(declared), sorted(pins))
    for name, pin in pins.items():
        floor = declared[_COMPANIONS.get(name, name)]
        assert Version(pin) == Version(floor), f"{name}: pinned {pin}, declared >={floor}"


def _fresh_venv(tmp_path):
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], timeout=300)
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _pip_install(python, requirement, cwd):
    # A plain (non-editable) install; the dependencies come from the registry, or from
    # pip's cache. Not byte-compiled (a throwaway environment: its one run compiles what
    # it imports, and pip's compiling every module was most of the install's time).
    _run(
        [str(python), "-m", "pip", "install", "--no-input", "--no-compile", requirement],
        cwd=cwd,
        env=_clean_env(),
        timeout=900,
    )


def _elsewhere(tmp_path):
    work = tmp_path / "elsewhere"
    work.mkdir()
    return work


def test_wheel_installs_and_fits_in_a_fresh_environment(artifacts, tmp_path):
    """``pip install skprivpred`` alone: import, fit, answer, and the metadata's version."""
    _, wheel = artifacts
    python = _fresh_venv(tmp_path)
    _pip_install(python, str(wheel), tmp_path)
    result = _run(
        [str(python), "-I", "-c", _SMOKE, str(ROOT)],
        cwd=_elsewhere(tmp_path),
        env=_clean_env(),
        timeout=300,
    )
    assert f"OK {_package_version()}" in result.stdout
    assert "scikit-learn:" in result.stdout and "skops:" in result.stdout


def _package_version():
    import skprivpred

    return skprivpred.__version__


def _readme_line_runs_the_quick_start(artifact, tmp_path):
    """The README's install line with ``artifact`` for the name, then the quick start."""
    extra = readme_install_extra()
    python = _fresh_venv(tmp_path)
    # The README's line is pip install "skprivpred[EXTRA]": the same requirement, with
    # the built file in place of the registry.
    _pip_install(python, f"skprivpred[{extra}] @ {artifact.resolve().as_uri()}", tmp_path)
    script = tmp_path / "quick_start.py"
    script.write_text(readme_quick_start(), encoding="utf-8")
    result = _run(
        [str(python), "-I", str(script)], cwd=_elsewhere(tmp_path), env=_clean_env(), timeout=600
    )
    # The last line prints ten answers and the budget spent by fifty.
    assert result.stdout.strip().splitlines()[-1].endswith(" 50.0"), result.stdout


def test_the_readme_install_line_runs_the_quick_start_from_the_wheel(artifacts, tmp_path):
    _readme_line_runs_the_quick_start(artifacts[1], tmp_path)


def test_the_readme_install_line_runs_the_quick_start_from_the_sdist(artifacts, tmp_path):
    _readme_line_runs_the_quick_start(artifacts[0], tmp_path)


def _test_extra_pins():
    """{name: version} of the test extra's exact pins (``name==version``)."""
    from packaging.requirements import Requirement

    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    test = re.search(r"^test = \[(.*?)^\]", text, re.S | re.M)
    assert test, "no test extra in pyproject.toml"
    pins = {}
    for spec in re.findall(r'^\s*"([^"]+)"', test.group(1), re.M):
        requirement = Requirement(spec)
        exact = [s.version for s in requirement.specifier if s.operator == "=="]
        if exact:
            pins[requirement.name] = exact[0]
    return pins


def test_pre_commit_hooks_pin_the_tools_of_pyproject():
    """Each pre-commit hook runs ruff or mypy at the version pyproject.toml pins exactly."""
    import yaml  # a dependency of dask, in the test extra
    from packaging.requirements import Requirement

    pins = _test_extra_pins()
    assert {"ruff", "mypy"} <= set(pins), f"pyproject.toml pins only {sorted(pins)}"
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    hooks = [hook for repo in config["repos"] for hook in repo["hooks"]]
    tools = {}
    for hook in hooks:
        tool = hook["entry"].split()[0]
        assert tool in ("ruff", "mypy"), f"hook {hook['id']} runs {tool}"
        # A local hook installs its tool from the registry at the version it names.
        assert hook["language"] == "python", hook["id"]
        named = {
            Requirement(spec).name: Requirement(spec).specifier
            for spec in hook.get("additional_dependencies", [])
        }
        assert tool in named, f"hook {hook['id']} does not name the version of {tool}"
        assert str(named[tool]) == f"=={pins[tool]}", (
            f"hook {hook['id']}: {tool}{named[tool]}, pyproject.toml: {tool}=={pins[tool]}"
        )
        tools.setdefault(tool, []).append(hook["id"])
    assert set(tools) == {"ruff", "mypy"}, tools
    assert len(tools["ruff"]) == 2, tools  # lint and format
