// The explorable report's script: draws the tables from the page's JSON (see
// src/report/html_data.rs for its shape), switches the normalisation in place, and opens the
// items behind a number with their turns, scores and generations. Text from the data is only
// ever set as text, never parsed as HTML.
"use strict";

const D = JSON.parse(document.getElementById("data").textContent);
const PAGE = 200;
const NEAR_TIE = 0.1;

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "onclick" || k === "onchange" || k === "oninput") e[k] = v;
    else if (v !== null && v !== undefined && v !== false) e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

const percent = (x) => (100 * x).toFixed(1);
function estimate(m) {
  if (m.value === null) return "—";
  let s = percent(m.value);
  if (m.lo !== null && m.hi !== null) s += ` [${percent(m.lo)}, ${percent(m.hi)}]`;
  return s;
}
const short = (hex) => hex.slice(0, 12);
// JSON has no infinities: a label whose probability underflows (calibrated's log of 0) reads null.
const num = (x, digits) => (x === null ? "−∞" : x.toFixed(digits));

// Normalisations in report order (the entries come sorted by it within each setting).
const NORMS = [];
for (const r of D.results) if (!NORMS.includes(r.normalisation)) NORMS.push(r.normalisation);
const state = {
  norm: NORMS.includes("mean") ? "mean" : NORMS[0],
  explore: null,
};

// ---- each turn of a row ---------------------------------------------------------------------

function scoredTurns(row) {
  return row.filter((t) => Array.isArray(t));
}
function sum(xs) {
  let s = 0;
  for (const x of xs) s += x;
  return s;
}
// Best value minus the runner-up's (the margin of the answer under the normalisation).
function margin(values) {
  const sorted = values.map((v) => (v === null ? -Infinity : v)).sort((a, b) => b - a);
  return sorted.length > 1 ? sorted[0] - sorted[1] : Infinity;
}
function facts(r, i) {
  const row = r.rows[i];
  const view = D.sets[r.set].views[r.at[i]];
  const scored = scoredTurns(row);
  const answers = scored.map((t) => t[0]);
  const right = view.gold.map((g, k) => answers[k] === g);
  return {
    view,
    answers,
    right,
    allRight: right.length > 0 && right.every((x) => x),
    flipped: answers.length > 1 ? answers[0] !== answers[answers.length - 1] : null,
    margin: Math.min(Infinity, ...scored.map((t) => margin(t[2]))),
  };
}

// ---- overview ------------------------------------------------------------------------------

function countLink(ri, gi, ci, m) {
  const r = D.results[ri];
  const text = `(n=${m.n})`;
  if (!r.counted) return el("span", { class: "n", title: "this benchmark does not list the items it counts" }, text);
  return el("a", {
    href: "#explore", class: "n", "data-result": ri, "data-group": gi, "data-column": ci,
    onclick: (ev) => { ev.preventDefault(); openItems(ri, gi, ci); },
  }, text);
}

function cell(ri, gi, ci) {
  const m = D.results[ri].groups[gi].metrics[ci];
  if (!m) return el("td", {}, "");
  return el("td", { class: "num" }, estimate(m), " ", countLink(ri, gi, ci, m));
}

function settingsThatVary(rs) {
  return ["set", "template"].filter((k) => rs.some((r) => setting(r, k) !== setting(rs[0], k)));
}
function setting(r, k) {
  return k === "set" ? D.sets[r.set].name : r[k];
}

function drawOverview() {
  const root = document.getElementById("overview");
  root.replaceChildren();
  D.benchmarks.forEach((b, bi) => {
    const ris = D.results.map((r, i) => i).filter((i) => D.results[i].benchmark === bi && D.results[i].normalisation === state.norm);
    const sec = el("section", { class: "benchmark", id: `benchmark-${b.name}` }, el("h2", {}, b.title));
    if (ris.length === 0) {
      sec.append(el("p", {}, `No result under ${state.norm}.`));
      root.append(sec);
      return;
    }
    const vary = settingsThatVary(ris.map((i) => D.results[i]));
    const head = ["Model", ...vary.map((k) => k[0].toUpperCase() + k.slice(1)), "n"];
    const headline = b.columns.map((c, ci) => [c, ci]).filter(([c]) => c.headline);
    sec.append(el("table", { class: "headline" },
      el("thead", {}, el("tr", {}, head.map((h) => el("th", {}, h)), headline.map(([c]) => el("th", {}, c.title)), el("th", {}, ""))),
      el("tbody", {}, ris.map((ri) => {
        const r = D.results[ri];
        return el("tr", {}, el("td", {}, r.model), vary.map((k) => el("td", {}, setting(r, k))), el("td", { class: "num" }, r.n),
          headline.map(([, ci]) => cell(ri, 0, ci)),
          el("td", {}, el("button", { type: "button", onclick: () => openItems(ri, null, null) }, "items")));
      }))));
    const details = el("details", {}, el("summary", {}, "Every metric and grouping"));
    for (const ri of ris) {
      const r = D.results[ri];
      details.append(el("h3", {}, `${r.model} · ${D.sets[r.set].name} · ${r.template} · ${r.normalisation} · result ${short(r.id)}`));
      details.append(el("table", { class: "breakdown" },
        el("thead", {}, el("tr", {}, el("th", {}, "Group"), b.columns.map((c) => el("th", {}, c.title)))),
        el("tbody", {}, r.groups.map((g, gi) => el("tr", {}, el("td", {}, g.by === "overall" ? "overall" : `${g.by}: ${g.value}`),
          b.columns.map((c, ci) => cell(ri, gi, ci)))))));
    }
    sec.append(details, el("p", { class: "note" }, b.note));
    root.append(sec);
  });
}

function drawRobustness() {
  const root = document.getElementById("robustness");
  root.replaceChildren(el("h2", {}, "Robustness to the label normalisation"));
  if (D.robustness.length === 0) {
    root.append(el("p", {}, "Fewer than two normalisations per setting: nothing to compare."));
    return;
  }
  const flips = D.robustness.filter((c) => c.flips).length;
  root.append(el("p", {}, flips === 0 ? "Every conclusion holds under every normalisation." : `${flips} conclusion(s) change with the normalisation (marked).`));
  const norms = D.robustness[0].verdicts.map((v) => v.normalisation);
  root.append(el("table", { class: "robustness" },
    el("thead", {}, el("tr", {}, ["Benchmark", "Set", "Template", "Model", "Conclusion"].map((h) => el("th", {}, h)), norms.map((n) => el("th", {}, n)))),
    el("tbody", {}, D.robustness.map((c) => el("tr", { class: c.flips ? "flips" : null },
      el("td", {}, c.benchmark), el("td", {}, c.set), el("td", {}, c.template), el("td", {}, c.model || "(models compared)"), el("td", {}, c.conclusion),
      c.verdicts.map((v) => el("td", {}, v.verdict === null ? "—" : `${v.verdict} (${v.value === null ? "—" : v.value.toFixed(3)})`)))))));
}

// ---- the items behind a number -------------------------------------------------------------

// What a number counts: its rows, or units made of rows (a metric averaged over families counts
// families), each with the rows of it the metric reads; rows listed unit by unit.
function counted(count) {
  if (Array.isArray(count)) return { base: count, units: null };
  const unitOf = new Map();
  const base = [];
  for (const u of count.units) {
    for (const i of u.rows) {
      if (!unitOf.has(i)) base.push(i);
      unitOf.set(i, unitOf.has(i) ? `${unitOf.get(i)}, ${u.name}` : u.name);
    }
  }
  return { base, units: { noun: count.noun, n: count.units.length, of: unitOf } };
}

function openItems(ri, gi, ci) {
  const r = D.results[ri];
  const { base, units } = gi === null ? { base: r.rows.map((_, i) => i), units: null } : counted(r.counted[gi][ci]);
  state.explore = { ri, gi, ci, base, units, unit: "", facets: {}, answer: "any", revision: "any", nearTie: false, threshold: NEAR_TIE, compare: null, differ: false, shown: PAGE, open: null };
  drawExplore();
  document.getElementById("explore").scrollIntoView();
}

// Results of the same set, template and normalisation under another model.
function peers(r) {
  return D.results.map((x, i) => i).filter((i) => {
    const x = D.results[i];
    return x !== r && x.set === r.set && x.template === r.template && x.normalisation === r.normalisation && x.model !== r.model;
  });
}

function rowOf(r, position) {
  if (!r.rowAt) {
    r.rowAt = new Map();
    r.at.forEach((p, i) => r.rowAt.set(p, i));
  }
  return r.rowAt.get(position);
}

function selected() {
  const s = state.explore;
  const r = D.results[s.ri];
  const other = s.compare === null ? null : D.results[s.compare];
  return s.base.filter((i) => {
    if (s.units && s.unit !== "" && !s.units.of.get(i).split(", ").includes(s.unit)) return false;
    const f = facts(r, i);
    for (const [k, v] of Object.entries(s.facets)) {
      if (v !== "" && !f.view.facets.some(([fk, fv]) => fk === k && fv === v)) return false;
    }
    if (s.answer === "right" && !f.allRight) return false;
    if (s.answer === "wrong" && (f.right.length === 0 || f.allRight)) return false;
    if (s.revision === "flipped" && f.flipped !== true) return false;
    if (s.revision === "kept" && f.flipped !== false) return false;
    if (s.nearTie && !(f.margin < s.threshold)) return false;
    if (other && s.differ) {
      const j = rowOf(other, r.at[i]);
      if (j === undefined) return false;
      if (facts(other, j).answers.join() === f.answers.join()) return false;
    }
    return true;
  });
}

function drawExplore() {
  const s = state.explore;
  const root = document.getElementById("explore");
  root.hidden = false;
  const r = D.results[s.ri];
  const b = D.benchmarks[r.benchmark];
  const set = D.sets[r.set];
  let what = "every item";
  if (s.gi !== null) {
    const g = r.groups[s.gi];
    const counts = s.units ? `the ${s.units.n} ${s.units.noun[1]} it counts (${s.base.length} items)` : `the ${s.base.length} items it counts`;
    what = `${b.columns[s.ci].title}, ${g.by === "overall" ? "overall" : `${g.by} ${g.value}`}: ${counts}`;
  }
  root.replaceChildren(
    el("h2", {}, `Items — ${b.title}`),
    el("p", { class: "what" }, `${what} · model ${r.model} · set ${set.name} · template ${r.template} · normalisation ${r.normalisation} · result ${r.id}`),
    el("button", { type: "button", onclick: () => { root.hidden = true; state.explore = null; } }, "close"));
  // Filters.
  const facetKeys = [];
  for (const i of s.base) for (const [k] of set.views[r.at[i]].facets) if (!facetKeys.includes(k)) facetKeys.push(k);
  const filters = el("div", { class: "filters" });
  const redraw = () => { s.shown = PAGE; drawExplore(); };
  if (s.units) {
    const names = [...new Set(s.base.flatMap((i) => s.units.of.get(i).split(", ")))];
    filters.append(el("label", {}, s.units.noun[0], " ", el("select", { "data-filter": "unit", onchange: (ev) => { s.unit = ev.target.value; redraw(); } },
      el("option", { value: "" }, "all"), names.map((v) => el("option", { value: v, selected: s.unit === v }, v)))));
  }
  for (const k of facetKeys) {
    const values = [...new Set(s.base.map((i) => (set.views[r.at[i]].facets.find(([fk]) => fk === k) || [])[1]).filter((v) => v !== undefined))].sort();
    filters.append(el("label", {}, k, " ", el("select", { "data-facet": k, onchange: (ev) => { s.facets[k] = ev.target.value; redraw(); } },
      el("option", { value: "" }, "all"), values.map((v) => el("option", { value: v, selected: s.facets[k] === v }, v)))));
  }
  const choice = (name, key, options) => el("label", {}, name, " ", el("select", { "data-filter": key, onchange: (ev) => { s[key] = ev.target.value; redraw(); } },
    options.map(([v, t]) => el("option", { value: v, selected: s[key] === v }, t))));
  filters.append(choice("answers", "answer", [["any", "any"], ["right", "all right"], ["wrong", "some wrong"]]));
  filters.append(choice("revision", "revision", [["any", "any"], ["flipped", "flipped"], ["kept", "kept"]]));
  filters.append(el("label", {}, el("input", { type: "checkbox", "data-filter": "near-tie", checked: s.nearTie, onchange: (ev) => { s.nearTie = ev.target.checked; redraw(); } }),
    " near ties: margin below ", el("input", { type: "number", step: "0.01", min: "0", value: s.threshold, "data-filter": "threshold", onchange: (ev) => { s.threshold = Number(ev.target.value); redraw(); } })));
  const others = peers(r);
  if (others.length > 0) {
    filters.append(el("label", {}, "compare with ", el("select", { "data-filter": "compare", onchange: (ev) => { s.compare = ev.target.value === "" ? null : Number(ev.target.value); redraw(); } },
      el("option", { value: "" }, "no other model"), others.map((i) => el("option", { value: i, selected: s.compare === i }, D.results[i].model)))),
    el("label", {}, el("input", { type: "checkbox", "data-filter": "differ", checked: s.differ, onchange: (ev) => { s.differ = ev.target.checked; redraw(); } }), " only where their answers differ"));
  }
  root.append(filters);
  // The list, a page at a time.
  const rows = selected();
  const other = s.compare === null ? null : D.results[s.compare];
  root.append(el("p", { id: "shown-count", "data-count": rows.length }, `${rows.length} of ${s.base.length} items`));
  const turns = Math.max(0, ...s.base.slice(0, 1).map((i) => scoredTurns(r.rows[i]).length));
  const table = el("table", { class: "items" },
    el("thead", {}, el("tr", {}, el("th", {}, "#"), el("th", {}, "item"), s.units ? el("th", {}, s.units.noun[0]) : [], facetKeys.map((k) => el("th", {}, k)),
      Array.from({ length: turns }, (_, k) => el("th", {}, `answer ${k + 1}`)),
      other ? Array.from({ length: turns }, (_, k) => el("th", {}, `${other.model} ${k + 1}`)) : [],
      el("th", {}, "margin"))));
  const body = el("tbody");
  for (const i of rows.slice(0, s.shown)) {
    const f = facts(r, i);
    const id = set.items[r.at[i]];
    const answerCells = (fx) => fx.answers.map((a, k) => el("td", { class: fx.right[k] === undefined ? "" : fx.right[k] ? "right" : "wrong" }, a));
    const j = other ? rowOf(other, r.at[i]) : undefined;
    const unit = s.units ? s.units.of.get(i) : null;
    body.append(el("tr", { class: s.open === i ? "item open" : "item", "data-id": id, "data-unit": unit, onclick: () => { s.open = s.open === i ? null : i; drawExplore(); } },
      el("td", {}, r.at[i] + 1), el("td", { class: "id" }, short(id)), s.units ? el("td", {}, unit) : [],
      facetKeys.map((k) => el("td", {}, (f.view.facets.find(([fk]) => fk === k) || ["", ""])[1])),
      answerCells(f), other ? (j === undefined ? el("td", {}, "—") : answerCells(facts(other, j))) : [],
      el("td", { class: "num" }, f.margin === Infinity ? "" : f.margin.toFixed(3))));
    if (s.open === i) body.append(el("tr", { class: "detail" }, el("td", { colspan: 4 + (s.units ? 1 : 0) + facetKeys.length + 2 * turns }, detail(r, i, other, j))));
  }
  table.append(body);
  root.append(table);
  if (rows.length > s.shown) {
    root.append(el("button", { type: "button", id: "more", onclick: () => { s.shown += PAGE; drawExplore(); } }, `show ${Math.min(PAGE, rows.length - s.shown)} more`));
  }
}

function detail(r, i, other, j) {
  const view = D.sets[r.set].views[r.at[i]];
  const out = el("div", { class: "item-detail" }, el("p", { class: "id" }, "item ", D.sets[r.set].items[r.at[i]]));
  if (view.facets.length) out.append(el("p", {}, view.facets.map(([k, v]) => `${k}: ${v}`).join(" · ")));
  for (const b of view.blocks) {
    out.append(el("h4", {}, b.title));
    if (b.kind === "text") out.append(el("p", { class: "text" }, b.text));
    else if (b.kind === "list") out.append(el("ol", {}, b.items.map((x) => el("li", {}, x))));
    else if (b.kind === "diff") out.append(el("ul", { class: "diff" }, b.lines.map((l) => el("li", { class: l.mark }, l.mark === "added" ? "+ " : l.mark === "removed" ? "− " : "  ", l.text))));
  }
  out.append(turnsOf(r, i, view));
  if (other && j !== undefined) out.append(el("h4", {}, `Compared: ${other.model}`), turnsOf(other, j, view));
  return out;
}

function turnsOf(r, i, view) {
  const out = el("div", { class: "turns" });
  let k = 0;
  r.rows[i].forEach((t, n) => {
    if (!Array.isArray(t)) {
      const [key, text] = D.generations[t];
      out.append(el("h5", {}, `Turn ${n + 1}: generated (${r.model})`), el("pre", { class: "generation" }, text), el("p", { class: "key" }, "generation ", key));
      return;
    }
    const [answer, scores, values, free] = t;
    const gold = view.gold[k++];
    const best = values.indexOf(Math.max(...values.filter((v) => v !== null)));
    const m = margin(values);
    out.append(el("h5", {}, `Turn ${n + 1}: answered ${answer}`, gold === undefined ? "" : ` (gold ${gold}: ${answer === gold ? "right" : "wrong"})`, `, margin ${m === Infinity ? "—" : m.toFixed(4)} under ${r.normalisation}`));
    out.append(el("table", { class: "scores" },
      el("thead", {}, el("tr", {}, ["label", "log-prob", "per token", r.normalisation, "score id"].map((h) => el("th", {}, h)))),
      el("tbody", {}, scores.map((s, x) => {
        const [key, label, logprobs] = D.scores[s];
        return el("tr", { class: x === best ? "chosen" : null },
          el("td", {}, JSON.stringify(label)), el("td", { class: "num" }, sum(logprobs).toFixed(4)),
          el("td", { class: "tokens" }, logprobs.map((p) => p.toFixed(3)).join(" ")),
          el("td", { class: "num" }, num(values[x], 4)), el("td", { class: "key" }, key));
      }))));
    if (free.length) out.append(el("p", { class: "key" }, "content-free scores: ", free.map((s) => D.scores[s][0]).join(" ")));
  });
  return out;
}

// ---- start ---------------------------------------------------------------------------------

const select = document.getElementById("norm");
for (const n of NORMS) select.append(el("option", { value: n, selected: n === state.norm }, n));
select.onchange = () => {
  state.norm = select.value;
  drawOverview();
};
drawOverview();
drawRobustness();
