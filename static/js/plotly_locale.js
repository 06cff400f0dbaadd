// Plotly's own interface (the mode bar's tooltips) in the page's language, for every chart drawn after it: the
// dictionary comes translated from the server (apps/common/templatetags/plotly_assets.py). Loaded right after
// plotly.min.js, before any chart script.
(function () {
  "use strict";
  var script = document.currentScript;
  if (typeof Plotly === "undefined" || !script || !script.dataset.dictionary) return;
  Plotly.register({ moduleType: "locale", name: "dossier", dictionary: JSON.parse(script.dataset.dictionary) });
  Plotly.setPlotConfig({ locale: "dossier" });
})();
