"""A FrontierCS problem's `config.yaml`, read the way the authoritative judge reads it.

The authority (its problem manager) takes `type` (default | interactive;
`leetcode` is refused), `checker` (default `chk.cc`), `interactor` (default
`interactor.cc`), `time_limit` or `time` (default `1s`), `memory_limit` or
`memory` (default `256m`), `input_prefix`, `output_prefix`, `input_suffix`
(`.in`) and `output_suffix` (`.ans`), and `subtasks`, each with `n_cases`
(case files numbered on from the previous subtask) or a `cases` list, and
its own time and memory. Any other key is ignored, as there (real configs
carry typos such as `cheker_type`); subtask scores are not used by the
authority's scoring, so not here either. A value is taken when it is
"truthy" in JavaScript's sense (`time: 0` falls back to the default), as the
authority's `a || b` does.

Deliberate difference: a limit written as a bare number (`time: 2`) is an
error here. The authority reads a bare number as nanoseconds or bytes, which
makes every case fail; a limit it cannot parse at all would be 0. Both are
mistakes in the config, better named than scored.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from atoll.core.sizes import GiB, KiB, MiB

DEFAULT_TIME = "1s"
DEFAULT_MEMORY = "256m"
DEFAULT_CHECKER = "chk.cc"
DEFAULT_INTERACTOR = "interactor.cc"

_DURATION = re.compile(r"^([\d.]+)\s*(ms|s)?$", re.IGNORECASE)
_SIZE = re.compile(r"^([\d.]+)\s*(k|m|g|)$|^([\d.]+)$", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "k": KiB, "m": MiB, "g": GiB}
_JS_FLOAT_PREFIX = re.compile(r"\d+(?:\.\d*)?|\.\d+")


class ConfigError(ValueError):
    """A config.yaml the authority would refuse, or one whose limits make no sense."""


@dataclass(frozen=True)
class CaseFiles:
    """One test case as the config names it: input and answer file names, its limits."""

    input: str
    output: str
    cpu_seconds: float
    memory_bytes: int


@dataclass(frozen=True)
class ProblemConfig:
    type: str  # "default" or "interactive"
    checker: str
    interactor: str | None
    cases: tuple[CaseFiles, ...]
    cpu_seconds: float  # the problem-wide defaults, for listings
    memory_bytes: int


def js_truthy(value: Any) -> bool:
    """Whether JavaScript's `||` would take `value` (objects and lists are truthy there)."""
    if value is None or value is False:
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value != 0 and not (isinstance(value, float) and math.isnan(value))
    if isinstance(value, str):
        return value != ""
    return True


def first(*values: Any) -> Any:
    """`a || b || c` as JavaScript evaluates it."""
    for value in values[:-1]:
        if js_truthy(value):
            return value
    return values[-1]


def js_parse_float(text: str) -> float:
    """JavaScript's parseFloat on a string of digits and dots: the longest number it starts with."""
    match = _JS_FLOAT_PREFIX.match(text)
    return float(match.group(0)) if match else math.nan


def seconds(value: Any, what: str) -> float:
    """A time limit (`2s`, `500ms`, `2.5s`) in seconds, parsed as the authority's toNs does."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise ConfigError(
            f"{what}: {value!r} is a bare number, which the authority reads as nanoseconds; "
            f"write it with a unit, e.g. '{value}s'"
        )
    match = _DURATION.match(str(value))
    amount = js_parse_float(match.group(1)) if match else math.nan
    if not match or not amount > 0:
        raise ConfigError(f"{what}: {value!r} is not a time limit like '2s' or '500ms'")
    unit = (match.group(2) or "s").lower()
    return round(amount * (1e6 if unit == "ms" else 1e9)) / 1e9


def size_bytes(value: Any, what: str) -> int:
    """A memory limit (`256m`, `1g`, `512k`) in bytes, parsed as the authority's toBytes does."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise ConfigError(
            f"{what}: {value!r} is a bare number, which the authority reads as bytes; "
            f"write it with a unit, e.g. '{value}m'"
        )
    match = _SIZE.match(str(value))
    if not match:
        raise ConfigError(f"{what}: {value!r} is not a memory limit like '256m' or '1g'")
    amount = js_parse_float(match.group(1) or match.group(3))
    unit = (match.group(2) or "").lower()
    if not amount > 0:
        raise ConfigError(f"{what}: {value!r} is not a memory limit like '256m' or '1g'")
    return round(amount * _SIZE_UNITS[unit])


class _StrictLoader(yaml.SafeLoader):
    """YAML as js-yaml loads it in one respect that matters: a repeated key is an error."""


def _mapping_without_duplicates(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise ConfigError(
                f"duplicated mapping key {key!r} (line {key_node.start_mark.line + 1})"
            )
        seen.add(key)
    return loader.construct_mapping(node)


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_without_duplicates
)


def parse(text: str) -> ProblemConfig:
    """The authority's reading of one config.yaml; ConfigError where it would fail."""
    try:
        config = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as exc:
        raise ConfigError(f"not valid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(config, dict):
        raise ConfigError("must be a mapping of keys (type, checker, time, memory, subtasks)")
    kind = first(config.get("type"), "default")
    if kind == "leetcode":
        raise ConfigError("type 'leetcode' is not supported (nor by the authoritative judge)")
    if kind not in ("default", "interactive"):
        raise ConfigError(f"unknown problem type {kind!r}; the judge knows default and interactive")
    subtasks = config.get("subtasks")
    if not isinstance(subtasks, list):
        raise ConfigError("must define subtasks (a list)")
    time = first(config.get("time_limit"), config.get("time"), DEFAULT_TIME)
    memory = first(config.get("memory_limit"), config.get("memory"), DEFAULT_MEMORY)
    naming = {
        key: _text(first(config.get(key), default))
        for key, default in (
            ("input_prefix", ""),
            ("output_prefix", ""),
            ("input_suffix", ".in"),
            ("output_suffix", ".ans"),
        )
    }
    cases: list[CaseFiles] = []
    number = 1
    for index, subtask in enumerate(subtasks):
        if not isinstance(subtask, dict):
            raise ConfigError(f"subtask {index} is not a mapping")
        sub_time = first(subtask.get("time_limit"), subtask.get("time"), time)
        sub_memory = first(subtask.get("memory_limit"), subtask.get("memory"), memory)
        where = f"subtask {index}"
        if "n_cases" in subtask:
            count = subtask["n_cases"]
            if count is None:
                count = 0  # the authority's loop runs no times; `+= null` adds nothing
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise ConfigError(f"{where}: n_cases must be a whole number, not {count!r}")
            cpu = seconds(sub_time, f"{where} time")
            mem = size_bytes(sub_memory, f"{where} memory")
            for i in range(count):
                cases.append(
                    CaseFiles(
                        f"{naming['input_prefix']}{number + i}{naming['input_suffix']}",
                        f"{naming['output_prefix']}{number + i}{naming['output_suffix']}",
                        cpu,
                        mem,
                    )
                )
            number += count
        elif isinstance(subtask.get("cases"), list):
            for j, case in enumerate(subtask["cases"]):
                if not isinstance(case, dict) or not case.get("input") or not case.get("output"):
                    raise ConfigError(f"{where}, case {j}: needs an input and an output file")
                cases.append(
                    CaseFiles(
                        _text(case["input"]),
                        _text(case["output"]),
                        seconds(first(case.get("time"), sub_time), f"{where}, case {j} time"),
                        size_bytes(
                            first(case.get("memory"), sub_memory), f"{where}, case {j} memory"
                        ),
                    )
                )
        else:
            raise ConfigError(f"{where} must define either 'n_cases' or 'cases'")
    interactive = kind == "interactive"
    return ProblemConfig(
        type=kind,
        checker=_text(first(config.get("checker"), DEFAULT_CHECKER)),
        interactor=_text(first(config.get("interactor"), DEFAULT_INTERACTOR))
        if interactive
        else None,
        cases=tuple(cases),
        cpu_seconds=seconds(time, "time"),
        memory_bytes=size_bytes(memory, "memory"),
    )


def answer_file(testdata: Path, output: str) -> Path | None:
    """The answer file the authority reads for a case: `X.ans` for an output `X.out`, else `output`."""
    candidates = [output[: -len(".out")] + ".ans", output] if output.endswith(".out") else [output]
    for name in candidates:
        if (testdata / name).is_file():
            return testdata / name
    return None


def _text(value: Any) -> str:
    """A config value as JavaScript would print it into a file name."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
