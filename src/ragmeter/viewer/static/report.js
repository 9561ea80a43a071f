// Draws a ragmeter report from the data embedded in the page (see viewer/views.py for its
// shape). Everything is built with DOM calls and textContent: judge replies and sample texts
// are shown as written, never interpreted as HTML. Wrapped in a function: the Vega bundle
// defines globals of its own.
(() => {
"use strict";

const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value);
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
};

const show = (value) =>
  value === null || value === undefined ? "" : typeof value === "number"
    ? (Number.isInteger(value) ? String(value) : value.toFixed(3)) : String(value);

async function readData() {
  const text = document.getElementById("ragmeter-data").textContent.trim();
  const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Response(stream).json();
}

function notes(list, cls) {
  if (!list || !list.length) return null;
  return el("ul", { class: cls }, ...list.map((n) => el("li", { text: n })));
}

function cardView(c) {
  return el("div", { class: "card" + (c.warn ? " warn" : "") },
    el("div", { class: "card-title", text: c.title }),
    el("div", { class: "card-value", text: c.value }),
    c.detail ? el("div", { class: "card-detail", text: c.detail }) : null,
    c.detail2 ? el("div", { class: "card-detail", text: c.detail2 }) : null,
    c.foot ? el("div", { class: "card-foot", text: c.foot }) : null,
    notes(c.reasons, "card-reasons"));
}

const pendingCharts = [];

function chartView(spec) {
  const holder = el("div", { class: "chart" });
  pendingCharts.push(vegaEmbed(holder, spec, { actions: false, renderer: "svg" }));
  return holder;
}

function exchangeView(x, i) {
  const summary = `${i + 1}. ${x.prompt}` + (x.probability != null ? ` · P(yes) ${x.probability.toFixed(4)}` : "")
    + (x.cached ? " · cached" : "") + (x.error ? " · error" : "");
  return el("details", { class: "exchange" }, el("summary", { text: summary }),
    ...x.messages.map(([role, content]) => el("div", { class: "message" },
      el("span", { class: "role", text: role }), el("pre", { text: content }))),
    el("div", { class: "message" }, el("span", { class: "role", text: "reply" }),
      el("pre", { text: x.reply == null ? "(none)" : x.reply })),
    x.error ? el("div", { class: "error", text: x.error }) : null);
}

// A check's cell: its probability, shaded the more the surer the judge was, green for a Yes
// (at the threshold or above) and red for a No; a verdict word where there is no probability;
// empty where the claim was not checked against that text.
function checkCell(value, threshold) {
  if (value === null || value === undefined) return el("td", { class: "check unchecked" });
  const yes = typeof value === "number" ? value >= threshold : value === "yes";
  const cell = el("td", { class: "check " + (yes ? "yes" : "no"),
    text: typeof value === "number" ? value.toFixed(2) : value,
    title: typeof value === "number" ? `P(supported) ${value}` : "" });
  if (typeof value === "number") {
    const sure = yes ? (value - threshold) / (1 - threshold) : (threshold - value) / threshold;
    cell.style.setProperty("--sure", String(Math.min(1, Math.max(0, sure || 0))));
  }
  return cell;
}

function claimTableView(c) {
  const head = el("tr", {}, el("th", { text: "claim" }),
    ...c.columns.map((name) => el("th", { class: "check", text: name })),
    el("th", { class: "fate", text: "fate" }));
  const body = el("tbody");
  for (const group of c.groups) {
    body.append(el("tr", { class: "group" },
      el("td", { colspan: String(c.columns.length + 2), text: `${group.name} (${group.rows.length})` })));
    for (const row of group.rows) {
      body.append(el("tr", { class: "claim-row" },
        el("td", { class: "claim" }, row.claim, row.note ? el("div", { class: "note", text: row.note }) : null),
        ...row.cells.map((value) => checkCell(value, c.threshold)),
        el("td", { class: "fate " + (row.tone || "plain"), text: row.fate })));
    }
  }
  return el("div", { class: "claims-wrap" },
    el("table", { class: "claims" }, el("thead", {}, head), body));
}

function blockView(b) {
  const lines = (b.lines || []).join("\n");
  return el("div", { class: "block" + (b.unscored ? " unscored" : "") + (b.wide ? " wide" : "") },
    el("h4", { text: b.heading }),
    b.value ? el("div", { class: "block-value", text: b.value }) : null,
    b.claims ? claimTableView(b.claims) : null,
    lines || !b.claims ? el("pre", { class: "lines", text: lines || "(no explanation)" }) : null,
    b.exchanges && b.exchanges.length
      ? el("div", { class: "exchanges" }, el("div", { class: "muted", text: `judge exchanges (${b.exchanges.length})` }),
        ...b.exchanges.map(exchangeView))
      : null);
}

const measure = document.createElement("canvas").getContext("2d");

// Pixels a fitted table's numeric column needs: its header's longest word (a header wraps at
// underscores and spaces, in the bold 12px font of table.fit th), or a three-decimal number.
function headerWidth(name) {
  measure.font = "bold 12px " + getComputedStyle(document.body).fontFamily;
  const words = name.split(/(?<=_)|\s+/).map((word) => measure.measureText(word).width);
  return Math.ceil(Math.max(measure.measureText("0.000").width, ...words)) + 14;
}

function tableView(t) {
  const wrap = el("div", { class: "table-wrap", "data-table": t.name });
  const head = el("tr");
  const body = el("tbody");
  const count = el("span", { class: "count" });
  let order = t.rows.map((_, i) => i);
  let sortColumn = -1, descending = false, query = "", flag = "";
  const open = new Set();
  const text = t.rows.map((r) => r.cells.map(show).join(" \u0001 ").toLowerCase());

  function draw() {
    const visible = order.filter((i) => (!flag || (t.rows[i].flags || []).includes(flag))
      && (!query || text[i].includes(query)));
    body.replaceChildren();
    for (const i of visible) {
      const row = t.rows[i];
      const cells = row.cells.map((v, c) => {
        const numeric = t.columns[c].numeric;
        const missing = numeric && (v === null || v === undefined);
        const missingClass = t.missing === "unscored" ? " unscored" : " missing";
        return el("td", { class: (numeric ? "num" : "") + (missing ? missingClass : ""),
          title: typeof v === "string" && v.length > 80 ? v : "",
          text: missing ? t.missing : show(v) });
      });
      const tr = el("tr", { class: "row" + (row.detail ? " openable" : "") + (open.has(i) ? " open" : "") }, ...cells);
      if (row.detail) tr.addEventListener("click", () => { open.has(i) ? open.delete(i) : open.add(i); draw(); });
      body.append(tr);
      if (row.detail && open.has(i)) {
        body.append(el("tr", { class: "detail" }, el("td", { colspan: String(t.columns.length) },
          row.full ? el("div", { class: "full" }, el("strong", { text: "answer: " }), row.full) : null,
          el("div", { class: "blocks" }, ...row.detail.map(blockView)))));
      }
    }
    count.textContent = `${visible.length} of ${t.rows.length} rows`;
  }

  t.columns.forEach((c, index) => {
    // A break after each underscore lets a long metric name wrap in a narrow column.
    const th = el("th", { class: c.numeric ? "num" : "", text: c.name.replace(/_/g, "_\u200b"), title: "sort" });
    th.addEventListener("click", () => {
      descending = sortColumn === index ? !descending : false;
      sortColumn = index;
      const key = (i) => t.rows[i].cells[index];
      order = t.rows.map((_, i) => i).sort((a, b) => {
        const x = key(a), y = key(b);
        if (x == null || y == null) return (x == null) - (y == null);  // missing last
        const cmp = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
        return descending ? -cmp : cmp;
      });
      head.querySelectorAll("th").forEach((h) => h.removeAttribute("data-sort"));
      th.setAttribute("data-sort", descending ? "desc" : "asc");
      draw();
    });
    head.append(th);
  });

  const tools = el("div", { class: "tools" });
  if (t.interactive) {
    const search = el("input", { type: "search", placeholder: "search", class: "search" });
    search.addEventListener("input", () => { query = search.value.trim().toLowerCase(); draw(); });
    tools.append(search);
    if (t.filters.length) {
      const select = el("select", { class: "filter" },
        ...t.filters.map((f) => el("option", { value: f.flag, text: f.label })));
      select.addEventListener("change", () => { flag = select.value; draw(); });
      tools.append(select);
    }
  }
  tools.append(count);
  // An interactive table fits its page: a number's column is as wide as the longest word of
  // its name (names wrap at underscores), a sample id's is narrow, the texts share the rest,
  // cut short with an ellipsis (an opened row shows them whole).
  const fitted = t.interactive
    ? el("colgroup", {}, ...t.columns.map((c) => c.name === "id" ? el("col", { class: "key" })
      : c.numeric ? el("col", { style: `width: ${headerWidth(c.name)}px` }) : el("col")))
    : null;
  wrap.append(tools, el("table", { class: t.interactive ? "fit" : "" }, fitted, el("thead", {}, head), body));
  draw();
  return wrap;
}

function sectionView(s) {
  return el("section", {},
    el("h2", { text: s.heading }),
    notes(s.problems, "problems"),
    notes(s.notes, "notes"),
    s.text ? el("p", { class: "muted", text: s.text }) : null,
    s.cards ? el("div", { class: "cards" }, ...s.cards.map(cardView)) : null,
    s.charts ? el("div", { class: "charts" }, ...s.charts.map(chartView)) : null,
    s.table ? tableView(s.table) : null);
}

async function main() {
  const root = document.getElementById("report");
  const page = await readData();
  root.replaceChildren(
    el("header", {},
      el("h1", { text: page.title }),
      ...page.runs.map((r) => el("div", { class: "about" },
        el("p", { class: "muted", text: (page.runs.length > 1 ? r.label + ": " : "") + r.about }),
        notes(r.notes, "notes"))),
      el("p", { class: "muted small", text: "written " + page.generated })),
    ...page.sections.map(sectionView));
  await Promise.all(pendingCharts);
  document.body.setAttribute("data-ready", "true");
}

main().catch((error) => {
  document.getElementById("report").replaceChildren(el("p", { class: "problems", text: "cannot show the report: " + error }));
  console.error(error);
});
})();
