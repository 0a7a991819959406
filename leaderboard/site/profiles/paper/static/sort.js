// Sortable tables without a framework: click a header of a table.sortable to sort by that column.
// Cells may carry data-sort (a number or text); empty values always sort last. On a phone, where the
// stylesheet turns each row into a block and hides the header row, a "Sort by" menu does the same.
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
  function sortBy(table, header, index, ascending) {
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
  function menu(table, headers) {
    const label = document.createElement("label");
    label.className = "sort-menu";
    label.appendChild(document.createTextNode("Sort by "));
    const select = document.createElement("select");
    select.appendChild(new Option("the order on the page", ""));
    headers.forEach(function (th, index) {
      const copy = th.cloneNode(true);
      copy.querySelectorAll(".unit").forEach(function (unit) { unit.remove(); });
      const name = copy.textContent.replace(/\s+/g, " ").trim();
      select.appendChild(new Option(name + ", low to high", index + " up"));
      select.appendChild(new Option(name + ", high to low", index + " down"));
    });
    select.addEventListener("change", function () {
      if (!select.value) return;
      const parts = select.value.split(" ");
      const index = Number(parts[0]);
      sortBy(table, headers[index], index, parts[1] === "up");
    });
    label.appendChild(select);
    const anchor = table.closest(".scroll") || table;
    anchor.parentNode.insertBefore(label, anchor);
  }
  function setUp(table) {
    const head = table.tHead;
    if (!head || !table.tBodies.length) return;
    const headers = Array.from(head.rows[head.rows.length - 1].cells);
    headers.forEach(function (th, index) {
      const button = document.createElement("button");
      button.type = "button";
      while (th.firstChild) button.appendChild(th.firstChild);
      th.appendChild(button);
      button.addEventListener("click", function () {
        sortBy(table, th, index, th.getAttribute("aria-sort") !== "ascending");
      });
    });
    if (table.tBodies[0].rows.length > 1) menu(table, headers);
  }
  document.querySelectorAll("table.sortable").forEach(setUp);
})();
