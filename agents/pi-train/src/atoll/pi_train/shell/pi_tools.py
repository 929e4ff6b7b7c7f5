"""Pi 0.73.1's four coding tools as Pi declares them to a model, and their result texts.

Training must show the model what real Pi shows it: the same tool names,
descriptions and parameter schemas (Pi's `createToolDefinition(name).parameters`,
as JSON), and tool results worded as Pi words them. Both Pi-shaped training
environments use this one module: the shell RL environment (`shell.episode`) and
the bootstrap corpus (`bootstrap.corpus`). A test compares `TOOL_SPECS` with
the installed Pi's `dist/core/tools/*.js`.
"""

from __future__ import annotations

from typing import Any

_PATH_NOTE = " (relative or absolute)"

TOOL_SPECS: list[dict[str, Any]] = [
    {
        "name": "read",
        "description": (
            "Read the contents of a file. Supports text files and images (jpg, png, gif, webp). "
            "Images are sent as attachments. For text files, output is truncated to 2000 lines "
            "or 50KB (whichever is hit first). Use offset/limit for large files. When you need "
            "the full file, continue with offset until complete."
        ),
        "parameters": {
            "type": "object",
            "required": ["path"],
            "properties": {
                "path": {"type": "string", "description": "Path to the file to read" + _PATH_NOTE},
                "offset": {
                    "type": "number",
                    "description": "Line number to start reading from (1-indexed)",
                },
                "limit": {"type": "number", "description": "Maximum number of lines to read"},
            },
        },
    },
    {
        "name": "write",
        "description": (
            "Write content to a file. Creates the file if it doesn't exist, overwrites if it "
            "does. Automatically creates parent directories."
        ),
        "parameters": {
            "type": "object",
            "required": ["path", "content"],
            "properties": {
                "path": {"type": "string", "description": "Path to the file to write" + _PATH_NOTE},
                "content": {"type": "string", "description": "Content to write to the file"},
            },
        },
    },
    {
        "name": "edit",
        "description": (
            "Edit a single file using exact text replacement. Every edits[].oldText must match "
            "a unique, non-overlapping region of the original file. If two changes affect the "
            "same block or nearby lines, merge them into one edit instead of emitting "
            "overlapping edits. Do not include large unchanged regions just to connect distant "
            "changes."
        ),
        "parameters": {
            "type": "object",
            "required": ["path", "edits"],
            "properties": {
                "path": {"type": "string", "description": "Path to the file to edit" + _PATH_NOTE},
                "edits": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["oldText", "newText"],
                        "properties": {
                            "oldText": {
                                "type": "string",
                                "description": (
                                    "Exact text for one targeted replacement. It must be unique "
                                    "in the original file and must not overlap with any other "
                                    "edits[].oldText in the same call."
                                ),
                            },
                            "newText": {
                                "type": "string",
                                "description": "Replacement text for this targeted edit.",
                            },
                        },
                        "additionalProperties": False,
                    },
                    "description": (
                        "One or more targeted replacements. Each edit is matched against the "
                        "original file, not incrementally. Do not include overlapping or nested "
                        "edits. If two changes touch the same block or nearby lines, merge them "
                        "into one edit instead."
                    ),
                },
            },
            "additionalProperties": False,
        },
    },
    {
        "name": "bash",
        "description": (
            "Execute a bash command in the current working directory. Returns stdout and "
            "stderr. Output is truncated to last 2000 lines or 50KB (whichever is hit first). "
            "If truncated, full output is saved to a temp file. Optionally provide a timeout "
            "in seconds."
        ),
        "parameters": {
            "type": "object",
            "required": ["command"],
            "properties": {
                "command": {"type": "string", "description": "Bash command to execute"},
                "timeout": {
                    "type": "number",
                    "description": "Timeout in seconds (optional, no default timeout)",
                },
            },
        },
    },
]
TOOL_NAMES = tuple(spec["name"] for spec in TOOL_SPECS)


# --- result texts, worded as Pi 0.73.1's tools word them ----------------------------------


def wrote(path: str, content: str) -> str:
    """write's result (Pi counts the content's characters)."""
    return f"Successfully wrote {len(content)} bytes to {path}"


def edited(path: str, blocks: int = 1) -> str:
    """edit's result."""
    return f"Successfully replaced {blocks} block(s) in {path}."


def edit_not_found(path: str, index: int | None = None) -> str:
    """edit's error when an oldText is not in the file (`index` for one of several edits)."""
    if index is None:
        return (
            f"Could not find the exact text in {path}. The old text must match exactly including "
            "all whitespace and newlines."
        )
    return (
        f"Could not find edits[{index}] in {path}. The oldText must match exactly including all "
        "whitespace and newlines."
    )


def ran(output: str, exit_code: int | None, timeout_s: float | None = None) -> str:
    """bash's result: the output, then Pi's status line unless the command exited 0.

    `exit_code` None means the command was stopped at `timeout_s`.
    """
    if exit_code == 0:
        return output if output else "(no output)"
    body = output.rstrip()
    if exit_code is None:
        status = f"Command timed out after {timeout_s:g} seconds"
    else:
        status = f"Command exited with code {exit_code}"
    return f"{body}\n\n{status}" if body else status


def edit_not_unique(path: str, occurrences: int, index: int | None = None) -> str:
    """edit's error when an oldText occurs more than once (`index` for one of several edits)."""
    if index is None:
        return (
            f"Found {occurrences} occurrences of the text in {path}. The text must be unique. "
            "Please provide more context to make it unique."
        )
    return (
        f"Found {occurrences} occurrences of edits[{index}] in {path}. Each oldText must be "
        "unique. Please provide more context to make it unique."
    )


def edits_overlap(path: str, first: int, second: int) -> str:
    """edit's error when two edits touch the same region."""
    return (
        f"edits[{first}] and edits[{second}] overlap in {path}. Merge them into one edit or "
        "target disjoint regions."
    )
