"""Hostile submissions: each ends in its documented status, scores nothing it should not,
and leaves no process and no file behind (the `graded` fixture audits the uid afterwards).
"""

from __future__ import annotations

import socket
import threading

import pytest

HEADER = "import json, os, sys, time\ninstance = json.load(sys.stdin)\n"


def answer(x: str) -> str:
    return f"print(json.dumps({{'x': {x}}}))\n"


@pytest.mark.slow
def test_fork_bomb(graded):
    report = graded(
        HEADER + "while True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    )
    assert report.statuses == ["timeout"] * 3 and report.reward == 0.0


@pytest.mark.slow
def test_memory_bomb(graded):
    report = graded(HEADER + "hoard = [bytearray(64 << 20) for _ in range(64)]\n" + answer("1"))
    assert report.statuses == ["memory"] * 3 and report.reward == 0.0


def test_output_flood(graded):
    report = graded(HEADER + "while True:\n    sys.stdout.write('x' * 65536)\n")
    assert report.statuses == ["output_limit"] * 3


def test_a_large_file_is_an_output_limit(graded):
    report = graded(HEADER + "open('big', 'wb').write(b'0' * (4 << 20))\n" + answer("1"))
    assert report.statuses == ["output_limit"] * 3


@pytest.mark.slow
def test_infinite_loop_and_sleep(graded):
    busy = graded(HEADER + "while True:\n    pass\n")
    idle = graded(HEADER + "time.sleep(60)\n")
    assert busy.statuses == idle.statuses == ["timeout"] * 3
    # A busy loop meets the CPU limit first, unless other load slows it past the wall clock.
    assert "CPU" in busy.cases[0].detail or "wall clock" in busy.cases[0].detail
    assert "wall clock" in idle.cases[0].detail


def test_a_daemon_that_escapes_the_session_is_killed(graded):
    report = graded(
        HEADER
        + "if os.fork() == 0:\n"
        + "    os.setsid()\n"
        + "    if os.fork() == 0:\n"
        + "        time.sleep(30)\n"
        + "        open('/tmp/atoll-daemon-was-here', 'w').write('late')\n"
        + "    os._exit(0)\n"
        + answer("0.5")
    )
    assert report.statuses == ["ok"] * 3 and report.reward == 0.5


def test_reading_the_private_directories_is_denied(graded, toy):
    probes = [toy / "tests" / "scorer.py", toy / "solution" / "secret.txt", toy / "tests"]
    report = graded(
        HEADER
        + f"paths = {[str(p) for p in probes]!r}\n"
        + "leaked = 0\n"
        + "for path in paths:\n"
        + "    try:\n"
        + "        os.listdir(path) if os.path.basename(path) == 'tests' else open(path).read()\n"
        + "        leaked += 1\n"
        + "    except OSError:\n"
        + "        pass\n"
        + answer("1 if leaked else 0.5")
    )
    assert report.scores == [0.5] * 3


def test_writing_outside_its_directory(graded, toy):
    targets = [toy / "tests" / "extra.py", toy / "out" / "reward.txt", toy / "solution" / "x"]
    report = graded(
        HEADER
        + f"targets = {[str(p) for p in targets]!r}\n"
        + "written = 0\n"
        + "for path in targets:\n"
        + "    try:\n"
        + "        open(path, 'w').write('1.0')\n"
        + "        written += 1\n"
        + "    except OSError:\n"
        + "        pass\n"
        + "open('mine.txt', 'w').write('its own directory is fine')\n"
        + "open('/tmp/atoll-stray-%d' % instance['case'], 'w').write('left behind')\n"
        + answer("1 if written else 0.5")
    )
    assert report.scores == [0.5] * 3
    assert float((toy / "out" / "reward.txt").read_text()) == 0.5  # the grader's own
    assert not (toy / "tests" / "extra.py").exists()


def test_opening_a_socket_reaches_nothing(graded):
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    accepted: list[object] = []
    server.settimeout(0.2)

    def accept() -> None:
        while not stop.is_set():
            try:
                accepted.append(server.accept())
            except TimeoutError:
                continue

    stop = threading.Event()
    thread = threading.Thread(target=accept)
    thread.start()
    try:
        report = graded(
            HEADER
            + "import socket\n"
            + "try:\n"
            + f"    socket.create_connection(('127.0.0.1', {port}), timeout=0.5)\n"
            + "    reached = True\n"
            + "except OSError:\n"
            + "    reached = False\n"
            + answer("1 if reached else 0.5")
        )
    finally:
        stop.set()
        thread.join()
        server.close()
    assert report.scores == [0.5] * 3 and accepted == []
    assert report.isolation["network_namespace"] is True  # root on a host: a fresh netns


def test_privileges_cannot_be_regained(graded):
    report = graded(
        HEADER
        + "denied = 0\n"
        + "for attempt in (lambda: os.setuid(0), lambda: os.kill(os.getppid(), 9),\n"
        + "                lambda: os.kill(1, 9), lambda: open('/proc/1/environ').read()):\n"
        + "    try:\n"
        + "        attempt()\n"
        + "    except OSError:\n"
        + "        denied += 1\n"
        + answer("0.5 if denied == 4 else 1")
    )
    assert report.scores == [0.5] * 3


def test_nan_infinity_and_strings_are_not_numbers(graded):
    report = graded(
        HEADER
        + "sys.stdout.write(['{\"x\": NaN}', '{\"x\": Infinity}', '{\"x\": \"0.9\"}'][instance['case']])\n"
    )
    assert report.statuses == ["malformed", "malformed", "infeasible"]
    assert report.reward == 0.0


@pytest.mark.parametrize(
    ("stdout", "why"),
    [
        ("", "empty"),
        ("[1, 2]", "not an object"),
        ('{"x": 0.5} {"x": 0.5}', "not one JSON value"),
        ("'{\"x\": ' + '[' * 100 + ']' * 100 + '}'", "deeper than 64"),
        ("'{\"x\": ' + '[' * 20000 + ']' * 20000 + '}'", "too deeply"),
        ("\\xff\\xfe", "not UTF-8"),
    ],
    ids=["empty", "list", "two-values", "deep", "deeper", "binary"],
)
def test_malformed_stdout(graded, stdout, why):
    writer = "sys.stdout.buffer.write" if "xff" in stdout else "sys.stdout.write"
    if "xff" in stdout:
        literal = f"b'{stdout}'"
    elif "* " in stdout:
        literal = stdout  # an expression, evaluated by the submission
    else:
        literal = repr(stdout)
    report = graded(HEADER + f"{writer}({literal})\n")
    assert report.statuses == ["malformed"] * 3
    assert why in report.cases[0].detail


def test_crashes(graded):
    report = graded(
        HEADER
        + "case = instance['case']\n"
        + "if case == 0:\n    sys.exit(3)\n"
        + "if case == 1:\n    raise ValueError('no idea')\n"
        + "os.kill(os.getpid(), 9)\n"
    )
    assert report.statuses == ["crash"] * 3
    assert "exit status 3" in report.cases[0].detail
    assert "ValueError: no idea" in report.cases[1].detail
    assert "SIGKILL" in report.cases[2].detail


def test_stderr_noise_is_cut_not_fatal(graded):
    report = graded(HEADER + "sys.stderr.write('noise ' * 200000)\n" + answer("0.5"))
    assert report.statuses == ["ok"] * 3 and report.reward == 0.5


def test_an_output_that_ignores_stdin(graded):
    report = graded("import json\nprint(json.dumps({'x': 0.25}))\n")
    assert report.scores == [0.25] * 3


def _grade_copy(args: tuple[str, str]) -> tuple[list[str], int]:
    """Grade `source` on a fresh copy of the toy task (in a separate process)."""
    import shutil
    import tempfile
    from pathlib import Path

    from atoll.checker import grade_task

    toy, source = args
    base = Path(tempfile.mkdtemp(prefix="atoll-checker-test-", dir="/tmp"))
    try:
        shutil.copytree(toy, base / "toy")
        (base / "solution.py").write_text(source)
        report = grade_task(base / "toy", base / "solution.py")
        return report.statuses, report.isolation["uid"]
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.slow
def test_gradings_side_by_side_do_not_meet(toy):
    """A fork bomb graded next to a slow honest program neither kills it nor starves it."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    bomb = HEADER + "while True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    honest = HEADER + "time.sleep(0.6)\nfrom multiprocessing import Process\n" + answer("0.5")
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        bombed, calm = pool.map(_grade_copy, [(str(toy), bomb), (str(toy), honest)])
    assert bombed[0] == ["timeout"] * 3
    assert calm[0] == ["ok"] * 3
    assert bombed[1] != calm[1]


def test_each_grading_draws_its_own_uid():
    """Two gradings started together (no process of either yet) still get different uids."""
    import pwd

    from atoll.checker.grader import SANDBOX_IDS, choose_sandbox_id

    drawn = [choose_sandbox_id() for _ in range(20)]
    assert len(set(drawn)) == 20
    assert all(uid in SANDBOX_IDS for uid in drawn)
    assert not {entry.pw_uid for entry in pwd.getpwall()} & set(drawn)
