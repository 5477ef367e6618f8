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

// Marks the stops and alerts that are new since the reader last marked them seen, in this browser (its
// local storage, per campaign): during the lot, a page that reloads itself after each build keeps the mark
// until "Mark as seen" is pressed. The first visit marks nothing: everything on it counts as seen. The page
// that lists every alert of its build (data-alert-list) forgets those seen that are gone: an alert that
// comes back (the projection past the lot's end again) is new again, as the watcher says it again.
(function () {
  "use strict";
  var campaign = document.body.getAttribute("data-campaign");
  var items = document.querySelectorAll("[data-seen]");
  var listsAlerts = document.querySelector("[data-alert-list]") !== null;
  if (!campaign || (!items.length && !listsAlerts)) { return; }
  var storeKey = "reportgen:" + campaign + ":seen";
  var stored;
  try { stored = JSON.parse(window.localStorage.getItem(storeKey) || "null"); } catch (e) { return; }
  var seen = {};
  (Array.isArray(stored) ? stored : []).forEach(function (key) { seen[key] = true; });
  var fresh = [];
  items.forEach(function (item) {
    var key = item.getAttribute("data-seen");
    if (!Array.isArray(stored)) { seen[key] = true; } else if (!seen[key]) { fresh.push(item); }
  });
  function save() {
    try { window.localStorage.setItem(storeKey, JSON.stringify(Object.keys(seen))); } catch (e) { /* private mode */ }
  }
  if (!Array.isArray(stored)) { save(); return; }
  if (listsAlerts) {
    var shown = {};
    items.forEach(function (item) { shown[item.getAttribute("data-seen")] = true; });
    var gone = Object.keys(seen).filter(function (key) { return key.indexOf("alert|") === 0 && !shown[key]; });
    gone.forEach(function (key) { delete seen[key]; });
    if (gone.length) { save(); }
  }
  if (!fresh.length) { return; }
  fresh.forEach(function (item) {
    item.classList.add("new");
    var tag = document.createElement("span");
    tag.className = "tag tag-new";
    tag.textContent = "new";
    (item.tagName === "TR" ? item.firstElementChild : item).prepend(tag);
  });
  var notice = document.createElement("p");
  notice.className = "seen-notice";
  notice.textContent = fresh.length + (fresh.length === 1 ? " stop or alert" : " stops and alerts") +
    " new since you last marked them seen. ";
  var button = document.createElement("button");
  button.type = "button";
  button.textContent = "Mark as seen";
  button.addEventListener("click", function () {
    fresh.forEach(function (item) {
      seen[item.getAttribute("data-seen")] = true;
      item.classList.remove("new");
      var tag = item.querySelector(".tag-new");
      if (tag) { tag.remove(); }
    });
    save();
    notice.remove();
  });
  notice.appendChild(button);
  var main = document.querySelector("main");
  if (main) { main.prepend(notice); }
})();
