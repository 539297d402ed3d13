/* Kafka Lab: the little the page does itself. Everything live comes from the server as
   htmx out-of-band swaps over the websocket; this keeps a person's choices (theme, text
   size, the topic shown, timeline filters, open details) across those swaps, shows whether
   the page is live, and reconnects after the server restarts. */
(function () {
  "use strict";
  var root = document.documentElement;

  function store(key, value) {
    try {
      if (value === null) localStorage.removeItem(key);
      else localStorage.setItem(key, value);
    } catch (e) { /* private mode: the choice lasts this page only */ }
  }
  function load(key) {
    try { return localStorage.getItem(key); } catch (e) { return null; }
  }

  /* Theme and size ------------------------------------------------------------------ */
  var THEMES = ["", "light", "dark"]; // "" follows the system
  function paintPrefs() {
    document.querySelectorAll("[data-toggle-theme]").forEach(function (b) {
      var t = root.dataset.theme || "";
      b.textContent = t === "dark" ? "Dark" : t === "light" ? "Light" : "Auto theme";
    });
    document.querySelectorAll("[data-toggle-size]").forEach(function (b) {
      b.setAttribute("aria-pressed", root.dataset.size === "large" ? "true" : "false");
    });
  }
  document.addEventListener("click", function (e) {
    var t = e.target.closest("[data-toggle-theme]");
    if (t) {
      var next = THEMES[(THEMES.indexOf(root.dataset.theme || "") + 1) % THEMES.length];
      if (next) root.dataset.theme = next; else delete root.dataset.theme;
      store("lab.theme", next || null);
      paintPrefs();
      return;
    }
    var s = e.target.closest("[data-toggle-size]");
    if (s) {
      if (root.dataset.size === "large") delete root.dataset.size; else root.dataset.size = "large";
      store("lab.size", root.dataset.size || null);
      paintPrefs();
    }
  });

  /* Lab page state kept across swaps -------------------------------------------------- */
  function lab() { return document.querySelector(".lab[data-lab]"); }
  function key(name) { var l = lab(); return "lab." + (l ? l.dataset.lab : "") + "." + name; }

  var state = { topic: null, filter: { kind: "all", value: "" }, open: {} };

  function applyTopic() {
    var tabs = document.querySelectorAll("[data-topic-tab]");
    if (!tabs.length) return;
    var names = Array.prototype.map.call(tabs, function (t) { return t.dataset.topicTab; });
    var chosen = state.topic && names.indexOf(state.topic) >= 0 ? state.topic : names[0];
    tabs.forEach(function (t) { t.setAttribute("aria-selected", t.dataset.topicTab === chosen ? "true" : "false"); });
    document.querySelectorAll(".plog[data-topic]").forEach(function (s) { s.hidden = s.dataset.topic !== chosen; });
  }

  function applyFilter() {
    var f = state.filter;
    document.querySelectorAll("#timeline-filters .chip").forEach(function (c) {
      var on = c.dataset.filter === f.kind && (f.kind === "all" || c.dataset.value === f.value);
      c.setAttribute("aria-pressed", on ? "true" : "false");
    });
    // Housekeeping (compaction, internal topics) shows under its own filter and a topic's, never in All.
    var shown = 0;
    document.querySelectorAll("#timeline .ev").forEach(function (ev) {
      var chore = ev.dataset.housekeeping === "true";
      var keep;
      if (f.kind === "all") keep = !chore;
      else if (f.kind === "housekeeping") keep = chore;
      else if (f.kind === "topic") keep = ev.dataset.topic === f.value;
      else if (f.kind === "broker") keep = !chore && (ev.dataset.brokers || "").indexOf(" " + f.value + " ") >= 0;
      else keep = !chore && ev.dataset[f.kind] === f.value;
      ev.hidden = !keep;
      if (keep) shown += 1;
    });
    var none = document.querySelector("#timeline .none-shown");
    if (none) none.hidden = shown > 0 || !document.querySelector("#timeline .ev");
  }

  function applyOpen() {
    document.querySelectorAll("details[data-keep][id]").forEach(function (d) {
      if (Object.prototype.hasOwnProperty.call(state.open, d.id)) d.open = state.open[d.id];
    });
  }

  function applyInternal() {
    var box = document.querySelector("[data-show-internal]");
    var panel = document.getElementById("view-map");
    if (box && panel) panel.classList.toggle("show-internal", box.checked);
  }

  function applyAll() { applyTopic(); applyFilter(); applyOpen(); applyInternal(); }

  document.addEventListener("click", function (e) {
    var tab = e.target.closest("[data-topic-tab]");
    if (tab) {
      state.topic = tab.dataset.topicTab;
      store(key("topic"), state.topic);
      applyTopic();
      return;
    }
    var chip = e.target.closest("#timeline-filters .chip");
    if (chip) {
      state.filter = { kind: chip.dataset.filter, value: chip.dataset.value || "" };
      applyFilter();
    }
  });
  document.addEventListener("toggle", function (e) {
    var d = e.target;
    if (d.matches && d.matches("details[data-keep][id]")) state.open[d.id] = d.open;
  }, true);
  document.addEventListener("change", function (e) {
    if (e.target.matches("[data-show-internal]")) {
      store(key("internal"), e.target.checked ? "1" : null);
      applyInternal();
    }
  });

  /* Live status and reconnection ------------------------------------------------------ */
  function live(status, text) {
    var el = document.getElementById("live-status");
    if (!el) return;
    el.dataset.live = status;
    el.textContent = text;
  }
  var retry = null;
  document.addEventListener("htmx:wsConnecting", function () { live("connecting", "connecting…"); });
  document.addEventListener("htmx:wsOpen", function () { live("live", "● live"); });
  document.addEventListener("htmx:wsAfterMessage", applyAll);
  document.addEventListener("htmx:wsClose", function (e) {
    var code = e.detail && e.detail.event ? e.detail.event.code : 0;
    // 4000 and up: the server ended this page's access (the demo ended, ...) and said why on the
    // page. Trying again would be refused: stay ended.
    if (code >= 4000) {
      var status = document.getElementById("live-status");
      if (!status || status.dataset.live !== "ended") live("ended", "■ ended");
      return;
    }
    live("down", "reconnecting…");
    // htmx-ext-ws retries by itself only after abnormal closes; a server that shut down
    // cleanly (1000, 1001) is retried here too, so a restarted server is found again.
    var wrapper = e.detail && e.detail.socketWrapper;
    if ([1006, 1011, 1012, 1013].indexOf(code) < 0 && wrapper && !retry) {
      retry = setTimeout(function () { retry = null; wrapper.reconnect(); }, 1000);
    }
  });

  /* The clock runs on between frames ---------------------------------------------------- */
  // A lab with nothing happening sends no frame, not even for its clock: the page advances the
  // virtual time it was last sent at the rate it was sent with, while the socket is live. The
  // next frame sets it right again.
  function clockLabel(ms) {
    var s = Math.floor(ms / 1000), m = Math.floor(s / 60);
    function pad(n, w) { n = String(n); while (n.length < w) n = "0" + n; return n; }
    return m + ":" + pad(s % 60, 2) + "." + pad(Math.floor(ms % 1000), 3);
  }
  setInterval(function () {
    var el = document.getElementById("clock-time");
    var status = document.getElementById("live-status");
    if (!el) return;
    if (el._sentAt === undefined) { el._sentAt = performance.now(); return; }  // a new one from the server
    var rate = Number(el.dataset.rate || 0);
    if (!rate || !status || status.dataset.live !== "live") return;
    el.textContent = clockLabel(Number(el.dataset.timeMs) + (performance.now() - el._sentAt) * rate);
  }, 100);

  /* Toasts fade after a while ---------------------------------------------------------- */
  var toastTimers = {};  // by the answer area's id: #toast, and a form's own (#txn-toast)
  document.addEventListener("htmx:afterSwap", function (e) {
    var target = e.detail.target;
    if (target && (target.id === "toast" || target.id === "txn-toast")) {
      var id = target.id;
      clearTimeout(toastTimers[id]);
      toastTimers[id] = setTimeout(function () {
        var t = document.getElementById(id);
        if (t) t.innerHTML = "";
      }, 8000);
    }
  });

  document.addEventListener("DOMContentLoaded", function () {
    if (window.htmx) {
      // Reconnect quickly after a restart: 0.5 s, 1 s, 2 s, then every 3 s (with jitter).
      htmx.config.wsReconnectDelay = function (n) { return Math.min(3000, 500 * Math.pow(2, n)) * (0.75 + Math.random() / 2); };
    }
    state.topic = load(key("topic"));
    var box = document.querySelector("[data-show-internal]");
    if (box) box.checked = load(key("internal")) === "1";
    paintPrefs();
    applyAll();
  });
})();
