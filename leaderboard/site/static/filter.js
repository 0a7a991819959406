// Small helpers without a framework: text filters over tables and lists, and the compare-page picker.
// <input data-filter="ID"> hides the rows of table#ID (or the items of list #ID) that do not contain
// every typed word; <span data-count-for="ID"> says how many are shown.
"use strict";
(function () {
  function rowsOf(target) {
    if (target.tBodies) return Array.from(target.tBodies[0] ? target.tBodies[0].rows : []);
    const items = target.querySelectorAll("li");
    return Array.from(items.length ? items : target.children);
  }
  function apply(input, target) {
    const words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    const rows = rowsOf(target);
    let shown = 0;
    rows.forEach(function (row) {
      const text = row.textContent.toLowerCase();
      const keep = words.every(function (w) { return text.indexOf(w) !== -1; });
      row.hidden = !keep;
      if (keep) shown += 1;
    });
    target.querySelectorAll("section").forEach(function (section) {
      section.hidden = !section.querySelector("li:not([hidden])");
    });
    const count = document.querySelector('[data-count-for="' + target.id + '"]');
    if (count) count.textContent = words.length ? shown + " of " + rows.length + " shown" : "";
  }
  document.querySelectorAll("input[data-filter]").forEach(function (input) {
    const target = document.getElementById(input.getAttribute("data-filter"));
    if (!target) return;
    input.addEventListener("input", function () { apply(input, target); });
  });

  const picker = document.getElementById("compare-picker");
  if (picker) {
    const pages = {};
    picker.getAttribute("data-pairs").split(";").forEach(function (entry) {
      const parts = entry.split(" ");
      pages[parts[0] + " " + parts[1]] = parts[2];
      pages[parts[1] + " " + parts[0]] = parts[2];
    });
    const go = document.getElementById("compare-go");
    const update = function () {
      const a = picker.elements.a.value, b = picker.elements.b.value;
      const page = pages[a + " " + b];
      go.toggleAttribute("aria-disabled", !page);
      go.textContent = page ? "Compare" : "Pick two different models";
      if (page) go.setAttribute("href", page); else go.removeAttribute("href");
    };
    picker.addEventListener("change", update);
    update();
  }
})();
