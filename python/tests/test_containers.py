"""vastfake.containers against a container engine (DOCKER_HOST, or Docker's
socket) and the image (VASTFAKE_IMAGE, else vastfake:latest), with the
Confluent client through the mapped ports; containers/test.sh runs it with
podman. Without an engine or the image it skips, unless CI is set."""

import json
import os
import urllib.parse
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer

import vastfake
from vastfake.containers import DockerError, VastfakeContainer, _Engine

from test_plugin import run_pytest

RUN = os.environ.get("VASTFAKE_TEST_RUN") or "py-" + uuid.uuid4().hex[:8]
LABELS = {"vastfake.test-run": RUN}


def engine_or_skip():
    try:
        engine = _Engine()
        image = os.environ.get("VASTFAKE_IMAGE") or "vastfake:latest"
        engine.call("GET", "/images/%s/json" % image)
        return engine
    except DockerError as e:
        if os.environ.get("CI"):
            raise
        pytest.skip("needs a container engine and the image: %s" % e)


@pytest.fixture(scope="module")
def engine():
    return engine_or_skip()


def ours(engine):
    """The containers of this run still there."""
    filters = urllib.parse.quote(json.dumps({"label": ["vastfake.test-run=" + RUN]}))
    return engine.json("GET", "/containers/json?all=1&filters=" + filters)


def test_produce_consume_and_a_fault(engine):
    with VastfakeContainer(topics=["orders:3"], profile="kafka", labels=LABELS) as kafka:
        bootstrap = kafka.get_bootstrap_server()
        assert bootstrap == kafka.bootstrap == "%s:%d" % (kafka.get_container_host_ip(), kafka.get_exposed_port(9092))
        assert kafka.advertised() == [bootstrap], "Metadata sends clients to the mapped port"
        p = Producer({"bootstrap.servers": bootstrap})
        for i in range(3):
            p.produce("orders", value=b"order-%d" % i, partition=0)
        assert p.flush(30) == 0
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "billing", "auto.offset.reset": "earliest",
                      "enable.auto.commit": False})
        try:
            c.subscribe(["orders"])
            got = []
            while len(got) < 3:
                m = c.poll(10)
                assert m is not None, "no record within 10 s; got %r" % got
                if m.error():
                    raise KafkaException(m.error())
                got.append(m.value())
                c.commit(m, asynchronous=False)
        finally:
            c.close()
        assert sorted(got) == [b"order-0", b"order-1", b"order-2"]
        kafka.wait_committed("billing", "orders", 0, 3)
        # A fault through the control plane: the producer retries past it.
        kafka.inject_fault(api="Produce", err="NOT_LEADER_FOR_PARTITION", count=1, topic="orders")
        p.produce("orders", value=b"order-3", partition=0)
        assert p.flush(30) == 0
        assert any(r.fault for r in kafka.requests(api="Produce")), "the injected fault answered a Produce"
        assert kafka.end_offset("orders", 0) == 4
        cid = kafka.id
    assert ours(engine) == [], "leaving the with removed container %s" % cid
    with pytest.raises(vastfake.VastfakeError, match="stopped"):
        kafka.topics()


def test_a_bad_flag_is_a_start_error_and_leaves_nothing(engine):
    with pytest.raises(vastfake.StartError) as e:
        with VastfakeContainer(args=["-profile", "strict"], labels=LABELS):
            pass
    assert "exited with code 2" in str(e.value)
    assert '-profile (VASTFAKE_PROFILE): "strict"' in str(e.value), str(e.value)
    assert ours(engine) == []


def test_an_image_it_cannot_get_says_how_to_get_it(engine):
    """An image the engine lacks is pulled, as Testcontainers does; one no
    registry has is an error that says how to get it, and leaves nothing."""
    image = "localhost:1/vastfake-absent-%s:none" % RUN.lower()
    with pytest.raises(DockerError) as e:
        with VastfakeContainer(image, labels=LABELS):
            pass
    assert "image %s: the engine does not have it and could not pull it" % image in str(e.value), str(e.value)
    assert "docker load -i" in str(e.value)
    assert ours(engine) == []


def test_token_and_several_brokers(engine):
    with VastfakeContainer(brokers=3, token="s3cret", labels=LABELS) as kafka:
        assert len(kafka.addresses) == 3 and kafka.advertised() == kafka.addresses
        assert [b.id for b in kafka.brokers()] == [0, 1, 2]
        with pytest.raises(vastfake.ControlPlaneError) as e:
            vastfake.Client(kafka.url).topics()
        assert e.value.status == 401
    assert ours(engine) == []


def test_the_pytest_plugin_attaches_to_the_container(engine, tmp_path, vastfake_bin):
    """VASTFAKE_URL names the container's control plane: the plugin's
    fixtures use it, as a CI job with vastfake as a service does."""
    with VastfakeContainer(profile="kafka", labels=LABELS) as kafka:
        project = tmp_path / "project"
        project.mkdir()
        (project / "test_app.py").write_text(
            "def test_app(vastfake, kafka_bootstrap):\n"
            "    assert kafka_bootstrap == %r\n"
            "    assert vastfake.topics() == []\n" % kafka.bootstrap)
        os.environ["VASTFAKE_URL"] = kafka.url
        try:
            run = run_pytest(project, vastfake_bin)
        finally:
            del os.environ["VASTFAKE_URL"]
        out = run.stdout + run.stderr
        assert run.returncode == 0 and "1 passed" in out, out
    assert ours(engine) == []
