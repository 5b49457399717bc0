"""The pytest plugin as a project uses it: run pytest on a small project in
a temporary directory, outside the vastfake checkout, with the binary on
PATH only."""

import importlib.metadata
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import vastfake

PACKAGE_PARENT = str(pathlib.Path(vastfake.__file__).resolve().parent.parent)


def installed():
    """Whether the package is installed (its pytest11 entry point loads the
    plugin) rather than imported from the checkout."""
    try:
        eps = importlib.metadata.distribution("vastfake").entry_points
    except importlib.metadata.PackageNotFoundError:
        return False
    return any(ep.group == "pytest11" for ep in eps)


def run_pytest(project, vastfake_bin, *args):
    bindir = project / "bin"
    bindir.mkdir()
    shutil.copy(vastfake_bin, bindir / "vastfake")
    env = {k: v for k, v in os.environ.items() if k not in ("VASTFAKE_BIN", "VASTFAKE_SRC", "VASTFAKE_ARGS")}
    env["PATH"] = str(bindir) + os.pathsep + env.get("PATH", "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA"]
    if not installed():
        env["PYTHONPATH"] = PACKAGE_PARENT + os.pathsep + env.get("PYTHONPATH", "")
        cmd += ["-p", "vastfake.pytest_plugin"]
    return subprocess.run(cmd + list(args), cwd=project, env=env, capture_output=True, text=True, timeout=120)


PROJECT_TEST = '''
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic


def test_options_reach_the_broker(vastfake, kafka_bootstrap):
    assert kafka_bootstrap == vastfake.bootstrap
    rules = vastfake.rules()
    assert rules["NoCompression"] is False  # the kafka profile, from the ini file
    assert rules["MaxGroups"] == 7  # from the command line, after the ini's 3


def test_failure_reports_refusals(vastfake):
    vastfake.stale_end_offset("1h")  # the next test's reset turns it off
    admin = AdminClient({"bootstrap.servers": vastfake.bootstrap})
    admin.create_topics([NewTopic("big", num_partitions=1, replication_factor=1)])["big"].result(30)
    p = Producer({"bootstrap.servers": vastfake.bootstrap, "enable.idempotence": False,
                  "message.send.max.retries": 0})
    p.produce("big", value=b"x" * 2000)
    p.flush(30)
    assert False, "the app failed"


def test_each_test_starts_clean(vastfake):
    assert vastfake.topics() == [] and vastfake.requests(api="Produce") == []
    assert vastfake.stale_end_offset(0) == "0s"
'''


def test_plugin_in_a_project(tmp_path, vastfake_bin):
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_app.py").write_text(PROJECT_TEST)
    (project / "pytest.ini").write_text(textwrap.dedent("""
        [pytest]
        vastfake_profile = kafka
        vastfake_rules =
            MaxGroups=3
            MaxMessageBytes=1000
    """))
    run = run_pytest(project, vastfake_bin, "--vastfake-rule", "MaxGroups=7")
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "1 failed, 2 passed" in out, out
    assert "PASSED test_app.py::test_options_reach_the_broker" in out
    assert "PASSED test_app.py::test_each_test_starts_clean" in out
    # The failure's report lists the refusal behind it.
    section = out.split("vastfake refusals", 1)[1]
    assert "Produce v" in section and "MESSAGE_TOO_LARGE" in section and "by VAST rule MaxMessageBytes" in section, out
