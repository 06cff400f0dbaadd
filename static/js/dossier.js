// Dossier's small behaviours: sortable tables, selects that submit their form, print buttons. Everything else is
// server-rendered HTML (htmx). No inline handlers in the templates: the Content-Security-Policy allows scripts from
// 'self' only (docs/configuration.md), so behaviour is bound here by data attributes.
(function () {
  "use strict";
  function cellValue(row, index) {
    var cell = row.cells[index];
    if (!cell) return "";
    var raw = cell.getAttribute("data-sort-value");
    return raw !== null ? raw : cell.textContent.trim();
  }
  function compare(a, b) {
    var x = parseFloat(a), y = parseFloat(b);
    var numeric = a !== "" && b !== "" && !isNaN(x) && !isNaN(y) && isFinite(a) && isFinite(b);
    if (numeric) return x - y;
    return a.localeCompare(b, undefined, { numeric: true, sensitivity: "base" });
  }
  function sortBy(table, header) {
    var index = Array.prototype.indexOf.call(header.parentNode.children, header);
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("th[aria-sort]").forEach(function (th) { th.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (r1, r2) {
      var order = compare(cellValue(r1, index), cellValue(r2, index));
      return ascending ? order : -order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }
  function enhance(root) {
    root.querySelectorAll("table.sortable th[data-sort]").forEach(function (header) {
      if (header.dataset.enhanced) return;
      header.dataset.enhanced = "1";
      header.tabIndex = 0;
      header.addEventListener("click", function () { sortBy(header.closest("table"), header); });
      header.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sortBy(header.closest("table"), header); }
      });
    });
  }
  // <select data-autosubmit> submits its form on change; <button data-print-page> prints the page.
  document.addEventListener("change", function (event) {
    var target = event.target;
    if (target.matches && target.matches("select[data-autosubmit]") && target.form) target.form.requestSubmit();
  });
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-print-page]");
    if (button) window.print();
  });
  // A form marked data-send-changed-field tells its htmx check which field changed ("changed"): no eval, so the
  // Content-Security-Policy needs no 'unsafe-eval'.
  document.addEventListener("htmx:configRequest", function (event) {
    var form = event.detail.elt;
    if (!form.matches || !form.matches("form[data-send-changed-field]")) return;
    var trigger = event.detail.triggeringEvent;
    event.detail.parameters.changed = (trigger && trigger.target && trigger.target.name) || "";
  });
  document.addEventListener("DOMContentLoaded", function () { enhance(document); });
  document.addEventListener("htmx:afterSwap", function (event) { enhance(event.target); });
})();
