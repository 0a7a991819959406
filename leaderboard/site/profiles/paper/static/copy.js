// Copy buttons beside shortened hashes: <button class="copy" data-copy="TEXT" hidden> copies TEXT.
// The buttons stay hidden without JavaScript; the full hash is in the page either way (clipped by CSS).
"use strict";
(function () {
  function fallback(text) {
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    const done = document.execCommand("copy");
    document.body.removeChild(area);
    return done ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }
  function copy(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text).catch(function () { return fallback(text); });
    }
    return fallback(text);
  }
  document.querySelectorAll("button.copy[data-copy]").forEach(function (button) {
    button.hidden = false;
    button.addEventListener("click", function () {
      // the label resets 2 s after the clipboard answers (a slow permission prompt must not reset it first)
      function show(label) {
        button.textContent = label;
        setTimeout(function () { button.textContent = "copy"; }, 2000);
      }
      copy(button.getAttribute("data-copy")).then(
        function () { show("copied"); },
        function () { show("select and copy"); }
      );
    });
  });
})();
