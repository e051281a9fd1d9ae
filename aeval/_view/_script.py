"""The one script of the viewer's pages: review by keyboard and by mouse.

It is inline, admitted by its hash in the page's Content-Security-Policy. It keeps the
reviewer's name in ``localStorage``, moves between rows (``j``/``k``), labels the current row
pass or fail (``p``/``f``, moving on to the next row once saved, or its buttons) with the
note typed in its note field (``n`` goes there, Enter comes back), and posts each label with
the process's token from the page; it updates the count of labelled rows, the agreement with
the verdicts and the row's mark when its label contradicts its verdict. On the page of a run
still running it fetches the page again every two seconds and swaps in its parts (the
banner, the score, the rows…), keeping the selected row, until the run records its end. It
builds what it shows from text or from the server's own page, never from markup of its own.
"""

from __future__ import annotations

__all__ = ["SCRIPT"]

SCRIPT = """
(() => {
  "use strict";
  const review = document.getElementById("review");
  const table = document.getElementById("rows");
  if (!review) return;
  const status = document.getElementById("status");
  const reviewer = document.getElementById("reviewer");
  const key = "aeval-reviewer";
  try {
    reviewer.value = localStorage.getItem(key) || "";
  } catch (refused) {
    reviewer.value = "";
  }
  reviewer.addEventListener("change", () => {
    try {
      localStorage.setItem(key, reviewer.value.trim());
    } catch (refused) {
      // Without storage the name lasts as long as the page.
    }
  });
  let rows = table ? Array.from(table.querySelectorAll("tbody tr[data-row]")) : [];
  let current = -1;
  function select(index) {
    if (!rows.length) return;
    if (current >= 0) {
      rows[current].classList.remove("current");
      rows[current].removeAttribute("aria-current");
    }
    current = Math.min(Math.max(index, 0), rows.length - 1);
    rows[current].classList.add("current");
    rows[current].setAttribute("aria-current", "true");
    rows[current].scrollIntoView({ block: "nearest" });
  }
  function say(text) {
    status.textContent = text;
  }
  function shown(row, label) {
    const list = row.querySelector("ul.labels");
    for (const item of Array.from(list.children)) {
      if (item.dataset.reviewer === label.reviewer) item.remove();
    }
    const item = document.createElement("li");
    item.dataset.reviewer = label.reviewer;
    item.dataset.verdict = label.verdict;
    item.dataset.stale = "false";
    const verdict = document.createElement("strong");
    verdict.textContent = label.verdict;
    item.append(`${label.reviewer}: `, verdict, label.note ? `: ${label.note}` : "");
    list.append(item);
  }
  async function label(row, verdict) {
    const name = reviewer.value.trim();
    if (!name) {
      say("Type your name in Reviewer first.");
      reviewer.focus();
      return false;
    }
    try {
      localStorage.setItem(key, name);
    } catch (refused) {
      // Without storage the name lasts as long as the page.
    }
    const note = row.querySelector("input.note").value.trim();
    const body = { run: review.dataset.run, sample: row.dataset.sample,
      strategy: row.dataset.strategy ?? null, repeat: Number(row.dataset.repeat), verdict,
      note, reviewer: name };
    let answer;
    try {
      const response = await fetch("/api/labels", {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-Aeval-Token": review.dataset.token },
        body: JSON.stringify(body),
        credentials: "same-origin",
      });
      answer = await response.json();
      if (!response.ok) {
        say(`Not saved: ${answer.error}`);
        return false;
      }
    } catch (failed) {
      say(`Not saved: ${failed}`);
      return false;
    }
    shown(row, answer.label);
    marked(row);
    for (const [id, text] of [["labelled", answer.labelled], ["agreement", answer.agreement]]) {
      const element = document.getElementById(id);
      if (element && typeof text === "string") element.textContent = text;
    }
    say(`Saved: ${answer.label.sample} ${verdict}`);
    return true;
  }
  function marked(row) {
    const outcome = row.dataset.outcome;
    const verdicts = Array.from(row.querySelectorAll("ul.labels li[data-stale='false']"),
      (item) => item.dataset.verdict);
    const against = (outcome === "passed" && verdicts.includes("fail"))
      || (outcome === "failed" && verdicts.includes("pass"));
    const cell = row.querySelector("td.review");
    const mark = cell.querySelector(".contradicts");
    if (against && !mark) {
      const span = document.createElement("span");
      span.className = "contradicts";
      span.title = "a label contradicts the verdict";
      span.textContent = "label \\u2260 verdict";
      cell.prepend(span);
    } else if (!against && mark) {
      mark.remove();
    }
  }
  async function labelAndMove(verdict) {
    const at = current;
    if (await label(rows[at], verdict) && current === at) select(at + 1);
  }
  document.addEventListener("click", (event) => {
    const row = event.target.closest("#rows tbody tr[data-row]");
    if (!row) return;
    const index = rows.indexOf(row);
    if (!(event.target instanceof HTMLInputElement)) select(index);
    const button = event.target.closest("button[data-verdict]");
    if (button) label(row, button.dataset.verdict);
  });
  document.addEventListener("keydown", (event) => {
    if (!event.target.matches("input.note")) return;
    if (event.key === "Enter" || event.key === "Escape") {
      event.preventDefault();
      event.target.blur();
    }
  });
  function rowKey(row) {
    return row ? JSON.stringify([row.dataset.sample, row.dataset.strategy, row.dataset.repeat])
      : null;
  }
  const live = review.dataset.running === "true";
  async function follow() {
    const active = document.activeElement;
    if (active instanceof HTMLInputElement && active.closest("#rows-part")) {
      setTimeout(follow, 2000);
      return;
    }
    let fresh;
    try {
      const response = await fetch(window.location.href, { credentials: "same-origin" });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      fresh = new DOMParser().parseFromString(await response.text(), "text/html");
    } catch (failed) {
      say(`Not refreshed: ${failed}`);
      setTimeout(follow, 5000);
      return;
    }
    const keep = rowKey(rows[current]);
    for (const part of ["run-head", "labelled", "agreement", "rows-part"]) {
      const now = document.getElementById(part);
      const next = fresh.getElementById(part);
      if (now && next) now.replaceWith(document.adoptNode(next));
    }
    const table = document.getElementById("rows");
    rows = table ? Array.from(table.querySelectorAll("tbody tr[data-row]")) : [];
    current = -1;
    const again = rows.findIndex((row) => rowKey(row) === keep);
    if (again >= 0) select(again);
    const still = fresh.getElementById("review");
    review.dataset.running = still ? still.dataset.running : "false";
    if (review.dataset.running === "true") setTimeout(follow, 2000);
  }
  if (live) setTimeout(follow, 2000);
  document.addEventListener("keydown", (event) => {
    const target = event.target;
    if (target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement) return;
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.key === "j") select(current + 1);
    else if (event.key === "k") select(current - 1);
    else if (current < 0) return;
    else if (event.key === "p") labelAndMove("pass");
    else if (event.key === "f") labelAndMove("fail");
    else if (event.key === "n") rows[current].querySelector("input.note").focus();
    else return;
    event.preventDefault();
  });
})();
"""
