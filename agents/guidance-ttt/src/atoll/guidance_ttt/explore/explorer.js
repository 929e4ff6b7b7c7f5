// The Guidance-TTT run explorer. Everything the run wrote is shown as text (textContent and
// SVG text nodes only): guidance, programs and messages come from models and are untrusted.
"use strict";
(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const data = JSON.parse(document.getElementById("run-data").textContent);
  const run = data.run;
  const nodes = new Map(data.nodes.map((n) => [n.id, n]));
  const rollouts = new Map(data.rollouts.map((r) => [r.id, r]));
  const OUTCOME_NAMES = {
    scored: "scored",
    parse_error: "parse error",
    judge_error: "judge error",
    guidance_rejected: "guidance rejected",
    guidance_failed: "guidance failed",
    pending: "pending",
  };
  const state = { step: "all", outcomes: new Set(data.outcomes) };

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "class") node.className = value;
      else node.setAttribute(key, value);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function fmt(x) {
    if (x === null || x === undefined) return "–";
    if (Number.isInteger(x)) return String(x);
    const text = Number(x).toPrecision(6);
    return text.includes("e") ? text : text.replace(/(\.\d*?)0+$/, "$1").replace(/\.$/, "");
  }

  function outcomeName(o) {
    return OUTCOME_NAMES[o] || o;
  }

  // ----- score colours: worst red, best green, by search value (larger is better) -----------
  const values = data.nodes.map((n) => n.value).filter((v) => v !== null);
  const vmin = Math.min(...values);
  const vmax = Math.max(...values);
  function scoreColour(value) {
    if (value === null || value === undefined) return "#9e9e9e";
    const t = vmax > vmin ? (value - vmin) / (vmax - vmin) : 1;
    return "hsl(" + Math.round(5 + t * 125) + ", 70%, 42%)";
  }

  // ----- the header and the score chart ---------------------------------------------------
  function header() {
    const best = run.best_id === null ? null : nodes.get(run.best_id);
    const open = run.journaled_steps - run.committed_steps;
    return el(
      "header",
      {},
      el("h1", {}, "Guidance-TTT run " + run.run_id),
      el(
        "p",
        { class: "facts" },
        run.training + " · " + run.groups + " × " + run.rollouts + " per step · " +
          run.committed_steps + " step(s) committed" +
          (open > 0 ? ", " + open + " open" : "") + " · " + run.total_rollouts + " rollouts · " +
          "guidance " + run.guidance_model + ", executor " + run.executor_model + " · " +
          (run.direction === "max" ? "higher" : "lower") + " is better",
      ),
      best
        ? el("p", { class: "facts" }, "Best: node #" + best.id + ", raw score " + fmt(best.raw_score) +
            " (seed " + fmt(run.seed_best) + ")")
        : null,
    );
  }

  function chart() {
    const W = 760, H = 240, L = 64, R = 16, T = 14, B = 34;
    const steps = data.steps;
    const all = steps.flatMap((s) => s.scores.concat(s.best === null ? [] : [s.best]));
    if (run.seed_best !== null) all.push(run.seed_best);
    const box = svg("svg", { viewBox: "0 0 " + W + " " + H, class: "chart", role: "img" });
    box.append(svg("title", {}, "Raw score per step: each scored rollout, and the best so far"));
    if (all.length === 0) {
      box.append(svg("text", { x: L, y: H / 2 }, "No scored rollout yet"));
      return box;
    }
    let lo = Math.min(...all), hi = Math.max(...all);
    if (hi === lo) { hi += 1; lo -= 1; }
    const n = Math.max(steps.length, 1);
    const x = (i) => L + ((i + 1) / (n + 0.5)) * (W - L - R);
    const y = (v) => T + (1 - (v - lo) / (hi - lo)) * (H - T - B);
    for (let k = 0; k <= 4; k++) {
      const v = lo + (k / 4) * (hi - lo);
      box.append(svg("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "grid" }));
      box.append(svg("text", { x: L - 6, y: y(v) + 4, class: "tick", "text-anchor": "end" }, fmt(v)));
    }
    box.append(svg("text", { x: x(-1), y: H - 12, class: "tick", "text-anchor": "middle" }, "seed"));
    let path = run.seed_best === null ? "" : "M" + x(-1) + "," + y(run.seed_best);
    steps.forEach((s, i) => {
      box.append(svg("text", { x: x(i), y: H - 12, class: "tick", "text-anchor": "middle" }, String(s.step)));
      s.scores.forEach((v, j) => {
        const jitter = ((j * 7) % 11 - 5) * 1.6;
        const dot = svg("circle", { cx: x(i) + jitter, cy: y(v), r: 3.2, class: "dot" });
        dot.append(svg("title", {}, "step " + s.step + ": " + fmt(v)));
        box.append(dot);
      });
      if (s.best !== null) path += (path ? " L" : "M") + x(i) + "," + y(s.best);
    });
    if (path) box.append(svg("path", { d: path, class: "best-line" }));
    box.append(svg("text", { x: L, y: H - 1, class: "tick" }, "step  ·  dots: scored rollouts  ·  line: best so far"));
    return box;
  }

  // ----- filters ---------------------------------------------------------------------------
  function filters() {
    const select = el("select", { id: "step-filter" }, el("option", { value: "all" }, "all steps"));
    data.steps.forEach((s) => select.append(el("option", { value: String(s.step) }, "step " + s.step)));
    select.addEventListener("change", () => { state.step = select.value; refresh(); });
    const boxes = el("span", { class: "outcomes" });
    const counts = {};
    data.rollouts.forEach((r) => { counts[r.outcome] = (counts[r.outcome] || 0) + 1; });
    data.outcomes.forEach((o) => {
      const box = el("input", { type: "checkbox", id: "outcome-" + o, "data-outcome": o });
      box.checked = true;
      box.addEventListener("change", () => {
        if (box.checked) state.outcomes.add(o); else state.outcomes.delete(o);
        refresh();
      });
      const swatch = el("span", { class: "swatch o-" + o });
      boxes.append(el("label", { class: "outcome o-" + o }, box, " ", swatch, outcomeName(o) + " (" + (counts[o] || 0) + ")"));
    });
    return el("section", { class: "filters" }, el("label", {}, "Step ", select), boxes);
  }

  function shown(r) {
    return state.outcomes.has(r.outcome) && (state.step === "all" || String(r.step) === state.step);
  }

  function nodeShown(n) {
    if (n.parent === null) return true;
    return state.outcomes.has("scored") && (state.step === "all" || String(n.step) === state.step);
  }

  // ----- the archive as a tree -------------------------------------------------------------
  const ROW = 22, INDENT = 26;
  function tree() {
    const kids = new Map();
    const roots = [];
    for (const n of data.nodes) {
      if (n.parent === null || !nodes.has(n.parent)) roots.push(n);
      else { if (!kids.has(n.parent)) kids.set(n.parent, []); kids.get(n.parent).push(n); }
    }
    const visitsOf = new Map();
    for (const r of data.rollouts) {
      if (r.child_kept || r.parent === null) continue;
      if (!visitsOf.has(r.parent)) visitsOf.set(r.parent, []);
      visitsOf.get(r.parent).push(r);
    }
    const rows = [];
    const walk = (n, depth) => {
      rows.push({ n, depth });
      (kids.get(n.id) || []).sort((a, b) => a.id - b.id).forEach((c) => walk(c, depth + 1));
    };
    roots.sort((a, b) => a.id - b.id).forEach((r) => walk(r, 0));
    const maxDepth = Math.max(0, ...rows.map((r) => r.depth));
    const visitX = 24 + maxDepth * INDENT + 190;
    const widest = Math.max(0, ...rows.map((r) => (visitsOf.get(r.n.id) || []).length));
    const W = visitX + widest * 11 + 20, H = rows.length * ROW + 12;
    const box = svg("svg", { width: W, height: H, class: "tree", id: "tree" });
    const at = new Map();
    rows.forEach((row, i) => at.set(row.n.id, { x: 14 + row.depth * INDENT, y: 14 + i * ROW }));
    for (const row of rows) {
      const p = at.get(row.n.parent), c = at.get(row.n.id);
      if (p) box.append(svg("path", { d: "M" + p.x + "," + p.y + " V" + c.y + " H" + c.x, class: "edge" }));
    }
    for (const row of rows) {
      const n = row.n, c = at.get(n.id);
      const g = svg("g", { class: "node", "data-node-id": n.id, tabindex: 0 });
      if (n.id === run.best_id) g.append(svg("circle", { cx: c.x, cy: c.y, r: 10, class: "best-ring" }));
      g.append(svg("circle", { cx: c.x, cy: c.y, r: 6.5, fill: scoreColour(n.value), class: "dot-node" }));
      const label = "#" + n.id + "  " + fmt(n.raw_score) + "  n=" + n.visits +
        (n.parent === null ? "  seed" : "  step " + n.step) + (n.id === run.best_id ? "  best" : "");
      g.append(svg("text", { x: c.x + 12, y: c.y + 4, class: "label" }, label));
      g.append(svg("title", {}, "node #" + n.id + ": raw score " + fmt(n.raw_score) + ", " + n.visits + " visits"));
      g.addEventListener("click", () => { location.hash = "node-" + n.id; });
      box.append(g);
      (visitsOf.get(n.id) || []).forEach((r, k) => {
        const mark = svg("rect", {
          x: visitX + k * 11, y: c.y - 4.5, width: 9, height: 9, rx: 1.5,
          class: "visit o-" + r.outcome, "data-rollout-id": r.id,
        });
        const why = r.outcome === "scored" ? (r.child === null ? "scored, a duplicate: no new node" : "scored, pruned later") : outcomeName(r.outcome);
        mark.append(svg("title", {}, "step " + r.step + " group " + r.group + " rollout " + r.rollout + ": " + why));
        mark.addEventListener("click", () => { location.hash = "rollout-" + r.id; });
        box.append(mark);
      });
    }
    return box;
  }

  // ----- a node's or a rollout's page ------------------------------------------------------
  function facts(rows) {
    const table = el("table", { class: "facts-table" });
    for (const [name, value] of rows) {
      if (value === null || value === undefined || value === "") continue;
      table.append(el("tr", {}, el("th", {}, name), el("td", {}, value)));
    }
    return table;
  }

  function block(title, text, cls) {
    if (text === null || text === undefined || text === "") return null;
    return el("section", { class: "block" }, el("h3", {}, title), el("pre", { class: cls || "" }, text));
  }

  function diffBlock(diff) {
    if (!diff) return null;
    const pre = el("pre", { class: "diff" });
    for (const line of diff.split("\n")) {
      const cls = line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "";
      pre.append(el("span", { class: cls }, line + "\n"));
    }
    return el("section", { class: "block" }, el("h3", {}, "Diff against the parent's program"), pre);
  }

  function cases(verification) {
    const receipt = (verification && verification.receipt) || {};
    const section = el("section", { class: "block" }, el("h3", {}, "Scorer's verdict"));
    section.append(facts([
      ["status", verification ? verification.status : "pending"],
      ["raw score", verification ? fmt(verification.raw_score) : null],
      ["reward", verification ? fmt(verification.reward) : null],
      ["message", verification ? verification.message : null],
    ]));
    const rows = [];
    if (Array.isArray(receipt.case_scores)) {
      receipt.case_scores.forEach((score, i) => rows.push([String(i + 1), fmt(score), (receipt.statuses || [])[i] || ""]));
    } else if (Array.isArray(receipt.cases)) {
      receipt.cases.forEach((c, i) => rows.push([String(i + 1), fmt(c.score), c.status || c.result || ""]));
    }
    if (rows.length) {
      const table = el("table", { class: "cases" }, el("tr", {}, el("th", {}, "case"), el("th", {}, "score"), el("th", {}, "status")));
      rows.forEach((r) => table.append(el("tr", {}, ...r.map((v) => el("td", {}, v)))));
      section.append(el("h4", {}, "Per case"), table);
    }
    const other = Object.entries(receipt).filter(([k]) => !["case_scores", "statuses", "cases"].includes(k));
    if (other.length) {
      section.append(el("h4", {}, "Receipt"), facts(other.map(([k, v]) => [k, typeof v === "object" ? JSON.stringify(v) : String(v)])));
    }
    return section;
  }

  function link(text, hash) {
    const a = el("a", { href: "#" + hash }, text);
    return a;
  }

  function lineage(n) {
    const chain = [];
    for (let m = n; m; m = m.parent === null ? null : nodes.get(m.parent)) chain.unshift(m);
    if (chain.length < 2) return null;
    const list = el("ol", { class: "lineage" });
    for (const m of chain) {
      list.append(el("li", {}, link("#" + m.id, "node-" + m.id), " " + fmt(m.raw_score) + " · " +
        (m.parent === null ? "the seed" : m.guidance || "(no guidance)")));
    }
    return el("section", { class: "block" }, el("h3", {}, "Lineage: the guidance that led here"), list);
  }

  function nodePage(n) {
    const made = n.rollout ? rollouts.get(n.rollout) : null;
    return [
      el("h2", {}, "Node #" + n.id + (n.id === run.best_id ? " (best)" : "") + (n.parent === null ? " (seed)" : "")),
      facts([
        ["raw score", fmt(n.raw_score)],
        ["made in", n.parent === null ? "the seed" : "step " + n.step + ", group " + n.group + ", rollout " + (made ? made.rollout : "?")],
        ["parent", n.parent === null ? null : link("#" + n.parent, "node-" + n.parent)],
        ["children", n.children.length ? n.children.map((c) => "#" + c).join(", ") : "none"],
        ["visits", String(n.visits)],
        ["Reef receipt", n.receipt],
        ["selectable", n.candidate ? "yes" : "no (kept only to connect its descendants)"],
      ]),
      block("Guidance (the guidance model's words)", n.guidance, "guidance"),
      block("Summary", n.summary, "summary"),
      block("Program", n.program ? data.programs[n.program] : null, "program"),
      diffBlock(n.diff),
      cases(n.verification),
      lineage(n),
    ];
  }

  function rolloutPage(r) {
    return [
      el("h2", {}, "Rollout: step " + r.step + ", group " + r.group + ", rollout " + r.rollout),
      facts([
        ["outcome", outcomeName(r.outcome)],
        ["parent", r.parent === null ? null : link("#" + r.parent, "node-" + r.parent)],
        ["made", r.child === null ? "no node" : r.child_kept ? link("node #" + r.child, "node-" + r.child) : "node #" + r.child + " (pruned since)"],
        ["Reef receipt", r.receipt],
        ["guidance tokens", r.guidance_tokens === null ? null : String(r.guidance_tokens)],
        ["executor tokens", r.executor_tokens === null ? null : String(r.executor_tokens)],
        ["guidance call failed", r.guidance_error],
      ]),
      block("Guidance (the guidance model's words)", r.guidance, "guidance"),
      block("The guidance model's answer (no guidance block found)", r.answer, "guidance"),
      block("Summary", r.summary, "summary"),
      block("Program", r.program ? data.programs[r.program] : null, "program"),
      diffBlock(r.diff),
      cases(r.verification),
    ];
  }

  function showDetail() {
    const detail = document.getElementById("detail");
    const hash = decodeURIComponent(location.hash.slice(1));
    let content = null;
    document.querySelectorAll(".selected").forEach((e) => e.classList.remove("selected"));
    if (hash.startsWith("node-") && nodes.has(Number(hash.slice(5)))) {
      const id = Number(hash.slice(5));
      content = nodePage(nodes.get(id));
      const g = document.querySelector('[data-node-id="' + id + '"]');
      if (g) g.classList.add("selected");
    } else if (hash.startsWith("rollout-") && rollouts.has(hash.slice(8))) {
      content = rolloutPage(rollouts.get(hash.slice(8)));
    }
    detail.replaceChildren(...(content || [el("p", { class: "hint" }, "Click a node of the tree, a visit mark beside it, or a row of the rollouts below.")]).filter((x) => x));
    if (content) detail.scrollTop = 0;
  }

  // ----- every rollout, as a table ---------------------------------------------------------
  function table() {
    const t = el("table", { id: "rollout-table", class: "rollouts" });
    t.append(el("tr", {}, ...["step", "group", "rollout", "parent", "outcome", "raw score", "node", "verdict"].map((h) => el("th", {}, h))));
    for (const r of data.rollouts) {
      const v = r.verification;
      const row = el("tr", { "data-rollout-id": r.id, class: "o-" + r.outcome },
        el("td", {}, String(r.step)), el("td", {}, String(r.group)), el("td", {}, String(r.rollout)),
        el("td", {}, r.parent === null ? "–" : "#" + r.parent),
        el("td", {}, outcomeName(r.outcome)), el("td", {}, v ? fmt(v.raw_score) : "–"),
        el("td", {}, r.child === null ? "–" : "#" + r.child + (r.child_kept ? "" : " (pruned)")),
        el("td", { class: "message" }, v ? v.message : ""));
      row.addEventListener("click", () => { location.hash = r.child_kept ? "node-" + r.child : "rollout-" + r.id; });
      t.append(row);
    }
    return t;
  }

  function refresh() {
    document.querySelectorAll("#tree .visit").forEach((m) => {
      m.classList.toggle("hidden", !shown(rollouts.get(m.getAttribute("data-rollout-id"))));
    });
    document.querySelectorAll("#tree .node").forEach((g) => {
      g.classList.toggle("dimmed", !nodeShown(nodes.get(Number(g.getAttribute("data-node-id")))));
    });
    document.querySelectorAll("#rollout-table tr[data-rollout-id]").forEach((row) => {
      row.classList.toggle("hidden", !shown(rollouts.get(row.getAttribute("data-rollout-id"))));
    });
  }

  document.body.append(
    header(),
    el("section", { class: "chart-box" }, el("h2", {}, "Score over steps"), chart()),
    filters(),
    el("main", {},
      el("section", { class: "tree-box" }, el("h2", {}, "Archive (" + data.nodes.length + " nodes; marks: visits that made no node kept)"), tree()),
      el("aside", { id: "detail" })),
    el("section", { class: "table-box" }, el("h2", {}, "Rollouts"), table()),
  );
  window.addEventListener("hashchange", showDetail);
  refresh();
  showDetail();
})();
