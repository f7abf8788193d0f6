// Hopper dashboard: live updates and list selection. The pages work
// without this file; it only makes them update themselves and eases bulk
// selection. No inline script: the Content-Security-Policy allows this
// file only.
(function () {
  "use strict";
  var body = document.body;
  var base = body.dataset.base || "";

  // --- Live updates -----------------------------------------------------
  // The server streams a version number (server-sent events); when it
  // differs from the one this page shows, the page is fetched again and
  // its parts marked data-live are swapped in. The stream also beats every
  // data-heartbeat milliseconds. A watchdog counts on those beats: after
  // three without a word the server is dead or hung, or the connection was
  // lost (which may raise no error at all), so the indicator says
  // "disconnected since" the last word, and a new stream is opened every
  // three beats until one answers; the page then catches up. Without
  // EventSource the page polls instead.
  var POLL_MS = 5000;
  var dot = document.getElementById("live");
  var beatMs = parseInt(body.dataset.heartbeat, 10) || 1000;
  var silentMs = 3 * beatMs;
  var busy = false, again = false, pollTimer = null, dotMode;

  function setDot(mode, since) {
    if (!dot || (mode === dotMode && mode !== "down")) return;
    dotMode = mode;
    dot.classList.remove("on", "poll", "down");
    if (mode) dot.classList.add(mode);
    if (mode === "down") {
      dot.textContent = "disconnected since " + since.toLocaleTimeString();
      dot.title = "No word from the server since " + since.toLocaleString() + "; reconnecting";
      return;
    }
    dot.textContent = "live";
    dot.title = mode === "on" ? "Updates live" : mode === "poll" ? "Updates every few seconds" : "Not updating";
  }

  function checkedIDs() {
    var set = {};
    document.querySelectorAll('input[name="ids"]:checked').forEach(function (el) { set[el.value] = true; });
    return set;
  }

  function swap(doc) {
    var keep = checkedIDs();
    var openDetails = {};
    document.querySelectorAll("details[id]").forEach(function (d) { openDetails[d.id] = d.open; });
    var active = document.activeElement;
    var deferred = false;
    doc.querySelectorAll("[data-live][id]").forEach(function (fresh) {
      var old = document.getElementById(fresh.id);
      if (!old || old.outerHTML === fresh.outerHTML) return;
      if (active && active !== body && old.contains(active) && /^(INPUT|SELECT|TEXTAREA)$/.test(active.tagName)) {
        deferred = true; // do not pull a field from under the user's fingers
        return;
      }
      old.replaceWith(document.importNode(fresh, true));
    });
    document.querySelectorAll('input[name="ids"]').forEach(function (el) { if (keep[el.value]) el.checked = true; });
    Object.keys(openDetails).forEach(function (id) {
      var d = document.getElementById(id);
      if (d) d.open = openDetails[id];
    });
    if (!deferred) {
      var v = doc.body && doc.body.dataset.version;
      if (v) body.dataset.version = v;
    }
    selection();
    return deferred;
  }

  function refresh() {
    if (busy) { again = true; return; }
    if (document.hidden) { again = true; return; }
    busy = true;
    fetch(location.href, { headers: { "X-Hopper-Live": "1" }, credentials: "same-origin", cache: "no-store" })
      .then(function (res) {
        if (res.status === 401 || (res.redirected && res.url.indexOf(base + "/login") >= 0)) {
          location.reload();
          return null;
        }
        if (!res.ok) return null;
        return res.text();
      })
      .then(function (html) {
        if (!html) return;
        var doc = new DOMParser().parseFromString(html, "text/html");
        if (swap(doc)) again = true;
      })
      .catch(function () { /* the next version or poll tries again */ })
      .then(function () {
        busy = false;
        if (again) { again = false; setTimeout(refresh, 300); }
      });
  }

  function poll() {
    if (pollTimer) return;
    setDot("poll");
    pollTimer = setInterval(refresh, POLL_MS);
  }

  var es = null, opened = 0, lastWord = Date.now(), down = null;

  // open opens a new stream, closing the old one.
  function open() {
    if (es) es.close();
    opened = Date.now();
    var s = es = new EventSource(base + "/events");
    s.addEventListener("version", function (ev) {
      var missed = heard();
      if (missed || ev.data !== body.dataset.version) refresh();
    });
    s.addEventListener("beat", heard);
    s.onerror = function () {
      // A stream refused by an answer (not a network error) is not
      // retried by the browser: the page itself may be gone (signed out).
      if (s.readyState === EventSource.CLOSED) refresh();
    };
  }

  // heard notes a word from the server; it returns true if the page was
  // disconnected (it may have missed versions).
  function heard() {
    lastWord = Date.now();
    var was = down;
    down = null;
    setDot("on");
    return !!was;
  }

  function watch() {
    var now = Date.now();
    if (now - lastWord <= silentMs) return;
    if (!down) {
      down = new Date(lastWord);
      setDot("down", down);
    }
    if (now - opened >= silentMs) open();
  }

  function stream() {
    if (!window.EventSource) { poll(); return; }
    open();
    setInterval(watch, 250);
  }

  if (body.hasAttribute("data-live-page")) {
    stream();
    document.addEventListener("visibilitychange", function () {
      if (!document.hidden && again) { again = false; refresh(); }
    });
  }

  // --- Selection in lists ----------------------------------------------
  var page = document.getElementById("select-page");
  var all = document.getElementById("select-all");
  var shown = document.getElementById("selected");

  function boxes() { return document.querySelectorAll('input[name="ids"]'); }

  function selection() {
    if (!shown) return;
    var n = document.querySelectorAll('input[name="ids"]:checked').length;
    var text = "";
    if (all && all.checked) text = "every matching job";
    else if (n) text = n + " selected";
    shown.textContent = text;
    document.querySelectorAll(".bulkbar button[name=action]").forEach(function (b) {
      b.disabled = !(n || (all && all.checked));
    });
  }

  if (page) {
    document.getElementById("select-page-label").hidden = false;
    page.addEventListener("change", function () {
      boxes().forEach(function (b) { b.checked = page.checked; });
      selection();
    });
  }
  if (all) all.addEventListener("change", selection);
  document.addEventListener("change", function (ev) {
    if (ev.target && ev.target.name === "ids") {
      if (!ev.target.checked && all) all.checked = false;
      selection();
    }
  });
  selection();

  // A form posts once: its buttons are disabled right after it is sent
  // (not before: the clicked button's name and value go with it).
  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    if (!form || form.method.toLowerCase() !== "post") return;
    setTimeout(function () {
      form.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
    }, 0);
  });
})();
