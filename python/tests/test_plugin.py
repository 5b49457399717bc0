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
    # The package as this test imported it, by an absolute path: a relative
    # PYTHONPATH would not reach it from the project.
    env["PYTHONPATH"] = PACKAGE_PARENT + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA"]
    if not installed():
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


AUDIT_TEST = '''
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic


def produce_compressed(bootstrap):
    """Produce one gzip batch: VAST refuses compression, audit records it."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("orders", num_partitions=1, replication_factor=1)])["orders"].result(30)
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": False, "compression.type": "gzip"})
    p.produce("orders", value=b"o" * 1000)  # compressible: librdkafka sends small batches as they are
    assert p.flush(30) == 0


def test_1_finds_compression(vastfake):
    produce_compressed(vastfake.bootstrap)
    assert [f.rule for f in vastfake.findings()] == ["NoCompression"]
    vastfake.assert_no_refusals()  # audit records instead of refusing


def test_2_clean_test_has_no_findings(vastfake):
    vastfake.assert_no_findings()  # test_1's finding is gone


def test_3_failure_names_the_findings(vastfake):
    produce_compressed(vastfake.bootstrap)
    vastfake.assert_no_findings()


def test_4_failure_says_the_audit_found_nothing(vastfake):
    assert False, "the app failed"
'''


def test_audit_findings_are_per_test(tmp_path, vastfake_bin):
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_audit.py").write_text(AUDIT_TEST)
    run = run_pytest(project, vastfake_bin, "--vastfake-profile", "audit")
    out = run.stdout + run.stderr
    assert "2 failed, 2 passed" in out, out
    assert "PASSED test_audit.py::test_1_finds_compression" in out
    assert "PASSED test_audit.py::test_2_clean_test_has_no_findings" in out
    # The failure names what the audit found during that test.
    report = out.split("_ test_3_failure_names_the_findings _", 1)[1].split("_ test_4_", 1)[0]
    section = report.split("vastfake audit findings", 1)[1]
    assert "NoCompression [" in section and "1 time" in section, report
    # A failing test with nothing found says so rather than only that
    # nothing was refused.
    report = out.split("_ test_4_failure_says_the_audit_found_nothing _", 1)[1]
    assert "the audit found nothing" in report.split("vastfake audit findings", 1)[1], report


def test_profile_help_lists_audit(tmp_path, vastfake_bin):
    project = tmp_path / "project"
    project.mkdir()
    run = run_pytest(project, vastfake_bin, "--help")
    assert run.returncode == 0, run.stdout + run.stderr
    help_text = " ".join(run.stdout.split("--vastfake-profile", 1)[1].split("--vastfake-rule", 1)[0].split())
    assert "vast (default" in help_text and "kafka" in help_text and "audit" in help_text, help_text


def test_dash_p_on_an_installed_plugin(tmp_path, vastfake_bin):
    """-p vastfake.pytest_plugin where the package is installed, and where
    pip install ./python left an egg-info in the checkout: the plugin loads
    once, not "Plugin already registered"."""
    site = tmp_path / "site"
    shutil.copytree(PACKAGE_PARENT + "/vastfake", site / "vastfake")
    egg = site / "vastfake.egg-info"  # what setuptools writes next to the package
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: vastfake\nVersion: 0.1.0\n")
    (egg / "entry_points.txt").write_text(entry_points_txt())
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_one.py").write_text("def test_one(vastfake):\n    assert vastfake.topics() == []\n")
    bindir = project / "bin"
    bindir.mkdir()
    shutil.copy(vastfake_bin, bindir / "vastfake")
    env = {k: v for k, v in os.environ.items() if k not in ("VASTFAKE_BIN", "VASTFAKE_SRC", "VASTFAKE_ARGS")}
    env.update(PATH=str(bindir) + os.pathsep + env.get("PATH", ""), PYTHONPATH=str(site), PYTHONDONTWRITEBYTECODE="1")
    for extra in ([], ["-p", "vastfake.pytest_plugin"]):
        run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *extra], cwd=project,
                             env=env, capture_output=True, text=True, timeout=120)
        out = run.stdout + run.stderr
        assert run.returncode == 0 and "1 passed" in out, out


def entry_points_txt():
    """The pytest11 entry points of python/pyproject.toml, as setuptools
    writes them to entry_points.txt."""
    text = (pathlib.Path(__file__).resolve().parent.parent / "pyproject.toml").read_text()
    section = text.split("[project.entry-points.pytest11]", 1)[1].split("\n[", 1)[0]
    lines = [ln.replace('"', "") for ln in section.strip().splitlines() if ln and not ln.startswith("#")]
    return "[pytest11]\n" + "\n".join(lines) + "\n"


ATTACH_TEST = '''
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic


def test_1_starts_clean(vastfake):
    assert vastfake.topics() == []  # the topic made before the session is reset away


def test_2_uses_the_running_broker(vastfake, kafka_bootstrap):
    assert kafka_bootstrap == vastfake.bootstrap
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic("orders", num_partitions=1, replication_factor=1)])["orders"].result(30)
    p = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": False})
    p.produce("orders", value=b"o")
    assert p.flush(30) == 0
'''


def test_plugin_attaches_to_a_running_broker(tmp_path, vastfake_bin):
    """With VASTFAKE_URL naming the control plane of a broker already
    running (a CI service, a container), the fixtures use it, reset it
    between tests, start no binary (the one on PATH fails if run) and leave
    it running."""
    token = "attach-secret"
    with vastfake.Broker(binary=vastfake_bin, profile="kafka", topics=["stale"], args=["-http-token", token]) as running:
        project = tmp_path / "project"
        project.mkdir()
        (project / "test_attach.py").write_text(ATTACH_TEST)
        fake = tmp_path / "fake-vastfake"
        fake.write_text("#!/bin/sh\necho 'the plugin started a binary' >&2\nexit 3\n")
        fake.chmod(0o755)
        os.environ["VASTFAKE_URL"], os.environ["VASTFAKE_HTTP_TOKEN"] = running.url, token
        try:
            run = run_pytest(project, str(fake))
        finally:
            del os.environ["VASTFAKE_URL"], os.environ["VASTFAKE_HTTP_TOKEN"]
        out = run.stdout + run.stderr
        assert run.returncode == 0 and "2 passed" in out, out
        assert running.running(), "the plugin left the broker it attached to running"
        assert [t.name for t in running.topics()] == ["orders"], "the tests ran against the running broker"
        assert running.end_offset("orders", 0) == 1

    # A URL nothing answers fails the session with what was tried.
    project = tmp_path / "nobody"
    project.mkdir()
    (project / "test_attach.py").write_text("def test_x(vastfake):\n    pass\n")
    os.environ["VASTFAKE_URL"] = "http://127.0.0.1:9/"
    try:
        run = run_pytest(project, vastfake_bin)
    finally:
        del os.environ["VASTFAKE_URL"]
    out = run.stdout + run.stderr
    assert run.returncode != 0 and "VASTFAKE_URL=http://127.0.0.1:9/: no vastfake answers GET /healthz" in out, out
