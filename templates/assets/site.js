// Draws every chart of the page from its embedded figure data with the shipped plotly.js.
(function () {
  "use strict";
  if (typeof Plotly === "undefined") { return; }
  document.querySelectorAll("div.chart[data-figure]").forEach(function (div) {
    var source = document.getElementById(div.getAttribute("data-figure"));
    if (!source) { return; }
    var figure = JSON.parse(source.textContent);
    // The toolbar shows only while the pointer is on a chart, in a band each figure keeps free at its
    // top, with the buttons a static report needs (no selection tools).
    Plotly.newPlot(div, figure.data, figure.layout || {}, {
      responsive: true, displaylogo: false, displayModeBar: "hover",
      modeBarButtonsToRemove: ["select2d", "lasso2d", "zoomIn2d", "zoomOut2d", "autoScale2d"]
    });
  });
  // A chart drawn inside a closed <details> has no width to measure: size it when it opens.
  document.querySelectorAll("details").forEach(function (details) {
    details.addEventListener("toggle", function () {
      details.querySelectorAll("div.chart").forEach(function (div) { Plotly.Plots.resize(div); });
    });
  });
})();
