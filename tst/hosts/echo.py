"""A UDP echo and a TCP listener, and probes of both, to show what the tier's network does to packets.

- `python -m tst.hosts.echo serve ADDRESS PORT` echoes UDP datagrams and accepts TCP connections on ADDRESS:PORT;
- `python -m tst.hosts.echo probe ADDRESS PORT COUNT` sends COUNT numbered datagrams 5 ms apart and prints a JSON
  line: how many were sent and each echo's round trip in seconds (an echo that never comes has none);
- `python -m tst.hosts.echo connect ADDRESS PORT SECONDS` tries one TCP connection and prints how it ended.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from typing import Any

SPACING = 0.005
"""Seconds between two datagrams of a probe."""
LAST_ECHO_WAIT = 2.0
"""Seconds a probe waits for echoes after its last datagram."""


def serve(address: str, port: int) -> None:
    datagrams = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    datagrams.bind((address, port))
    listener = socket.create_server((address, port))
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            accepted.append(listener.accept()[0])

    threading.Thread(target=accept, daemon=True).start()
    print("ready", flush=True)
    while True:
        data, sender = datagrams.recvfrom(2048)
        datagrams.sendto(data, sender)


def probe(address: str, port: int, count: int) -> dict[str, Any]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(LAST_ECHO_WAIT)
    sent: dict[int, float] = {}
    round_trips: dict[int, float] = {}

    def receive() -> None:
        while True:
            try:
                data = sock.recv(2048)
            except TimeoutError:
                if len(sent) == count:
                    return
                continue
            index = int(data)
            round_trips.setdefault(index, time.monotonic() - sent[index])

    receiver = threading.Thread(target=receive)
    receiver.start()
    for index in range(count):
        sent[index] = time.monotonic()
        sock.sendto(str(index).encode(), (address, port))
        time.sleep(SPACING)
    receiver.join()
    return {"sent": count, "round_trips": list(round_trips.values())}


def connect(address: str, port: int, seconds: float) -> dict[str, Any]:
    started = time.monotonic()
    try:
        socket.create_connection((address, port), timeout=seconds).close()
        outcome = "connected"
    except OSError as error:
        outcome = type(error).__name__
    return {"outcome": outcome, "seconds": time.monotonic() - started}


if __name__ == "__main__":
    command, address, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if command == "serve":
        serve(address, port)
    elif command == "probe":
        print(json.dumps(probe(address, port, int(sys.argv[4]))))
    else:
        print(json.dumps(connect(address, port, float(sys.argv[4]))))
