// Draws the comparison's charts from their JSON (json_script) with the locally served plotly.min.js.
// On the print view the charts get a fixed width that fits an A4/Letter page, and no mode bar.
(function () {
  "use strict";
  var printing = !!document.querySelector("script[data-print]");
  function draw() {
    if (typeof Plotly === "undefined") return;
    document.querySelectorAll("[data-chart]").forEach(function (element) {
      var source = document.getElementById(element.getAttribute("data-chart"));
      if (!source) return;
      var figure = JSON.parse(source.textContent);
      var layout = figure.layout || {};
      if (printing) { layout.width = 680; }
      Plotly.newPlot(element, figure.data, layout, {
        displaylogo: false,
        displayModeBar: !printing,
        responsive: !printing,
        staticPlot: printing
      });
    });
  }
  document.addEventListener("DOMContentLoaded", draw);
  // Before printing from the normal page, fit each chart to the paper width.
  window.addEventListener("beforeprint", function () {
    if (typeof Plotly === "undefined") return;
    document.querySelectorAll("[data-chart]").forEach(function (element) {
      Plotly.relayout(element, { width: 680 });
    });
  });
  window.addEventListener("afterprint", function () {
    if (typeof Plotly === "undefined" || printing) return;
    document.querySelectorAll("[data-chart]").forEach(function (element) {
      Plotly.relayout(element, { width: null, autosize: true });
    });
  });
})();
