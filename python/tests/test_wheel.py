"""The platform wheel that carries the binary (go run ./cmd/vastdist):
installed by pip, offline, into a directory of its own, it starts a broker
with no Go on PATH, and the Confluent client produces and consumes through
it.

The wheel is VASTFAKE_DIST's (the -o directory of vastdist, as test.sh
gives it), else built here for this platform."""

import json
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import textwrap
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXE = "vastfake.exe" if sys.platform == "win32" else "vastfake"
# This machine's wheel platform tag, as vastdist names the wheels.
HOST_TAG = {("Linux", "x86_64"): "manylinux_2_17_x86_64", ("Linux", "aarch64"): "manylinux_2_17_aarch64",
            ("Darwin", "x86_64"): "macosx_12_0_x86_64", ("Darwin", "arm64"): "macosx_12_0_arm64",
            ("Windows", "AMD64"): "win_amd64"}.get((platform.system(), platform.machine()))


def path_without(*names):
    """PATH less every directory holding one of names."""
    dirs = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join(d for d in dirs if d and not any(os.path.exists(os.path.join(d, n)) for n in names))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    if HOST_TAG is None:
        pytest.skip("vastdist builds no wheel for %s %s" % (platform.system(), platform.machine()))
    dist = os.environ.get("VASTFAKE_DIST")
    if not dist:
        if shutil.which("go") is None or not (ROOT / "cmd" / "vastdist").is_dir():
            pytest.skip("needs VASTFAKE_DIST, or go on PATH and the vastfake checkout")
        dist = str(tmp_path_factory.mktemp("dist"))
        subprocess.run(["go", "run", "./cmd/vastdist", "-o", dist, "-platforms", "host"], cwd=ROOT, check=True,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, timeout=600)
    found = [w for w in (pathlib.Path(dist) / "python").glob("*.whl") if HOST_TAG in w.name]
    assert len(found) == 1, "want one wheel tagged %s in %s/python, found %s" % (HOST_TAG, dist, found)
    return found[0]


def test_pypi_takes_the_wheel(wheel):
    """twine check, which the release runs before uploading to PyPI: the
    metadata is valid and the page (python/README.md) renders."""
    if shutil.which("twine") is None:
        if os.environ.get("CI"):
            pytest.fail("twine: not found (apt-get install -y twine)")
        pytest.skip("needs twine (apt-get install -y twine)")
    out = subprocess.run(["twine", "check", "--strict", str(wheel)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_wheel_carries_an_executable_binary_and_a_record(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        assert "vastfake/bin/" + EXE in names
        assert (z.getinfo("vastfake/bin/" + EXE).external_attr >> 16) & 0o755 == 0o755
        info = next(n for n in names if n.endswith(".dist-info/WHEEL"))
        assert "Root-Is-Purelib: false" in z.read(info).decode()
        record = z.read(next(n for n in names if n.endswith(".dist-info/RECORD"))).decode()
        assert sorted(line.split(",")[0] for line in record.splitlines()) == sorted(names)
        entry_points = z.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
        assert "vastfake.pytest_plugin = vastfake.pytest_plugin" in entry_points


def test_installed_without_go_it_starts_at_once(wheel, tmp_path):
    pytest.importorskip("confluent_kafka")
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--root-user-action=ignore",
                    "--target", str(site), str(wheel)], check=True, stdin=subprocess.DEVNULL, timeout=300)
    assert os.access(site / "vastfake" / "bin" / EXE, os.X_OK), "pip kept the binary's mode"

    # The user's test: no Go on PATH, outside any checkout, an empty build
    # cache, the installed package only. A vastfake on PATH comes after the
    # carried binary, which matches the package.
    cache = tmp_path / "cache"
    other = tmp_path / "other"
    other.mkdir()
    (other / "vastfake").write_text("#!/bin/sh\necho 'not the carried binary' >&2\nexit 1\n")
    (other / "vastfake").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("VASTFAKE_BIN", "VASTFAKE_SRC", "VASTFAKE_ARGS")}
    env.update(PATH=os.pathsep.join([str(other), path_without("go", "vastfake")]), PYTHONPATH=str(site), PYTHONDONTWRITEBYTECODE="1",
               VASTFAKE_CACHE_DIR=str(cache))
    code = textwrap.dedent("""
        import json, vastfake
        from confluent_kafka import Consumer, Producer
        found = vastfake.find_binary()
        with vastfake.Broker(topics=["orders:1"]) as broker:
            p = Producer({"bootstrap.servers": broker.bootstrap})
            for v in ("a", "b", "c"):
                p.produce("orders", v.encode())
            assert p.flush(30) == 0
            c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "billing",
                          "auto.offset.reset": "earliest", "enable.auto.commit": False})
            c.subscribe(["orders"])
            got = []
            for _ in range(300):
                m = c.poll(0.1)
                if m is not None and m.error() is None:
                    got.append(m.value().decode())
                if len(got) == 3:
                    break
            c.commit(asynchronous=False)
            broker.wait_committed("billing", "orders", 0, 3)
            c.close()
        print(json.dumps({"module": vastfake.__file__, "found": found, "got": got}))
    """)
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert pathlib.Path(out["module"]).resolve().parent == (site / "vastfake").resolve()
    assert pathlib.Path(out["found"]).resolve() == (site / "vastfake" / "bin" / EXE).resolve()
    assert out["got"] == ["a", "b", "c"]
    assert "building" not in run.stderr
    assert not cache.exists(), "nothing was built"

    # python -m vastfake runs the carried binary, for development.
    version = subprocess.run([sys.executable, "-m", "vastfake", "-version"], cwd=tmp_path, env=env,
                             stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith("vastfake %s " % wheel.name.split("-")[1]), version.stdout
