// Draws the memory chart of a workload page from the figure embedded with json_script (plotly.js is served locally).
(function () {
  "use strict";
  function draw() {
    document.querySelectorAll("[data-memory-chart]").forEach(function (element) {
      var source = document.getElementById(element.getAttribute("data-memory-chart"));
      if (!source || !window.Plotly) return;
      var figure = JSON.parse(source.textContent);
      window.Plotly.newPlot(element, figure.data, figure.layout, { responsive: true, displaylogo: false });
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", draw);
  else draw();
})();
