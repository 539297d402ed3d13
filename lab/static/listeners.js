/* The lab page's "Connect your own Kafka client" panel: copy buttons. A button names what it
   copies (data-copy="#id": an input's value or an element's text). */
(function () {
  "use strict";
  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    // Plain HTTP off loopback (a classroom) has no clipboard API: the old way still works there.
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    document.body.removeChild(area);
    return ok ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }
  document.addEventListener("click", function (e) {
    var button = e.target.closest("[data-copy]");
    if (!button) return;
    var source = document.querySelector(button.dataset.copy);
    if (!source) return;
    var text = "value" in source && source.tagName === "INPUT" ? source.value : source.textContent;
    var label = button.dataset.label || button.textContent;
    button.dataset.label = label;
    copyText(text).then(
      function () { button.textContent = "Copied"; button.dataset.copied = "true"; },
      function () { button.textContent = "Select and copy"; if (source.select) source.select(); }
    ).then(function () {
      setTimeout(function () { button.textContent = label; delete button.dataset.copied; }, 1500);
    });
  });
})();
