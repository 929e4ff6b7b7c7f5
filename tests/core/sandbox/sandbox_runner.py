"""A process that runs sandboxes back to back from four threads until it is killed."""

from __future__ import annotations

import sys
import threading

from atoll.core.sandbox import Limits, SandboxSpec, get_backend


def main(uid: int) -> None:
    backend = get_backend("bwrap")
    backend.check()
    spec = SandboxSpec(
        uid=uid,
        gid=uid,
        limits=Limits(wall_seconds=0.05, memory_bytes=64 * 2**20, processes=8, cpu_seconds=5),
    )

    def loop() -> None:
        while True:
            backend.run(["/bin/sleep", "1000"], spec)

    for _ in range(4):
        threading.Thread(target=loop, daemon=True).start()
    print("running", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main(int(sys.argv[1]))
