// Sortable tables without a framework: click a header of a table.sortable to sort by that column.
// Cells may carry data-sort (a number or text); empty values always sort last.
"use strict";
(function () {
  function value(row, index) {
    const cell = row.cells[index];
    if (!cell) return "";
    return cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent.trim();
  }
  function compare(a, b) {
    if (a === "" || b === "") return (a === "") - (b === "");
    const x = Number(a), y = Number(b);
    if (!Number.isNaN(x) && !Number.isNaN(y)) return x - y;
    return a.localeCompare(b);
  }
  function sortBy(table, header, index) {
    const ascending = header.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("th[aria-sort]").forEach(function (th) { th.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    const body = table.tBodies[0];
    const rows = Array.from(body.rows);
    rows.sort(function (r1, r2) {
      const a = value(r1, index), b = value(r2, index);
      if (a === "" || b === "") return compare(a, b);  // missing last in both directions
      return ascending ? compare(a, b) : compare(b, a);
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }
  function setUp(table) {
    const head = table.tHead;
    if (!head || !table.tBodies.length) return;
    Array.from(head.rows[head.rows.length - 1].cells).forEach(function (th, index) {
      const button = document.createElement("button");
      button.type = "button";
      while (th.firstChild) button.appendChild(th.firstChild);
      th.appendChild(button);
      button.addEventListener("click", function () { sortBy(table, th, index); });
    });
  }
  document.querySelectorAll("table.sortable").forEach(setUp);
})();
