"""rmw_wait leading the links' loop (RMW_TRACER_WAIT_LEADS=1, docs/network.md section 4a, "The
waiting thread reads"), off by default for now: the same rclpy processes as the pub/sub and
service tests, with every process leading while it waits. A sample from another process is then
read and landed by the waiting thread itself; nothing may be lost, reordered or left waiting."""

from __future__ import annotations

import pytest

import test_pubsub
import test_service

CASES = [
    test_pubsub.test_rclpy_talker_listener_100_strings_in_order,
    test_pubsub.test_many_peers_two_publishing_processes_three_subscribers,
    test_pubsub.test_4_mib_messages_between_processes,
    test_pubsub.test_keep_all_reliable_burst_loses_nothing,
    test_pubsub.test_intra_process_between_two_nodes_of_one_context,
    test_service.test_service_between_two_processes,
    test_service.test_one_server_two_client_processes,
]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__.removeprefix("test_") for c in CASES])
def test_leading(tracer_env, case):
    case(dict(tracer_env, RMW_TRACER_WAIT_LEADS="1"))
