"""Run vastfake, an in-memory Kafka broker that behaves like VAST Event
Broker 5.5, from Python tests.

    import vastfake

    with vastfake.Broker(topics=["orders:3"]) as broker:
        # broker.bootstrap is "127.0.0.1:<port>" for any Kafka client
        ...
        broker.wait_committed("billing", "orders", 0, 6)
        broker.assert_no_refusals()

Broker starts the vastfake binary on free ports and is a Client of its HTTP
control plane: topics, records, groups with lag, rebalances, the request log
and the VAST rule behind each refusal, audit findings, faults, latency,
dropped connections, failover, restart, reset, the stale end offset, the
manual clock, compaction and offset gaps, with assertions and waits.
Installed, the package is also a pytest plugin (fixtures ``vastfake``,
``vastfake_broker`` and ``kafka_bootstrap``; see vastfake.pytest_plugin).
"""

from .broker import Broker, find_binary
from .client import Client, Duration, go_duration
from .errors import (BinaryNotFoundError, BrokerDiedError, ControlPlaneError, PortInUseError, StartError,
                     VastfakeError, WaitTimeout, WaitTimeoutError)
from .types import (AcquiredRecords, BrokerInfo, Clock, Compaction, ErrorCount, FetchPartition, GroupsCreated, Finding, Group, GroupPartition, Health, Member, Partition, Rebalance,
                    RebalanceMember, Record, Request, SharePartition, Topic, Transaction)

__version__ = "0.1.0"

__all__ = [
    "Broker", "Client", "Duration", "find_binary", "go_duration",
    "BinaryNotFoundError", "BrokerDiedError", "ControlPlaneError", "PortInUseError", "StartError", "VastfakeError",
    "WaitTimeoutError", "WaitTimeout",
    "AcquiredRecords", "BrokerInfo", "Clock", "Compaction", "ErrorCount", "FetchPartition", "Finding", "Group", "GroupsCreated", "GroupPartition", "Health", "Member", "Partition", "Rebalance",
    "RebalanceMember", "Record", "Request", "SharePartition", "Topic", "Transaction",
]
