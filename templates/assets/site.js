// Draws every chart of the page from its embedded figure data with the shipped plotly.js.
(function () {
  "use strict";
  if (typeof Plotly === "undefined") { return; }
  document.querySelectorAll("div.chart[data-figure]").forEach(function (div) {
    var source = document.getElementById(div.getAttribute("data-figure"));
    if (!source) { return; }
    var figure = JSON.parse(source.textContent);
    Plotly.newPlot(div, figure.data, figure.layout || {}, {responsive: true, displaylogo: false});
  });
})();
