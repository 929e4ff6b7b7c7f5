"""The request and response of SandboxFusion's `POST /run_code`, field for field.

The names, types and defaults are SandboxFusion's own (its server's
`RunCodeRequest`/`RunCodeResponse`), so that its Python client
(`sandbox_fusion.run_code`) and any other caller written against it talk to
`atoll sandbox fusion-serve` unchanged. Unknown request fields are ignored,
as SandboxFusion's server does.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# Every language SandboxFusion's API accepts; `RUNNABLE` (runner.py) says which run here.
Language = Literal[
    "python",
    "cpp",
    "nodejs",
    "go",
    "go_test",
    "java",
    "php",
    "csharp",
    "bash",
    "typescript",
    "sql",
    "rust",
    "cuda",
    "lua",
    "R",
    "perl",
    "D_ut",
    "ruby",
    "scala",
    "julia",
    "pytest",
    "junit",
    "kotlin_script",
    "jest",
    "verilog",
    "python_gpu",
    "lean",
    "swift",
    "racket",
]


class RunCodeRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    compile_timeout: float = Field(10, description="compile timeout for compiled languages")
    run_timeout: float = Field(10, description="code run timeout")
    memory_limit_MB: int = Field(-1, description="maximum memory allowed in megabytes")
    code: str = Field(..., description="the code to run")
    stdin: str | None = Field(None, description="optional string to pass into stdin")
    language: Language = Field(..., description="the language or execution mode to run the code")
    files: dict[str, str | None] = Field(
        {}, description="a dict from file path to base64 encoded file content"
    )
    fetch_files: list[str] = Field(
        [], description="a list of file paths to fetch after code execution"
    )


class CommandRunStatus(StrEnum):
    FINISHED = "Finished"
    ERROR = "Error"
    TIME_LIMIT_EXCEEDED = "TimeLimitExceeded"


class CommandRunResult(BaseModel):
    status: CommandRunStatus
    execution_time: float | None = None
    return_code: int | None = None
    stdout: str | None = None
    stderr: str | None = None


class RunStatus(StrEnum):
    SUCCESS = "Success"  # every command finished with exit status 0
    FAILED = "Failed"  # a command exited non-zero or ran out of time
    SANDBOX_ERROR = "SandboxError"  # the sandbox itself failed (the client raises on it)


class RunCodeResponse(BaseModel):
    status: RunStatus
    message: str
    compile_result: CommandRunResult | None = None
    run_result: CommandRunResult | None = None
    executor_pod_name: str | None = None
    files: dict[str, str] = {}
