// The console's one script (no inline scripts: the Content-Security-Policy forbids them).
// On the evidence page, a click on a passage pair outlines it, so a reader can keep their place
// while comparing the page's text with the master's.
"use strict";
document.addEventListener("click", function (event) {
  var pair = event.target.closest ? event.target.closest(".pair") : null;
  if (!pair) return;
  document.querySelectorAll(".pair.selected").forEach(function (other) {
    if (other !== pair) other.classList.remove("selected");
  });
  pair.classList.toggle("selected");
});
