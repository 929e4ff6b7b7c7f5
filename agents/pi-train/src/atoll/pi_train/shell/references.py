"""The trusted reference programs of the shell families, one per family and language.

Each is the program a policy should write at `solution.py` / `solution.js` /
`solution.jl`: it reads the workspace's files and prints the answer last. A
program is its family's body for the language after a first line that binds
`PARAMS`, the instance's question (file names, columns, filter, what is
asked) as a literal of that language (`with_params`), so one body serves
every instance. Before any Tinker call, `atoll pi train shell` runs each one
in every language the run trains through the episode's own tools, sandbox
and reward (atoll.pi_train.training.preflight) and refuses a run where one falls short
of the full reward. Julia's bodies cannot be run where no sandbox has Julia
(the run then leaves Julia out, and so does the preflight).
"""

from __future__ import annotations

import json
from typing import Any


def with_params(language: str, params: dict[str, Any], body: str) -> str:
    """`body` after the line that binds `PARAMS` to `params` in `language`."""
    if language == "python":
        return f"import json\n\nPARAMS = json.loads({json.dumps(json.dumps(params))})\n\n{body}"
    if language == "javascript":
        return f"const PARAMS = {json.dumps(params)};\n\n{body}"
    if language == "julia":
        return f"const PARAMS = {_julia(params)}\n\n{body}"
    raise ValueError(f"no reference programs in {language!r}")


def _julia(value: Any) -> str:
    """A Julia literal of a JSON value (dictionaries with string keys, lists, text, numbers)."""
    if isinstance(value, dict):
        pairs = ", ".join(f"{_julia(str(k))} => {_julia(v)}" for k, v in value.items())
        return f"Dict{{String,Any}}({pairs})"
    if isinstance(value, list):
        return "Any[" + ", ".join(_julia(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
        return f'"{escaped}"'
    raise ValueError(f"no Julia literal for {value!r}")


# --- filtered-logs -------------------------------------------------------------------------

FILTERED_LOGS = {
    "python": """\
low, high = PARAMS["status"]
total = 0
with open(PARAMS["file"], encoding="utf-8") as log:
    for line in log:
        if not line.strip() or line.startswith(PARAMS["comment"]):
            continue
        _stamp, level, *fields = line.split()
        values = dict(field.split("=", 1) for field in fields)
        if (
            level == PARAMS["level"]
            and values["service"] == PARAMS["service"]
            and low <= int(values["status"]) <= high
        ):
            total += int(values[PARAMS["field"]])
print(total)
""",
    "javascript": """\
const fs = require("fs");
const [low, high] = PARAMS.status;
let total = 0;
for (const line of fs.readFileSync(PARAMS.file, "utf8").split("\\n")) {
  if (!line.trim() || line.startsWith(PARAMS.comment)) continue;
  const [, level, ...fields] = line.trim().split(/\\s+/);
  const values = {};
  for (const field of fields) {
    const at = field.indexOf("=");
    values[field.slice(0, at)] = field.slice(at + 1);
  }
  const status = Number(values.status);
  if (level === PARAMS.level && values.service === PARAMS.service && low <= status && status <= high) {
    total += Number(values[PARAMS.field]);
  }
}
console.log(total);
""",
    "julia": """\
function main()
    low, high = PARAMS["status"]
    total = 0
    for line in eachline(PARAMS["file"])
        if isempty(strip(line)) || startswith(line, PARAMS["comment"])
            continue
        end
        parts = split(line)
        values = Dict{String,String}()
        for field in parts[3:end]
            key, value = split(field, "="; limit=2)
            values[String(key)] = String(value)
        end
        status = parse(Int, values["status"])
        if parts[2] == PARAMS["level"] && values["service"] == PARAMS["service"] &&
           low <= status <= high
            total += parse(Int, values[PARAMS["field"]])
        end
    end
    println(total)
end

main()
""",
}

# --- signed-inventory ----------------------------------------------------------------------

SIGNED_INVENTORY = {
    "python": """\
import csv

key, stock_column, quantity_column, note_column = PARAMS["columns"]
opening, movements = PARAMS["files"]
with open(opening, encoding="utf-8", newline="") as rows:
    stock = {row[key]: int(row[stock_column]) for row in csv.DictReader(rows)}
with open(movements, encoding="utf-8", newline="") as rows:
    for row in csv.DictReader(rows):
        if row[note_column].strip() == PARAMS["cancel"]:
            continue
        stock[row[key]] = stock.get(row[key], 0) + int(row[quantity_column])
balances = list(stock.values())
ask = PARAMS["ask"]
if ask == "sum_negative":
    print(sum(v for v in balances if v < 0))
elif ask == "count_negative":
    print(sum(1 for v in balances if v < 0))
elif ask == "min_balance":
    print(min(balances))
else:
    print(sum(v for v in balances if v > 0))
""",
    "javascript": """\
const fs = require("fs");
const [key, stockColumn, quantityColumn, noteColumn] = PARAMS.columns;
const [opening, movements] = PARAMS.files;
const table = (name) => {
  const lines = fs.readFileSync(name, "utf8").split("\\n").filter((l) => l.trim());
  const header = lines[0].split(",");
  return lines.slice(1).map((line) => {
    const cells = line.split(",");
    return Object.fromEntries(header.map((h, i) => [h, cells[i] ?? ""]));
  });
};
const stock = new Map();
for (const row of table(opening)) stock.set(row[key], Number(row[stockColumn]));
for (const row of table(movements)) {
  if (row[noteColumn].trim() === PARAMS.cancel) continue;
  stock.set(row[key], (stock.get(row[key]) ?? 0) + Number(row[quantityColumn]));
}
const balances = [...stock.values()];
const sum = (values) => values.reduce((a, b) => a + b, 0);
const answers = {
  sum_negative: () => sum(balances.filter((v) => v < 0)),
  count_negative: () => balances.filter((v) => v < 0).length,
  min_balance: () => Math.min(...balances),
  sum_positive: () => sum(balances.filter((v) => v > 0)),
};
console.log(answers[PARAMS.ask]());
""",
    "julia": """\
function table(name)
    lines = filter(l -> !isempty(strip(l)), readlines(name))
    header = split(lines[1], ",")
    rows = Dict{String,String}[]
    for line in lines[2:end]
        cells = split(line, ",")
        push!(rows, Dict(String(header[i]) => (i <= length(cells) ? String(cells[i]) : "")
                         for i in eachindex(header)))
    end
    return rows
end

function main()
    key, stock_column, quantity_column, note_column = PARAMS["columns"]
    opening, movements = PARAMS["files"]
    stock = Dict{String,Int}()
    for row in table(opening)
        stock[row[key]] = parse(Int, row[stock_column])
    end
    for row in table(movements)
        if strip(row[note_column]) == PARAMS["cancel"]
            continue
        end
        stock[row[key]] = get(stock, row[key], 0) + parse(Int, row[quantity_column])
    end
    balances = collect(values(stock))
    ask = PARAMS["ask"]
    if ask == "sum_negative"
        println(sum(v for v in balances if v < 0; init=0))
    elseif ask == "count_negative"
        println(count(v -> v < 0, balances))
    elseif ask == "min_balance"
        println(minimum(balances))
    else
        println(sum(v for v in balances if v > 0; init=0))
    end
end

main()
""",
}

# --- weighted-checksum ---------------------------------------------------------------------

WEIGHTED_CHECKSUM = {
    "python": """\
with open(PARAMS["file"], "rb") as data:
    lines = data.read().split(b"\\n")
if lines and lines[-1] == b"":
    lines.pop()
start, modulus = PARAMS["start"], PARAMS["modulus"]
print(sum((start + i) * sum(line) for i, line in enumerate(lines)) % modulus)
""",
    "javascript": """\
const fs = require("fs");
const data = fs.readFileSync(PARAMS.file);
const lines = [];
let from = 0;
for (let i = 0; i <= data.length; i++) {
  if (i === data.length || data[i] === 10) {
    lines.push(data.subarray(from, i));
    from = i + 1;
  }
}
if (lines.length && lines[lines.length - 1].length === 0) lines.pop();
let total = 0n;
lines.forEach((line, i) => {
  const value = line.reduce((a, b) => a + b, 0);
  total += BigInt(PARAMS.start + i) * BigInt(value);
});
console.log((total % BigInt(PARAMS.modulus)).toString());
""",
    "julia": """\
function main()
    lines = split(read(PARAMS["file"], String), "\\n")
    if !isempty(lines) && isempty(lines[end])
        pop!(lines)
    end
    total = big(0)
    for (i, line) in enumerate(lines)
        value = 0
        for byte in codeunits(line)
            value += Int(byte)
        end
        total += big(PARAMS["start"] + i - 1) * value
    end
    println(mod(total, PARAMS["modulus"]))
end

main()
""",
}

# --- shard-totals --------------------------------------------------------------------------

SHARD_TOTALS = {
    "python": """\
totals = {}
for name in PARAMS["shards"]:
    with open(name, encoding="utf-8") as shard:
        for line in shard:
            if not line.strip():
                continue
            record = json.loads(line)
            if record[PARAMS["flag"]] == PARAMS["counts"]:
                key = record[PARAMS["key"]]
                totals[key] = totals.get(key, 0) + int(record[PARAMS["amount"]])
values = sorted(totals.values())
ask = PARAMS["ask"]
if ask == "max_total":
    print(values[-1])
elif ask == "min_total":
    print(values[0])
elif ask == "top3_sum":
    print(sum(values[-3:]))
else:
    print(len(values))
""",
    "javascript": """\
const fs = require("fs");
const totals = new Map();
for (const name of PARAMS.shards) {
  for (const line of fs.readFileSync(name, "utf8").split("\\n")) {
    if (!line.trim()) continue;
    const record = JSON.parse(line);
    if (record[PARAMS.flag] === PARAMS.counts) {
      const key = record[PARAMS.key];
      totals.set(key, (totals.get(key) ?? 0) + Number(record[PARAMS.amount]));
    }
  }
}
const values = [...totals.values()].sort((a, b) => a - b);
const answers = {
  max_total: () => values[values.length - 1],
  min_total: () => values[0],
  top3_sum: () => values.slice(-3).reduce((a, b) => a + b, 0),
  count_keys: () => values.length,
};
console.log(answers[PARAMS.ask]());
""",
    "julia": """\
# The records are flat JSON objects of strings, whole numbers and booleans (no JSON package
# is assumed): each "name": value pair is read by one pattern.
const PAIR = r"\\"([^\\"]*)\\"\\s*:\\s*(\\"[^\\"]*\\"|true|false|-?[0-9]+)"

function value_of(text)
    startswith(text, "\\"") && return String(text[2:end-1])
    text == "true" && return true
    text == "false" && return false
    return parse(Int, text)
end

function main()
    totals = Dict{String,Int}()
    for name in PARAMS["shards"], line in eachline(name)
        isempty(strip(line)) && continue
        record = Dict{String,Any}(m.captures[1] => value_of(m.captures[2])
                                  for m in eachmatch(PAIR, line))
        flag, counts = record[PARAMS["flag"]], PARAMS["counts"]
        if typeof(flag) == typeof(counts) && flag == counts
            key = record[PARAMS["key"]]
            totals[key] = get(totals, key, 0) + record[PARAMS["amount"]]
        end
    end
    values = sort(collect(Base.values(totals)))
    ask = PARAMS["ask"]
    if ask == "max_total"
        println(values[end])
    elseif ask == "min_total"
        println(values[1])
    elseif ask == "top3_sum"
        println(sum(values[max(1, end-2):end]))
    else
        println(length(values))
    end
end

main()
""",
}
