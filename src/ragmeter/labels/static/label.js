"use strict";
// The labelling page. Every text of the run is put on the page with textContent, never as
// markup. Each keystroke is sent to the server, which writes it to the run's labels before it
// answers with what to show next; keystrokes are handled one after another, in order.
(() => {
  const params = new URLSearchParams(location.search);
  const token = params.get("token") || "";
  const $ = (id) => document.getElementById(id);
  let annotator = params.get("annotator") || localStorage.getItem("ragmeter.annotator") || "";
  let state = null;
  let queue = Promise.resolve();
  let retry = null;

  function el(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }

  function status(text, error) {
    const node = $("status");
    node.textContent = text;
    node.classList.toggle("error", Boolean(error));
  }

  async function call(method, path, body) {
    const headers = {};
    if (token) headers["X-Ragmeter-Token"] = token;
    const options = { method, headers };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
    }
    const response = await fetch(path, options);
    const data = await response.json().catch(() => ({ error: response.statusText }));
    if (!response.ok) throw Object.assign(new Error(data.error || response.statusText), { answered: true });
    return data;
  }

  function failed(error) {
    if (error.answered) {
      status("not saved: " + error.message, true);
      return;
    }
    status("not saved: the labelling server does not answer. Start `ragmeter label` again; "
      + "this page reconnects by itself, then press the key again (nothing saved is lost).", true);
    document.body.dataset.connected = "false";
    if (retry === null) retry = setTimeout(reconnect, 1000);
  }

  async function reconnect() {
    retry = null;
    try {
      await load();
      status("reconnected: everything saved before is kept");
    } catch (error) {
      retry = setTimeout(reconnect, 1000);
    }
  }

  async function load() {
    const query = annotator ? "?annotator=" + encodeURIComponent(annotator) : "";
    show(await call("GET", "/api/state" + query));
  }

  // -- drawing ----------------------------------------------------------------------------

  function show(next) {
    state = next;
    const setup = next.setup;
    annotator = setup.annotator;
    localStorage.setItem("ragmeter.annotator", annotator);
    document.body.dataset.connected = "true";
    if (document.activeElement !== $("annotator")) $("annotator").value = annotator;
    $("what").textContent = setup.kind === "claim"
      ? "· claims of " + setup.metric + " · " + setup.run
      : "· " + setup.metric + " on " + setup.scale + " · " + setup.run;
    const order = $("order-note");
    order.textContent = setup.order_note;
    order.classList.toggle("biased", setup.order !== "random");
    const notes = clear($("notes"));
    for (const note of setup.notes) notes.appendChild(el("li", note));
    const progress = next.progress;
    $("progress").max = Math.max(progress.total, 1);
    $("progress").value = progress.labelled;
    $("progress-text").textContent = progress.labelled + " of " + progress.total + " labelled"
      + (progress.skipped ? " · " + progress.skipped + " skipped" : "");
    drawItem(next.item, setup);
    drawRevealed(next.revealed, setup);
    drawAgreement(next.agreement);
    drawChoices(setup, next.item);
    document.body.dataset.ready = "true";
  }

  function drawItem(item, setup) {
    const root = clear($("item"));
    if (!item) {
      root.dataset.key = "";
      root.dataset.position = "";
      root.appendChild(el("p", "Every item is labelled (" + state.progress.labelled + "). "
        + "Thank you.", "done"));
      root.appendChild(el("p", "They are saved in the run's labels.sqlite; calibrate, tune and "
        + "report read them from the run. To write them as files:"));
      const file = setup.kind === "claim" ? "--claims --export claims.jsonl" : "--export ratings.jsonl";
      root.appendChild(el("code", "ragmeter label " + setup.run + " " + file));
      return;
    }
    root.dataset.key = item.key;
    root.dataset.position = String(item.position);
    const where = el("p", "Item " + item.position + " of " + state.progress.total + " · sample "
      + item.sample_id, "position");
    if (item.skipped) where.appendChild(el("span", " · skipped before", "again"));
    root.appendChild(where);
    if (setup.kind === "claim") {
      root.appendChild(el("h2", "Claim"));
      root.appendChild(el("p", item.claim, "claim"));
      root.appendChild(el("h2", "Evidence: the retrieved passages"));
      const legend = el("p", "", "legend");
      legend.appendChild(el("span", "marked", "sentence"));
      legend.appendChild(document.createTextNode(
        ": the sentences holding most of the claim's words, where to look first (the judge "
        + "gives one verdict against all passages together, not a sentence)"));
      root.appendChild(legend);
      item.evidence.forEach((passage) => {
        const block = el("p", null, "passage");
        passage.forEach((sentence, index) => {
          if (index) block.appendChild(document.createTextNode(" "));
          const span = el("span", sentence.text, "sentence" + (sentence.marked ? " marked" : ""));
          if (sentence.marked) span.title = "shares " + Math.round(sentence.share * 100) + " % of the claim's words";
          block.appendChild(span);
        });
        root.appendChild(block);
      });
      root.appendChild(el("h2", "Question"));
      root.appendChild(el("p", item.question, "text"));
      root.appendChild(el("h2", "The answer the claim is from"));
      root.appendChild(el("p", item.answer, "text"));
    } else {
      root.appendChild(el("h2", "Question"));
      root.appendChild(el("p", item.question, "text"));
      if (item.answer) {  // a (query, passage) pair to grade has none
        root.appendChild(el("h2", "Answer"));
        root.appendChild(el("p", item.answer, "text"));
      }
      root.appendChild(el("h2", "Retrieved passages"));
      item.contexts.forEach((context) => root.appendChild(el("p", context, "passage text")));
    }
  }

  function drawRevealed(revealed, setup) {
    const root = clear($("revealed"));
    root.appendChild(el("h2", "Your last answer"));
    if (!revealed) {
      root.appendChild(el("p", "The judge's verdict of each item shows here once you have "
        + "answered it.", "legend"));
      return;
    }
    root.dataset.key = revealed.key;
    root.appendChild(el("p", "Item " + revealed.position + " · sample " + revealed.sample_id, "position"));
    if (revealed.claim) root.appendChild(el("p", revealed.claim, "text"));
    const grid = el("div", null, "verdicts");
    grid.appendChild(el("span", "you"));
    grid.appendChild(el("strong", revealed.yours, "yours"));
    grid.appendChild(el("span", "the judge"));
    const tone = revealed.same === null ? "" : revealed.same ? " same" : " differ";
    grid.appendChild(el("strong", revealed.judge, "judge" + tone));
    root.appendChild(grid);
    if (revealed.same !== null) {
      root.appendChild(el("p", revealed.same ? "The judge agrees." : "The judge differs.", tone.trim()));
    }
    if (revealed.note) root.appendChild(el("p", "note: " + revealed.note, "legend"));
  }

  function percent(value) {
    return value === null ? "—" : Math.round(value * 100) + " %";
  }

  function drawAgreement(rows) {
    const root = clear($("agreement"));
    root.appendChild(el("h2", "Agreement with you"));
    const table = el("table");
    const head = el("tr");
    for (const name of ["with", "items", "agree", "Cohen's κ"]) head.appendChild(el("th", name));
    table.appendChild(head);
    for (const row of rows) {
      const line = el("tr");
      line.dataset.with = row.with;
      line.appendChild(el("td", row.with));
      line.appendChild(el("td", row.items, "items"));
      line.appendChild(el("td", percent(row.agreement), "agree"));
      line.appendChild(el("td", row.kappa === null ? "—" : row.kappa.toFixed(2), "kappa"));
      table.appendChild(line);
    }
    root.appendChild(table);
    if (rows.length < 2) {
      root.appendChild(el("p", "No one else has labelled these items yet: a second person "
        + "opens this page with their own name, and their agreement with you shows here.", "legend"));
    }
  }

  function drawChoices(setup, item) {
    const root = clear($("choices"));
    for (const choice of setup.choices) {
      const button = el("button");
      button.type = "button";
      button.disabled = !item;
      button.appendChild(el("kbd", choice.keys.join(" / ")));
      if (choice.text !== choice.keys[0]) button.appendChild(document.createTextNode(" " + choice.text));
      button.addEventListener("click", () => enqueue(() => answer(choice.value), performance.now()));
      root.appendChild(button);
    }
    const keys = setup.choices.map((c) => c.keys.join("/") + (c.text === c.keys[0] ? "" : " " + c.text));
    const answers = setup.kind === "rating" && keys.every((k) => k.length === 1)
      ? keys.join(" ") + " your rating on " + setup.scale
      : keys.join(" · ");
    $("keys").textContent = "Keys: " + answers + " · s skip · u undo · e note · "
      + "Esc back to the keys";
  }

  // -- acting -----------------------------------------------------------------------------

  function enqueue(action, pressedAt) {
    queue = queue.then(async () => {
      try {
        const next = await action();
        if (!next) return;
        show(next);
        const shown = performance.now() - pressedAt;
        document.body.dataset.latencyMs = shown.toFixed(1);
        status((next.undone || "saved") + " · next item shown in " + Math.round(shown) + " ms");
      } catch (error) {
        failed(error);
      }
    });
  }

  function answer(value) {
    if (!state || !state.item) return null;
    const note = $("note").value;
    return call("POST", "/api/answer", { annotator, item: state.item.key, value, note })
      .then((next) => { $("note").value = ""; return next; });
  }

  function skip() {
    if (!state || !state.item) return null;
    return call("POST", "/api/skip", { annotator, item: state.item.key });
  }

  function undo() {
    return call("POST", "/api/undo", { annotator });
  }

  document.addEventListener("keydown", (event) => {
    const target = event.target;
    if (target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement) {
      if (event.key === "Escape") target.blur();
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || !state) return;
    const key = event.key.toLowerCase();
    const pressedAt = performance.now();
    const choice = state.setup.choices.find((c) => c.keys.includes(key));
    if (choice) enqueue(() => answer(choice.value), pressedAt);
    else if (key === "s") enqueue(skip, pressedAt);
    else if (key === "u") enqueue(undo, pressedAt);
    else if (key === "e") $("note").focus();
    else return;
    event.preventDefault();
  });

  $("annotator").addEventListener("change", () => {
    const name = $("annotator").value.trim();
    if (!name) return;
    annotator = name;
    enqueue(async () => { await load(); return null; }, performance.now());
    $("annotator").blur();
  });

  load().catch(failed);
})();
