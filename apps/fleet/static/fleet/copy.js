// Copy buttons: <button class="copy-button" data-copy-target="element-id" data-copied-label="Copied">.
(function () {
  "use strict";
  document.addEventListener("click", function (event) {
    var button = event.target.closest(".copy-button");
    if (!button) return;
    var source = document.getElementById(button.getAttribute("data-copy-target"));
    if (!source || !navigator.clipboard) return;
    var label = button.textContent;
    navigator.clipboard.writeText(source.textContent.trim()).then(function () {
      button.textContent = button.getAttribute("data-copied-label") || label;
      setTimeout(function () { button.textContent = label; }, 2000);
    });
  });
})();
