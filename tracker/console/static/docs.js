// Draws the OpenAPI page with the bundled Swagger UI (loaded before this file).
"use strict";
window.addEventListener("load", function () {
  var node = document.getElementById("swagger-ui");
  if (!node || !window.SwaggerUIBundle) return;
  window.SwaggerUIBundle({ url: node.getAttribute("data-spec"), dom_id: "#swagger-ui" });
});
