"""Program-text scanning for the path audit: the quoted string literals of a program.

The content of a write, the new text of an edit, a here-doc's body and the program
of `python3 -c`, `node -e`, awk or sed are read by their literals, under the stricter
`literal_kind`, with the place a literal stands deciding what it is: the path argument
of a file API (`os.listdir('/')`), the command of a call that runs a shell
(`os.system('ls /')`, audited by `audit_shell`) or the rest of a path after a
concatenation. It is its own module because it knows the file and shell APIs of the
languages Pi writes, which the shell-line parser has no use for.
"""

from __future__ import annotations

import bisect
import re
import shlex

from atoll.pi.audit_paths import ROOT_DIRECTORIES, leaves, literal_kind

_STRING = re.compile(r"""'([^'\n]*)'|"((?:[^"\\\n]|\\.)*)"|`([^`\n]*)`""")
# Calls whose first argument is a path, in the languages Pi writes: Python (open, os, os.path,
# pathlib, glob, shutil, numpy, pandas), JavaScript (fs, process.chdir), Julia and Ruby.
_FILE_APIS = (
    "open", "listdir", "scandir", "walk", "chdir", "stat", "lstat", "Path", "PurePath",
    "PosixPath", "glob", "iglob", "exists", "isdir", "isfile", "islink", "getsize", "access",
    "disk_usage", "statvfs", "readlink", "copy", "copyfile", "copytree", "move", "rmtree",
    "unlink", "rmdir", "mkdir", "makedirs", "loadtxt", "read_csv",
    "readdirSync", "readdir", "opendirSync", "opendir", "readFileSync", "readFile",
    "createReadStream", "statSync", "lstatSync", "existsSync", "accessSync", "realpathSync",
    "writeFileSync", "appendFileSync", "createWriteStream",
    "walkdir", "cd", "read", "readlines", "eachline", "ispath", "readchomp",
    r"Dir\.entries", r"Dir\.children", r"Dir\.each_child", r"Dir\.foreach", r"File\.foreach",
)  # fmt: skip
# Calls whose argument is a shell command (a string, or an argv list after an optional program):
# os.system/popen, subprocess, Node's child_process, Julia's run, awk/Ruby/Perl system.
_SHELL_APIS = (
    "system", "popen", "getoutput", "getstatusoutput", "check_output", "check_call",
    r"subprocess\.call", "run", "Popen", "execSync", "execFileSync", "spawnSync", "spawn",
)  # fmt: skip
_PREFIX = r"[rRbBfFuU]{0,2}"  # Python's string prefixes (r'', f"")
_LITERAL = rf"""{_PREFIX}(?:'[^'\n]*'|"(?:[^"\\\n]|\\.)*"|`[^`\n]*`)"""
_ARGV = rf"\[\s*{_LITERAL}(?:\s*,\s*{_LITERAL})*\s*,?\s*\]"
_SHELL_CALL = re.compile(
    rf"(?<![\w$])(?:{'|'.join(_SHELL_APIS)})\s*\(\s*(?P<args>{_LITERAL}(?:\s*,\s*{_ARGV})?|{_ARGV})"
)
_FILE_CALL = re.compile(
    rf"(?:(?<![\w$])(?:{'|'.join(_FILE_APIS)})\s*\("  # open('/etc/x'), os.listdir('/')
    r"|(?<![\w$])Dir\s*\["  # Ruby's Dir['/*']
    r"|(?<![\w$])(?:Dir|File|IO)\.\w+[ \t]+"  # Ruby without parentheses: Dir.entries '/'
    r"|(?<![\w$])(?:open|opendir|sysopen)\s*\(?\s*(?:(?:my\s+)?\$\w+|[A-Z]\w*)\s*,\s*"
    r"(?:(['\"])[+<>]{1,2}\1\s*,\s*)?"  # Perl: opendir(my $d, '/'), open(F, '<', '/x')
    r"|(?<![\w$])getline(?:\s+[\w$]+(?:\[[^\]]*\])?)?\s*<"  # awk: getline line < "/x"
    rf")\s*{_PREFIX}(?=['\"`])"  # ends where the literal's quote is
)
_PIPED_TO_GETLINE = re.compile(r"\s*\|\s*getline\b")  # awk: "ls /" | getline
# A literal after a concatenation (`__dirname + '/in.txt'`, Julia's `*`, Perl's `.`, Lua's
# `..`) continues a path built at run time: it is not where that path starts.
_CONTINUES = re.compile(rf"(?:[+*]|\.\.?)\s*{_PREFIX}(?=['\"`])")


def content_hits(text: str) -> list[tuple[str, str]]:
    """(kind, text) for each quoted string literal of program text that reads as a path
    outside the workspace (`literal_kind`), in order.

    Places in a program say what a literal is: the path argument of a file API
    (`os.listdir('/')`: any absolute path there is one), the command of a call that
    runs a shell (`os.system('ls /')`, `subprocess.run(['ls', '/'])`: audited as a
    command, by the shell rule), and a concatenation (`__dirname + '/in.txt'`: the
    rest of a path built at run time, not where it starts, so it names no root file;
    `base + '/etc/passwd'` and `..` that leaves are hits still).
    """
    from atoll.pi.audit_shell import command_hits  # the two recurse into each other

    found: list[tuple[int, list[tuple[str, str]]]] = []
    commands: list[tuple[int, int]] = []  # spans already audited as commands
    for call in _SHELL_CALL.finditer(text):
        args = call.group("args")
        literals = [_unquoted(m) for m in _STRING.finditer(args)]
        line = literals[0] if len(literals) == 1 and args[0] != "[" else shlex.join(literals)
        found.append((call.start("args"), command_hits(line)))
        commands.append(call.span("args"))
    starts = [start for start, _ in commands]  # in order, not overlapping (finditer's)
    arguments = {m.end() for m in _FILE_CALL.finditer(text)}  # where such a literal starts
    continued = {m.end() for m in _CONTINUES.finditer(text)}
    for match in _STRING.finditer(text):
        index = bisect.bisect_right(starts, match.start()) - 1
        if index >= 0 and match.start() < commands[index][1]:
            continue
        literal = _unquoted(match)
        if _PIPED_TO_GETLINE.match(text, match.end()):
            found.append((match.start(), command_hits(literal)))
            continue
        if literal != literal.strip():
            kind = None
        elif match.start() in continued:
            kind = _continuation_kind(literal)
        else:
            kind = literal_kind(literal, match.start() in arguments)
        found.append((match.start(), [] if kind is None else [(kind, literal)]))
    return [hit for _, hits in sorted(found, key=lambda pair: pair[0]) for hit in hits]


def _continuation_kind(literal: str) -> str | None:
    """The kind of a literal that continues a path (`dir + '/in.txt'`): `..` that climbs
    out, or a top-level directory of the container (an empty `dir` leaves `/etc/x`)."""
    rest = literal.lstrip("/")
    if leaves(rest, 0):
        return "parent"
    first = rest.split("/", 1)[0]
    return "absolute" if literal.startswith("/") and first in ROOT_DIRECTORIES else None


def _unquoted(match: re.Match[str]) -> str:
    return next(group for group in match.groups() if group is not None)
