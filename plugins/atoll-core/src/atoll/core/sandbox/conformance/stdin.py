"""Checks of `stdin_seekable`: the program's stdin is a read-only file, not a pipe.

A judge that copies a case's input into a file lets programs size their
input with `fstat` or `seekg`/`tellg`, map it, and seek about it; a backend
that hands them a pipe instead makes such a program fail where the judge it
stands in for scores it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os

from atoll.core.sandbox.conformance.limits import py
from atoll.core.sandbox.conformance.suite import Box, describe, expect

# Reports what descriptor 0 is and what every way of reading it sees, then tries to change it.
PROBE = py(
    "import hashlib, mmap, os, stat\n"
    "digest = lambda data: hashlib.sha256(data).hexdigest()\n"
    "def read_all():\n"
    "    data = b''\n"
    "    while chunk := os.read(0, 1 << 16):\n"
    "        data += chunk\n"
    "    return data\n"
    "st = os.fstat(0)\n"
    "print('kind', 'file' if stat.S_ISREG(st.st_mode) else 'other')\n"
    "print('size', st.st_size)\n"
    "print('end', os.lseek(0, 0, os.SEEK_END))\n"
    "os.lseek(0, 0, os.SEEK_SET)\n"
    "print('read', digest(read_all()))\n"
    "os.lseek(0, st.st_size // 2, os.SEEK_SET)\n"
    "print('half', digest(read_all()))\n"
    "if st.st_size:\n"
    "    with mmap.mmap(0, 0, prot=mmap.PROT_READ) as mapped:\n"
    "        print('mmap', digest(mapped[:]))\n"
    "def write_fd():\n"
    "    os.write(0, b'changed')\n"
    "def write_reopened():\n"
    "    fd = os.open('/proc/self/fd/0', os.O_WRONLY)\n"
    "    os.write(fd, b'changed')\n"
    "def truncate():\n"
    "    os.ftruncate(0, 1)\n"
    "for name, attempt in (('write', write_fd), ('reopen', write_reopened), ('truncate', truncate)):\n"
    "    try:\n"
    "        attempt()\n"
    "        print(name, 'allowed')\n"
    "    except OSError:\n"
    "        print(name, 'refused')\n"
    "os.lseek(0, 0, os.SEEK_SET)\n"
    "print('after', digest(read_all()))\n"
)


def _expected(data: bytes) -> list[str]:
    whole = hashlib.sha256(data).hexdigest()
    lines = [
        "kind file",
        f"size {len(data)}",
        f"end {len(data)}",
        f"read {whole}",
        f"half {hashlib.sha256(data[len(data) // 2 :]).hexdigest()}",
    ]
    if data:
        lines.append(f"mmap {whole}")
    return [*lines, "write refused", "reopen refused", "truncate refused", f"after {whole}"]


def stdin_seekable(box: Box) -> None:
    """With `stdin_seekable`, fstat, lseek and mmap of fd 0 see exactly the input; none can change it."""
    spec = dataclasses.replace(box.spec, stdin_seekable=True)
    for data in (os.urandom(300_000), b""):
        result = box.run(PROBE, spec, stdin=data)
        expect(result.ok, f"{len(data)} bytes of seekable stdin: {describe(result)}")
        seen = result.stdout.decode(errors="replace").splitlines()
        wrong = [line for line in _expected(data) if line not in seen]
        expect(
            not wrong,
            f"{len(data)} bytes of seekable stdin: not seen: {'; '.join(wrong)}; "
            f"seen: {'; '.join(seen)}",
        )
