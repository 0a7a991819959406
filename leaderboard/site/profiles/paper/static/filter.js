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

  // <select data-show-one="ID">: of the elements [data-choice] inside #ID, show only the one chosen.
  document.querySelectorAll("select[data-show-one]").forEach(function (select) {
    const box = document.getElementById(select.getAttribute("data-show-one"));
    if (!box) return;
    const show = function () {
      box.querySelectorAll("[data-choice]").forEach(function (part) {
        part.hidden = part.getAttribute("data-choice") !== select.value;
      });
    };
    select.addEventListener("change", show);
    const wrapper = select.closest("[hidden]");
    if (wrapper) wrapper.hidden = false;
    show();
  });

  const picker = document.getElementById("compare-picker");
  if (picker) {
    const pages = {};
    picker.getAttribute("data-pairs").split(";").forEach(function (entry) {
      const parts = entry.split(" ");
      pages[parts[0] + " " + parts[1]] = parts[2];  // one page per order: the first pick is shown first
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
