"""A userspace stand-in for ``tc netem``: a two-port Ethernet bridge that delays every frame by a
fixed time and drops a share of the IPv4 frames, each way. The kernel of the test machines has no
``sch_netem`` qdisc, so a shaped link is veth -> this bridge -> veth, run in a namespace of its
own between the two hosts (``ros_tests/two_hosts.py``). Not collected by pytest.

    link_shaper.py IF1 IF2 --loss 0.05 --delay 0.02 --seconds 300 [--seed 7]

A fixed delay keeps each direction in order, as netem does without jitter. Only IPv4 frames are
dropped (ARP is left alone so that addresses resolve). The random draws are seeded, so a run
drops the same frames of the same sequence. Prints "shaping" once both ports are open, and on
exit (SIGTERM, or after --seconds) one line: frames forwarded and dropped.
"""

from __future__ import annotations

import argparse
import heapq
import random
import select
import signal
import socket
import sys
import time

ETH_P_ALL = 0x0003
ETHERTYPE_IPV4 = b"\x08\x00"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("ports", nargs=2)
    p.add_argument("--loss", type=float, default=0.0)
    p.add_argument("--delay", type=float, default=0.0)
    p.add_argument("--seconds", type=float, default=300.0)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()

    socks = []
    for name in args.ports:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
        s.bind((name, 0))
        s.setblocking(False)
        socks.append(s)
    other = {socks[0].fileno(): socks[1], socks[1].fileno(): socks[0]}
    rng = random.Random(args.seed)
    due: list[tuple[float, int, socket.socket, bytes]] = []
    n = forwarded = dropped = 0
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    end = time.monotonic() + args.seconds
    print("shaping", flush=True)
    while not stop and time.monotonic() < end:
        now = time.monotonic()
        while due and due[0][0] <= now:
            _, _, out, frame = heapq.heappop(due)
            try:
                out.send(frame)
                forwarded += 1
            except OSError:
                dropped += 1
        wait = min(0.2, max(0.0, due[0][0] - now)) if due else 0.2
        ready, _, _ = select.select(socks, [], [], wait)
        for s in ready:
            while True:
                try:
                    frame, addr = s.recvfrom(65536)
                except BlockingIOError:
                    break
                if addr[2] == socket.PACKET_OUTGOING:
                    continue  # our own send on this port
                if frame[12:14] == ETHERTYPE_IPV4 and rng.random() < args.loss:
                    dropped += 1
                    continue
                n += 1
                heapq.heappush(due, (time.monotonic() + args.delay, n, other[s.fileno()], frame))
    print(f"forwarded {forwarded} dropped {dropped}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
