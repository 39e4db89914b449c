// Live refresh of the overview: fetch the server-rendered fragment and swap it in.
// A redirected or failed answer (the session or step-up ended) reloads the page instead.
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (!live) return;
  var every = (parseInt(live.getAttribute("data-every"), 10) || 5) * 1000;
  var url = live.getAttribute("data-refresh");
  function tick() {
    fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) {
        if (!r.ok || r.redirected) { window.location.reload(); return null; }
        return r.text();
      })
      .then(function (html) { if (html !== null) live.innerHTML = html; })
      .catch(function () {})
      .then(function () { window.setTimeout(tick, every); });
  }
  window.setTimeout(tick, every);
})();
