"""The polyomino_packing task directory: Harbor accepts it, the harness can read
it, the registry finds it, and what it tells the agent agrees with the judge.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from harbor.models.task.config import NetworkMode
from harbor.models.task.task import Task
from support import ci
from support.judge_reference import ratio, score

from atoll.core import names
from atoll.core.records import Kind
from atoll.core.registry import load
from atoll.guidance_ttt.contract import Direction, Language, load_task
from atoll.judge.checkers.polyomino import check, prepare
from atoll.judge.compiler import FLAGS
from atoll.judge.plugin import task_dir as registered_task_dir
from atoll.judge.problems import load_problems

DAY = 86_400


def test_harbor_loads_the_task(task_dir: Path) -> None:
    task = Task(task_dir)
    config = task.config
    assert task.name == "atoll/polyomino_packing"
    assert config.agent.timeout_sec is not None and config.agent.timeout_sec >= 7 * DAY
    assert config.verifier.timeout_sec >= 1800
    assert config.verifier.env == {}  # nothing from the host: the judge is behind the socket
    assert config.environment.workdir == "/workspace"
    assert config.environment.cpus and config.environment.memory_mb
    # The verifier reaches the judge through its socket and nothing else;
    # an in-trial agent keeps the network for its model (README, "Network").
    assert config.environment.network_mode is NetworkMode.PUBLIC
    assert config.agent.explicit_phase_policy() is None
    verifier_policy = config.verifier.explicit_phase_policy()
    assert verifier_policy is not None
    assert verifier_policy.network_mode is NetworkMode.NO_NETWORK
    assert task.paths.discovered_test_path is not None
    assert task.paths.discovered_solve_path is not None


def test_environment_mounts_the_judge_socket_and_leaves_the_network_to_harbor(
    task_dir: Path,
) -> None:
    from atoll.core.environments import compose_volumes

    dockerfile = (task_dir / "environment" / "Dockerfile").read_text()
    assert dockerfile.splitlines()[2] == "FROM atoll/base:bookworm"
    assert "WORKDIR /workspace" in dockerfile
    assert "ENV FRONTIERCS_JUDGE_SOCKET=/run/frontiercs-judge/judge.sock" in dockerfile
    compose_path = task_dir / "environment" / "docker-compose.yaml"
    main = yaml.safe_load(compose_path.read_text())["services"]["main"]
    # Harbor routes a service through its egress control only without a network_mode of its own.
    assert "network_mode" not in main and "networks" not in main
    (bind,) = compose_volumes.parse(compose_path).binds
    assert (bind.target, bind.read_only) == ("/run/frontiercs-judge", True)
    source, _ = compose_volumes.resolve(
        bind, compose_path.parent, {"FRONTIERCS_JUDGE_SOCKET_DIR": str(task_dir)}
    )
    assert source == task_dir
    with pytest.raises(compose_volumes.ComposeVolumeError, match="FRONTIERCS_JUDGE_SOCKET_DIR"):
        compose_volumes.resolve(bind, compose_path.parent, {})
    # Neither the tests nor the seed may be baked into the image.
    assert not re.search(r"^\s*(COPY|ADD)\b", dockerfile, re.M)


def test_contract_validates_against_the_harness_schema(task_dir: Path) -> None:
    task = load_task(task_dir)
    contract = task.contract
    assert contract.solution_language is Language.CPP
    assert contract.score_direction is Direction.MAX
    assert contract.judge_problem_id == "0"
    assert "C++17" in contract.solution_contract
    # The judge's own flags, named as it runs them: the contract may not promise others.
    assert f"(compiled with g++ {' '.join(FLAGS)})" in contract.solution_contract
    assert "standard input" in contract.solution_contract
    assert "/workspace/solution.cpp" in task.statement


def test_seed_record_matches_its_program(task_dir: Path, recorded: dict[str, Any]) -> None:
    source = (task_dir / "solution" / "solution.cpp").read_bytes()
    assert recorded["program_sha256"] == hashlib.sha256(source).hexdigest()
    assert recorded["judge_problem_id"] == "0"
    assert recorded["status"] == "valid"
    ratios = recorded["ratios"]
    assert len(ratios) == recorded["cases"] == recorded["valid_cases"] == 70
    assert recorded["score"] == pytest.approx(100 * sum(ratios) / len(ratios), abs=1e-9)
    assert recorded["score"] == pytest.approx(27.810517627, abs=1e-9)  # the authority's value
    assert (min(ratios), max(ratios)) == (recorded["ratio_min"], recorded["ratio_max"])
    summary = (task_dir / "solution" / "summary.txt").read_text().strip()
    assert summary and "```" not in summary and "#include" not in summary


def test_the_seed_score_is_what_the_published_rules_give_its_outputs(
    task_dir: Path, recorded: dict[str, Any], tmp_path: Path
) -> None:
    """task.toml's seed_score and result.json were recorded by atoll's judge; here they are
    held to FrontierCS's rules instead (tests/support/judge_reference.py, which cites them):
    the seed built with plain g++, run on each of problem 0's 70 inputs outside the judge,
    each output scored by the reference checker, the ratios averaged as the authority's
    judge averages them."""
    ci.gxx_fixture()
    binary = tmp_path / "seed"
    source = task_dir / "solution" / "solution.cpp"
    subprocess.run(["g++", *FLAGS, str(source), "-o", str(binary)], check=True, timeout=120)
    problem = load_problems()["0"]
    ratios = []
    for case in problem.cases:
        with case.input.open("rb") as stdin:  # a file, as the authority gives it
            out = subprocess.run([binary], stdin=stdin, capture_output=True, check=True, timeout=60)
        ratios.append(ratio(case.input.read_text(), out.stdout.decode()))
    assert len(ratios) == 70 and all(r > 0 for r in ratios)  # every case valid
    assert recorded["ratios"] == ratios
    seed_score = tomllib.loads((task_dir / "task.toml").read_text())["metadata"]["seed_score"]
    assert seed_score == recorded["score"] == recorded["raw_score"]
    # The authority adds the ratios left to right, atoll's judge with Python's sum (which
    # compensates): the two floats may differ in their last bits (here by 1.4e-14), no more.
    assert seed_score == pytest.approx(score(ratios), rel=0, abs=1e-12)


def test_solve_script_installs_the_seed_as_the_workspace_solution(task_dir: Path) -> None:
    solve = (task_dir / "solution" / "solve.sh").read_text()
    assert "/workspace/solution.cpp" in solve
    assert (task_dir / "solution" / "solve.sh").stat().st_mode & 0o111
    assert (task_dir / "tests" / "test.sh").stat().st_mode & 0o111


def _fenced_blocks(markdown: str, heading: str) -> list[str]:
    section = markdown.split(heading, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```\n(.*?)```", section, re.S)


def test_instruction_example_is_valid_for_the_judge(task_dir: Path) -> None:
    """The example's placements pass the judge's checker (padded to the judge's n >= 100).

    99 monominoes fill rows 3..35 of a 3-wide rectangle, so the example's
    three pieces are valid only if they fit in the 3 x 3 block without overlap.
    """
    example_in, example_out = _fenced_blocks(
        (task_dir / "instruction.md").read_text(), "## Example"
    )
    pieces_in = example_in.split()
    lines_out = example_out.strip().splitlines()
    assert lines_out[0] == "3 3"
    padding = 99
    data = " ".join([str(int(pieces_in[0]) + padding), *pieces_in[1:], *["1 0 0"] * padding])
    placements = lines_out[1:] + [f"{i % 3} {3 + i // 3} 0 0" for i in range(padding)]
    output = "\n".join(["3 36", *placements]) + "\n"
    verdict = check(prepare(data.encode()), output.encode())
    assert verdict.ok, verdict.message
    assert verdict.ratio == pytest.approx((8 + padding) / (3 * 36), abs=1e-9)


def test_instruction_states_the_judges_semantics(task_dir: Path) -> None:
    text = (task_dir / "instruction.md").read_text()
    for fact in (
        "(x, y) → (−x, y)",
        "(x, y) → (y, −x)",
        "`R = 3`: `(−y, x)`",
        "0 ≤ x < W",
        "W and H need not be equal",
        "score = 100 × (mean of the 70 ratios)",
        "2 seconds of CPU time, 256 MiB of memory and 4 seconds of wall",
        f"g++ {' '.join(FLAGS)}\n",
        "K = 62,017",
    ):
        assert fact in text, fact


def test_registry_resolves_the_short_name(task_dir: Path) -> None:
    record = load().get(Kind.TASK, "polyomino_packing")
    assert record.distribution == "atoll-frontiercs-judge"
    assert Path(record.target) == task_dir
    assert registered_task_dir("polyomino_packing") == task_dir
    argv = names.resolve(
        ["run", "--agent", "oracle", "--task", "polyomino_packing", "--env", "atoll-local"], load()
    )
    assert argv[argv.index("--path") + 1] == str(task_dir)


def test_wheel_ships_the_task_directory(repo: Path) -> None:
    pyproject = tomllib.loads(
        (repo / "verifiers" / "frontiercs-judge" / "pyproject.toml").read_text()
    )
    force = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert force["../../tasks/polyomino_packing"] == "atoll/judge/tasks/polyomino_packing"
