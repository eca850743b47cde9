"""Delay every packet of a netfilter queue by a fixed time, as `tc netem delay` would: this kernel has no netem.

Run inside a network namespace (`python -m tst.hosts.delay QUEUE SECONDS`), after which iptables rules in that
namespace send packets to queue QUEUE with `-j NFQUEUE --queue-num QUEUE`. Each packet waits in the kernel while this
process holds its verdict, then goes on unchanged (`NF_ACCEPT`), in the order it arrived: a real per-packet delay
on the path, ACKs and retransmissions included, not a proxy that ends the connection. Only the packet's metadata
crosses to this process (`NFQNL_COPY_META`), never its payload.

It speaks nfnetlink_queue over a raw netlink socket (no library: `include/uapi/linux/netfilter/nfnetlink_queue.h`),
prints `ready` once bound, and ends on SIGTERM. Without this process, packets sent to the queue are dropped (the
rules carry no `--queue-bypass`): a delay that silently stopped delaying would prove nothing.
"""

from __future__ import annotations

import collections
import select
import signal
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET, NFQNL_MSG_CONFIG, NFQNL_MSG_VERDICT_BATCH = 0, 2, 3
NFQA_PACKET_HDR = 1
NFQA_VERDICT_HDR = 2
NFQA_CFG_CMD, NFQA_CFG_PARAMS, NFQA_CFG_QUEUE_MAXLEN = 1, 2, 3
NFQNL_CFG_CMD_BIND = 1
NFQNL_COPY_META = 1
NF_ACCEPT = 1
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NLMSG_ERROR = 2
QUEUE_LENGTH = 65536
"""Packets the kernel may hold for this queue: past it, it drops them, which would add loss nobody asked for."""


def attribute(kind: int, payload: bytes) -> bytes:
    """One netlink attribute, padded to 4 bytes."""
    header = struct.pack("=HH", 4 + len(payload), kind)
    return header + payload + b"\0" * (-len(payload) % 4)


def message(kind: int, queue: int, payload: bytes, flags: int = NLM_F_REQUEST) -> bytes:
    """One nfnetlink message to the queue subsystem: netlink header, nfgenmsg (AF_UNSPEC, v0, queue), attributes."""
    body = struct.pack("=BBH", socket.AF_UNSPEC, 0, socket.htons(queue)) + payload
    return struct.pack("=IHHII", 16 + len(body), (NFNL_SUBSYS_QUEUE << 8) | kind, flags, 0, 0) + body


def configure(sock: socket.socket, queue: int, payload: bytes) -> None:
    """Send one config message and wait for the kernel's acknowledgement; raise what it refused."""
    sock.send(message(NFQNL_MSG_CONFIG, queue, payload, NLM_F_REQUEST | NLM_F_ACK))
    answer = sock.recv(65536)
    _, kind = struct.unpack_from("=IH", answer)
    if kind == NLMSG_ERROR:
        (error,) = struct.unpack_from("=i", answer, 16)
        if error != 0:
            raise OSError(-error, f"nfnetlink_queue refused the configuration of queue {queue}")


def packet_ids(data: bytes) -> list[int]:
    """The packet ids of every queued-packet message in one netlink read."""
    ids: list[int] = []
    offset = 0
    while offset + 16 <= len(data):
        length, kind = struct.unpack_from("=IH", data, offset)
        if length < 16:
            break
        if kind == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
            position, end = offset + 20, offset + length  # past nlmsghdr and nfgenmsg
            while position + 4 <= end:
                size, attr = struct.unpack_from("=HH", data, position)
                if size < 4:
                    break
                if attr & 0x7FFF == NFQA_PACKET_HDR:
                    ids.append(struct.unpack_from("!I", data, position + 4)[0])
                position += (size + 3) & ~3
        offset += (length + 3) & ~3
    return ids


def run(queue: int, delay: float) -> None:
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    sock.setsockopt(
        socket.SOL_SOCKET, 33, 16 * 1024 * 1024
    )  # SO_RCVBUFFORCE: no message lost to a full buffer
    sock.bind((0, 0))
    configure(sock, queue, attribute(NFQA_CFG_CMD, struct.pack("!BBH", NFQNL_CFG_CMD_BIND, 0, 0)))
    configure(sock, queue, attribute(NFQA_CFG_PARAMS, struct.pack("!IB", 0, NFQNL_COPY_META)))
    configure(sock, queue, attribute(NFQA_CFG_QUEUE_MAXLEN, struct.pack("!I", QUEUE_LENGTH)))
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    print("ready", flush=True)
    held: collections.deque[tuple[float, int]] = collections.deque()
    while not stopping:
        wait = max(held[0][0] - time.monotonic(), 0.0) if held else 1.0
        try:
            readable, _, _ = select.select([sock], [], [], wait)
        except InterruptedError:
            continue
        if readable:
            arrived = time.monotonic()
            held.extend((arrived + delay, packet) for packet in packet_ids(sock.recv(1 << 20)))
        now, last = time.monotonic(), None
        while held and held[0][0] <= now:
            last = held.popleft()[1]
        if last is not None:  # packets arrive in id order and wait alike: one verdict frees all up to `last`
            verdict = attribute(NFQA_VERDICT_HDR, struct.pack("!II", NF_ACCEPT, last))
            sock.send(message(NFQNL_MSG_VERDICT_BATCH, queue, verdict))


if __name__ == "__main__":
    run(int(sys.argv[1]), float(sys.argv[2]))
