"""The fixture keeps working when conftest.py is copied into another
project: outside a vastfake checkout it runs ``vastfake`` from PATH."""

import os
import pathlib
import shutil
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent

COPIED_TEST = '''
import socket


def test_broker_answers(kafka_bootstrap):
    host, port = kafka_bootstrap.rsplit(":", 1)
    socket.create_connection((host, int(port)), timeout=10).close()
'''


def test_copied_conftest_uses_vastfake_on_path(tmp_path, vastfake_bin):
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(HERE / "conftest.py", project / "conftest.py")
    (project / "test_app.py").write_text(COPIED_TEST)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shutil.copy(vastfake_bin, bindir / "vastfake")

    env = {k: v for k, v in os.environ.items() if k not in ("VASTFAKE_BIN", "VASTFAKE_SRC", "VASTFAKE_ARGS")}
    env["PATH"] = str(bindir) + os.pathsep + env.get("PATH", "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(project)],
                         cwd=project, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout
