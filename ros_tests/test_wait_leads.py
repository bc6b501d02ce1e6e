"""rmw_wait without leading the links' loop (RMW_TRACER_WAIT_LEADS=0, docs/network.md section 4a,
"The waiting thread reads"). Leading is the default, so the whole suite runs with every waiting
thread reading and landing what comes itself; this runs the rclpy pub/sub, service and Ctrl-C
cases again with the way it replaces: the wait sleeps on its futex and the links' thread hands
it each sample. Nothing may be lost, reordered or left waiting either way. The C API's waits
(tracer_subscription_wait, tracer_wait) lead the same way by default: its cases that block in
them run here again too."""

from __future__ import annotations

import pytest

import test_capi
import test_pubsub
import test_service
import test_shutdown
from test_capi import keep_all_program, programs, service_program  # noqa: F401 (fixtures)


def sigint_to_multithreaded_publishers(env):
    test_shutdown.test_sigint_at_many_moments(env, "pub", "multi")


CASES = [
    test_pubsub.test_rclpy_talker_listener_100_strings_in_order,
    test_pubsub.test_many_peers_two_publishing_processes_three_subscribers,
    test_pubsub.test_4_mib_messages_between_processes,
    test_pubsub.test_keep_all_reliable_burst_loses_nothing,
    test_pubsub.test_intra_process_between_two_nodes_of_one_context,
    test_service.test_service_between_two_processes,
    test_service.test_one_server_two_client_processes,
    sigint_to_multithreaded_publishers,
]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__.removeprefix("test_") for c in CASES])
def test_not_leading(tracer_env, case):
    case(dict(tracer_env, RMW_TRACER_WAIT_LEADS="0"))


# The C API cases, each with the fixture (a compiled C program) it takes after the environment.
CAPI_CASES = [
    (test_capi.test_rclpy_publisher_to_c_subscriber, "programs"),
    (test_capi.test_one_wait_over_two_subscriptions_and_a_server, "service_program"),
    (test_capi.test_slow_c_keep_all_subscription_holds_back_an_rclpy_publisher, "keep_all_program"),
]


@pytest.mark.parametrize("case,fixture", CAPI_CASES,
                         ids=[c.__name__.removeprefix("test_") for c, _ in CAPI_CASES])
def test_c_api_not_leading(request, tracer_env, case, fixture):
    case(dict(tracer_env, RMW_TRACER_WAIT_LEADS="0"), request.getfixturevalue(fixture))
