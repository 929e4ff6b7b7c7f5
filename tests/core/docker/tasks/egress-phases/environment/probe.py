"""Connect to the host listener via the default gateway; print reached or blocked.

Usage: python3 probe.py TOKEN. The port comes from $PROBE_PORT; the token tells
the listener which phase connected.
"""

import os
import socket
import struct
import sys
import time


def gateway() -> str:
    with open("/proc/net/route") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            if fields[1] == "00000000":
                return socket.inet_ntoa(struct.pack("<L", int(fields[2], 16)))
    raise SystemExit("no default route")


began = time.monotonic()
try:
    with socket.create_connection((gateway(), int(os.environ["PROBE_PORT"])), timeout=8) as conn:
        conn.sendall(sys.argv[1].encode() + b"\n")
        conn.recv(16)
    print("reached", round(time.monotonic() - began, 3))
except OSError as exc:
    print("blocked", type(exc).__name__, round(time.monotonic() - began, 3))
