// tokenpact playground: talks only to this server's /api (same origin), no other network.
"use strict";

const $ = (sel) => document.querySelector(sel);
let tokenizers = [];

function showError(message) {
  const box = $("#error");
  box.textContent = message || "";
  box.hidden = !message;
}

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
  };
  const response = await fetch(path, init);
  const data = await response.json();
  if (!response.ok) throw new Error(`${response.status}: ${data.error}`);
  showError("");
  return data;
}

function debounce(fn, ms) {
  let timer;
  return (...args) => { clearTimeout(timer); timer = setTimeout(() => fn(...args), ms); };
}

// Offsets from the API are codepoint indices; JS strings index UTF-16 units.
function codepoints(text) { return Array.from(text); }
function unitToCodepoint(text, unit) { return Array.from(text.slice(0, unit)).length; }

// Visible whitespace inside a token piece: a space is a middle dot, a newline an arrow
// (then a line break), a tab an arrow, each in a muted span, so a token of spaces is
// never an empty box and leading spaces show.
const WHITESPACE_GLYPHS = { " ": "\u00b7", "\n": "\u21b5", "\t": "\u2192", "\r": "\u240d" };
function visible(text) {
  const out = document.createDocumentFragment();
  let plain = "";
  for (const ch of text) {
    const glyph = WHITESPACE_GLYPHS[ch];
    if (glyph === undefined) { plain += ch; continue; }
    if (plain) { out.append(plain); plain = ""; }
    const ws = document.createElement("span");
    ws.className = "ws";
    ws.textContent = glyph;
    out.append(ws);
  }
  if (plain) out.append(plain);
  return out;
}

function tokenElement(token, extraClass) {
  const el = document.createElement("span");
  el.className = `tok ${extraClass}`;
  if (token.partial) el.classList.add("partial");
  if (token.special) el.classList.add("special");
  el.dataset.index = token.index;
  el.dataset.id = token.id;
  el.dataset.start = token.start;
  el.dataset.end = token.end;
  el.dataset.text = token.text;
  el.title = `id ${token.id} · bytes ${token.hex} · chars ${token.start}-${token.end}`;
  el.append(visible(token.text));
  const sub = document.createElement("sub");
  sub.textContent = token.id;
  el.append(sub);
  return el;
}

function renderSource(container, text) {
  container.replaceChildren(...codepoints(text).map((ch, i) => {
    const span = document.createElement("span");
    span.dataset.i = i;
    span.textContent = ch;
    return span;
  }));
}

function lightSource(container, start, end, cls) {
  container.querySelectorAll(`.${cls}`).forEach((el) => el.classList.remove(cls));
  for (let i = start; i < end; i++) {
    const span = container.querySelector(`[data-i="${i}"]`);
    if (span) span.classList.add(cls);
  }
}

function countsLine(c) {
  const bpt = c.bytes_per_token === null ? "–" : c.bytes_per_token.toFixed(2);
  return `<b data-count="tokens">${c.tokens}</b> tokens · <b data-count="bytes">${c.bytes}</b> bytes · ` +
    `<b>${c.characters}</b> characters · <b data-count="bpt">${bpt}</b> bytes/token`;
}

function fillSelect(select, items) {
  select.replaceChildren(...items.map((t) => new Option(t.name, t.name)));
}

// ---- Tokens tab ----
async function encodeNow() {
  const text = $("#text").value;
  const name = $("#tok-select").value;
  if (!name) return;
  try {
    const data = await api("/api/encode", { tokenizer: name, text });
    if ($("#text").value !== text) return; // a newer request is on its way
    $("#counts").innerHTML = countsLine(data.counts);
    $("#counts").dataset.tokens = data.counts.tokens;
    renderSource($("#source"), text);
    const box = $("#tokens");
    box.replaceChildren(...data.tokens.map((t) => tokenElement(t, `c${t.index % 6}`)));
    box.dataset.ids = JSON.stringify(data.ids);
    highlightSelection();
  } catch (err) { showError(err.message); }
}
const encodeSoon = debounce(encodeNow, 120);

function highlightSelection() {
  const area = $("#text");
  const start = unitToCodepoint(area.value, area.selectionStart);
  const end = unitToCodepoint(area.value, area.selectionEnd);
  document.querySelectorAll("#tokens .tok").forEach((el) => {
    const s = Number(el.dataset.start), e = Number(el.dataset.end);
    el.classList.toggle("selected", start < end && s < end && start < e);
  });
}

function wireTokens() {
  $("#text").addEventListener("input", encodeSoon);
  $("#tok-select").addEventListener("change", encodeNow);
  for (const ev of ["select", "keyup", "mouseup"]) $("#text").addEventListener(ev, highlightSelection);
  document.addEventListener("selectionchange", highlightSelection);
  $("#tokens").addEventListener("mouseover", (ev) => {
    const el = ev.target.closest(".tok");
    if (!el) return;
    document.querySelectorAll("#tokens .hover").forEach((t) => t.classList.remove("hover"));
    el.classList.add("hover");
    lightSource($("#source"), Number(el.dataset.start), Number(el.dataset.end), "lit");
    $("#detail").textContent = el.title;
  });
  $("#tokens").addEventListener("mouseleave", () => {
    document.querySelectorAll("#tokens .hover").forEach((t) => t.classList.remove("hover"));
    lightSource($("#source"), 0, 0, "lit");
  });
}

// ---- Side-by-side tab ----
async function compareNow() {
  const names = [...document.querySelectorAll("#cmp-list input:checked")].map((i) => i.value);
  const text = $("#cmp-text").value;
  if (names.length < 2) { $("#cmp-summary").textContent = "Pick at least two tokenizers."; return; }
  try {
    const data = await api("/api/compare", { tokenizers: names, text });
    const now = [...document.querySelectorAll("#cmp-list input:checked")].map((i) => i.value);
    // A newer request is on its way when the text or the choice changed meanwhile.
    if ($("#cmp-text").value !== text || now.join("\n") !== names.join("\n")) return;
    renderSource($("#cmp-source"), text);
    for (const [s, e] of data.diff_spans) {
      for (let i = s; i < e; i++) $("#cmp-source").querySelector(`[data-i="${i}"]`)?.classList.add("diff");
    }
    $("#cmp-summary").textContent = data.identical
      ? "All tokenizers split this text identically."
      : `${data.diff_spans.length} span(s) split differently.`;
    $("#cmp-results").replaceChildren(...data.results.map((r) => {
      const col = document.createElement("div");
      col.className = "cmp-col";
      col.dataset.name = r.name;
      const h = document.createElement("h3");
      h.textContent = r.name;
      const c = document.createElement("p");
      c.className = "counts";
      c.innerHTML = countsLine(r.counts);
      const box = document.createElement("div");
      box.className = "tokens";
      box.append(...r.tokens.map((t) => {
        const el = tokenElement(t, `c${t.index % 6}`);
        if (t.differs) el.classList.add("differs");
        return el;
      }));
      col.append(h, c, box);
      return col;
    }));
    $("#cmp-results").dataset.text = text;
  } catch (err) { showError(err.message); }
}

function wireCompare() {
  const list = $("#cmp-list");
  list.replaceChildren(...tokenizers.map((t, i) => {
    const label = document.createElement("label");
    const box = document.createElement("input");
    box.type = "checkbox";
    box.value = t.name;
    box.checked = i < 2;
    box.addEventListener("change", compareNow);
    label.append(box, ` ${t.name} `);
    return label;
  }));
  $("#cmp-text").addEventListener("input", debounce(compareNow, 150));
}

// ---- Chat tab ----
function chatTokens(tokens, boundary, extra) {
  const box = document.createElement("div");
  box.className = "tokens";
  tokens.forEach((t, i) => {
    if (i === boundary) {
      const bar = document.createElement("span");
      bar.className = "boundary";
      bar.title = `prompt boundary: generation starts at token ${boundary}`;
      box.append(bar);
    }
    box.append(extra(t));
  });
  if (boundary === tokens.length) {
    const bar = document.createElement("span");
    bar.className = "boundary";
    box.append(bar);
  }
  return box;
}

function safeTokens(view) {
  return chatTokens(view.tokens, view.prompt_boundary, (t) => {
    const el = tokenElement(t, `origin-${t.origin}`);
    el.dataset.origin = t.origin;
    if (t.assistant) el.classList.add("assistant");
    return el;
  });
}

function column(title, summary, summaryClass, body) {
  const col = document.createElement("div");
  const h = document.createElement("h3");
  h.textContent = title;
  const p = document.createElement("p");
  p.className = summaryClass;
  p.textContent = summary;
  col.append(h, p, body);
  return col;
}

async function chatNow(inject) {
  let messages;
  try { messages = JSON.parse($("#chat-json").value); } catch (err) {
    showError(`the conversation is not valid JSON: ${err.message}`);
    return;
  }
  const body = {
    tokenizer: $("#chat-select").value, messages, inject,
    add_generation_prompt: $("#chat-gen").checked,
  };
  try {
    const data = await api("/api/chat", body);
    const out = $("#chat-output");
    out.dataset.mode = inject ? "inject" : "render";
    if (!inject) {
      $("#chat-summary").innerHTML = countsLine(data.counts) + ` · prompt boundary at token ${data.prompt_boundary}`;
      out.replaceChildren(column("tokenpact render", "", "", safeTokens(data)));
      return;
    }
    const safe = data.safe, naive = data.naive;
    $("#chat-summary").textContent =
      `Injected ${data.spellings.length} special spellings into every message's content.`;
    const safeCol = column(
      "tokenpact render (content is text)",
      `${safe.control_ids_from_content} control IDs came from content`,
      safe.control_ids_from_content === 0 ? "verdict-ok" : "verdict-bad",
      safeTokens(safe));
    safeCol.id = "inject-safe";
    safeCol.dataset.controlFromContent = safe.control_ids_from_content;
    const naiveBox = chatTokens(naive.tokens, -1, (t) => {
      const el = tokenElement(t, `c${t.index % 6}`);
      if (t.forged) el.classList.add("forged");
      return el;
    });
    const naiveCol = column(
      "render to string + encode(allowed_special=\"all\")",
      `${naive.forged_count} control IDs forged from content`,
      naive.forged_count === 0 ? "verdict-ok" : "verdict-bad",
      naiveBox);
    naiveCol.id = "inject-naive";
    naiveCol.dataset.forged = naive.forged_count;
    out.replaceChildren(safeCol, naiveCol);
  } catch (err) { showError(err.message); }
}

function wireChat() {
  const withTemplate = tokenizers.filter((t) => t.chat_template);
  fillSelect($("#chat-select"), withTemplate);
  if (!withTemplate.length) {
    $("#chat-summary").textContent = "None of the served tokenizers has a chat template.";
    for (const b of ["#chat-render", "#chat-inject"]) $(b).disabled = true;
  }
  $("#chat-render").addEventListener("click", () => chatNow(false));
  $("#chat-inject").addEventListener("click", () => chatNow(true));
}

// ---- Streaming tab ----
let streamData = null;

// Stop strings from the one-line field: comma-separated; "\n" is a newline, "\," a comma.
function parseStops(value) {
  const stops = [];
  let current = "";
  for (let i = 0; i < value.length; i++) {
    const ch = value[i];
    if (ch === "\\" && i + 1 < value.length) {
      const next = value[++i];
      current += next === "n" ? "\n" : next === "t" ? "\t" : next;
    } else if (ch === ",") {
      stops.push(current);
      current = "";
    } else current += ch;
  }
  stops.push(current);
  return stops.filter((s) => s.length > 0);
}

function streamRequest() {
  const budget = $("#stream-budget").value.trim();
  return {
    tokenizer: $("#stream-select").value,
    text: $("#stream-text").value,
    chunk_size: Number($("#stream-chunk").value),
    stop_strings: parseStops($("#stream-stops").value),
    max_new_tokens: budget === "" ? null : Number(budget),
  };
}

function idElement(id, cls) {
  const piece = streamData.pieces[String(id)];
  const el = document.createElement("span");
  el.className = `tok ${cls}`;
  if (piece.partial) el.classList.add("partial");
  el.dataset.id = id;
  el.append(visible(piece.text));
  const sub = document.createElement("sub");
  sub.textContent = id;
  el.append(sub);
  return el;
}

function renderStreamStep() {
  if (!streamData) return;
  const k = Number($("#stream-step").value);
  const step = streamData.inbound[k];
  const total = step.committed_total;
  const fresh = total - step.committed.length;
  const box = $("#stream-ids");
  box.replaceChildren(
    ...streamData.ids.slice(0, total).map((id, i) => idElement(id, i >= fresh ? "committed new" : "committed")),
    ...step.provisional.map((id) => idElement(id, "provisional")));
  box.dataset.step = k;
  box.dataset.committedTotal = total;
  box.dataset.provisional = step.provisional.length;
  const last = k === streamData.inbound.length - 1;
  const chunk = last ? "end of stream: finish()" : `chunk ${JSON.stringify(step.chunk_text)}`;
  $("#stream-step-info").innerHTML =
    `step <b>${k + 1}</b>/${streamData.inbound.length} · ${chunk.replace(/&/g, "&amp;").replace(/</g, "&lt;")} · ` +
    `<b data-count="committed">${total}</b> committed (+${step.committed.length}) · ` +
    `<b data-count="provisional">${step.provisional.length}</b> provisional · rule <code>${streamData.rule}</code>`;
}

function renderStreamOutput() {
  if (!streamData) return;
  const out = streamData.outbound;
  const j = Number($("#stream-out-step").value);
  const step = out.steps[j];
  const shown = out.steps.slice(0, j + 1).map((s) => s.visible).join("");
  const held = document.createElement("span");
  held.className = "held";
  held.textContent = step ? step.held : "";
  held.title = "held back: may still be part of a stop string";
  $("#stream-visible").replaceChildren(document.createTextNode(shown), held);
  $("#stream-out-info").textContent = !step ? "no IDs"
    : step.id === null ? `after the last ID: finish() flushes the held text`
    : `ID ${j + 1}/${out.processed}: ${step.id} ${JSON.stringify(step.text)} made ${JSON.stringify(step.visible)} visible`;
  const decision = $("#stream-decision");
  decision.dataset.reason = out.finish_reason;
  const at = out.stop_position === null ? "the IDs ran out (finish())" : `at generated ID #${out.stop_position + 1}`;
  const what = out.finish_reason === "stop" ? `stop: matched ${JSON.stringify(out.matched_stop)}`
    : out.finish_reason === "length" ? "length: the max_new_tokens budget is spent"
    : "end: no stop matched";
  decision.replaceChildren();
  const b = document.createElement("b");
  b.className = out.finish_reason === "end" ? "" : "decision-stop";
  b.textContent = `finish_reason = ${what}`;
  decision.append(b, ` ${at} · ${out.processed} of ${streamData.ids.length} IDs processed · ` +
    `${Array.from(out.visible_text).length} characters visible`);
}

async function streamNow() {
  const body = streamRequest();
  if (!body.tokenizer) return;
  try {
    const data = await api("/api/stream", body);
    if (JSON.stringify(streamRequest()) !== JSON.stringify(body)) return; // a newer one is coming
    streamData = data;
    const slider = $("#stream-step");
    slider.max = data.inbound.length - 1;
    slider.value = slider.max;
    const outSlider = $("#stream-out-step");
    outSlider.max = Math.max(data.outbound.steps.length - 1, 0);
    outSlider.value = outSlider.max;
    renderStreamStep();
    renderStreamOutput();
    $("#stream-ids").dataset.text = body.text;
  } catch (err) { showError(err.message); }
}

function wireStream() {
  fillSelect($("#stream-select"), tokenizers);
  const soon = debounce(streamNow, 150);
  for (const sel of ["#stream-text", "#stream-stops", "#stream-budget"]) $(sel).addEventListener("input", soon);
  $("#stream-select").addEventListener("change", streamNow);
  $("#stream-chunk").addEventListener("input", () => {
    $("#stream-chunk-value").textContent = $("#stream-chunk").value;
    soon();
  });
  $("#stream-step").addEventListener("input", renderStreamStep);
  $("#stream-out-step").addEventListener("input", renderStreamOutput);
}

// ---- Vocabulary audit tab ----
const CLASS_COLORS = {
  special: "#344054", added: "#7a5af8", byte_fallback: "#f79009", duplicate: "#ee46bc",
  alone: "#12b76a", context: "#2e90fa", unreachable: "#d92d20", undetermined: "#98a2b3",
};
const SVG = "http://www.w3.org/2000/svg"; // an XML namespace name, not a network address

function svgEl(name, attrs) {
  const el = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  return el;
}

// One stacked bar per tokenizer, a segment per audit class. Widths follow log10(1 + count)
// (one class often holds ~98% of the IDs, which a linear bar shows as one color);
// the exact counts are in each segment's title and in the table below.
function auditChart(results) {
  const width = 900, left = 140, barH = 26, gap = 12, top = 30;
  const height = top + results.length * (barH + gap) + 28;
  const svg = svgEl("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img" });
  let x = left;
  for (const name of Object.keys(CLASS_COLORS)) {
    svg.append(svgEl("rect", { x, y: 4, width: 12, height: 12, fill: CLASS_COLORS[name] }));
    const label = svgEl("text", { x: x + 16, y: 15 });
    label.textContent = name;
    svg.append(label);
    x += 24 + name.length * 7;
  }
  results.forEach((r, row) => {
    const y = top + row * (barH + gap);
    const label = svgEl("text", { x: 0, y: y + barH * 0.7 });
    label.textContent = r.tokenizer;
    svg.append(label);
    let offset = left;
    const weight = (count) => Math.log10(1 + count);
    const total = r.classes.reduce((sum, c) => sum + weight(c.count), 0) || 1;
    for (const c of r.classes) {
      if (!c.count) continue;
      const w = ((width - left - 10) * weight(c.count)) / total;
      const rect = svgEl("rect", {
        x: offset, y, width: Math.max(w, 1), height: barH, fill: CLASS_COLORS[c.name],
        class: "mark", "data-class": c.name, "data-value": c.count, "data-tokenizer": r.tokenizer,
      });
      const title = svgEl("title", {});
      title.textContent = `${r.tokenizer}: ${c.count} ${c.name} IDs`;
      rect.append(title);
      svg.append(rect);
      offset += w;
    }
  });
  const note = svgEl("text", { x: left, y: height - 8 });
  note.textContent = "segment widths: log10(1 + IDs), hover a segment or see the table for counts";
  svg.append(note);
  return svg;
}

function auditTable(results) {
  const table = $("#audit-table");
  const head = ["tokenizer", "vocab", ...Object.keys(CLASS_COLORS), "partial UTF-8",
    "vocab params (M)", "training GiB"];
  const row = (cells, tag) => {
    const tr = document.createElement("tr");
    for (const c of cells) {
      const cell = document.createElement(tag);
      cell.textContent = typeof c === "number" ? c.toLocaleString("en") : c;
      tr.append(cell);
    }
    return tr;
  };
  table.replaceChildren(row(head, "th"), ...results.map((r) => row([
    r.tokenizer, r.vocab_size, ...r.classes.map((c) => c.count), r.partial_utf8,
    (r.cost.vocab_params / 1e6).toFixed(1), (r.cost.training_bytes / 2 ** 30).toFixed(2),
  ], "td")));
}

async function auditNow() {
  const d = $("#audit-dmodel").value;
  try {
    const results = [];
    for (const t of tokenizers) {
      results.push(await api(`/api/audit?tokenizer=${encodeURIComponent(t.name)}&d_model=${encodeURIComponent(d)}`));
    }
    $("#audit-chart").replaceChildren(auditChart(results));
    auditTable(results);
    $("#audit-chart").dataset.done = "1";
  } catch (err) { showError(err.message); }
}

// ---- tabs and start-up ----
function wireTabs() {
  document.querySelectorAll(".tab").forEach((button) => button.addEventListener("click", () => {
    document.querySelectorAll(".tab, .panel").forEach((el) => el.classList.remove("active"));
    button.classList.add("active");
    $(`#tab-${button.dataset.tab}`).classList.add("active");
    if (button.dataset.tab === "compare") compareNow();
    if (button.dataset.tab === "stream") streamNow();
  }));
}

async function start() {
  try {
    tokenizers = (await api("/api/tokenizers")).tokenizers;
  } catch (err) { showError(err.message); return; }
  fillSelect($("#tok-select"), tokenizers);
  wireTabs();
  wireTokens();
  wireCompare();
  wireChat();
  wireStream();
  $("#audit-run").addEventListener("click", auditNow);
  await encodeNow();
  document.body.dataset.ready = "1";
}

start();
