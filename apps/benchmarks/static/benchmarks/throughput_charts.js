// Draws the phase-2 charts (latency CDF against the SLO, throughput–latency curve, goodput against offered load) from
// the figures embedded with json_script; plotly.js is served locally.
(function () {
  "use strict";
  function draw() {
    document.querySelectorAll("[data-throughput-chart]").forEach(function (element) {
      var source = document.getElementById(element.getAttribute("data-throughput-chart"));
      if (!source || !window.Plotly || element.getAttribute("data-drawn")) return;
      var figure = JSON.parse(source.textContent);
      window.Plotly.newPlot(element, figure.data, figure.layout, { responsive: true, displaylogo: false });
      element.setAttribute("data-drawn", "1");
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", draw);
  else draw();
})();
