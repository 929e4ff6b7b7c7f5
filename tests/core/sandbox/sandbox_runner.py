"""A process that runs sandboxes back to back from four threads until it is killed.

`sandbox_runner.py UID` runs each in a fresh box; `sandbox_runner.py UID session` runs
them in one session per thread (opened by that thread), through its launcher server.
"""

from __future__ import annotations

import sys
import threading

from atoll.core.sandbox import Limits, SandboxSpec, get_backend


def main(uid: int, sessions: bool) -> None:
    backend = get_backend("bwrap")
    backend.check()
    spec = SandboxSpec(
        uid=uid,
        gid=uid,
        limits=Limits(wall_seconds=0.05, memory_bytes=64 * 2**20, processes=8, cpu_seconds=5),
    )

    def loop() -> None:
        if sessions:
            with backend.session(spec) as session:
                while True:
                    session.run(["/bin/sleep", "1000"])
        while True:
            backend.run(["/bin/sleep", "1000"], spec)

    for _ in range(4):
        threading.Thread(target=loop, daemon=True).start()
    print("running", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2:] == ["session"])
