// The run page's live events: an EventSource on the run's event stream (the browser resends the last
// event id when it reconnects; the server goes on after it, so nothing comes twice). Each line becomes a
// list item, as text; one stored event may give several lines (tasks, then updates), ids "<stream id>.<n>".
// A status event newer than the page (data-shown: the newest event when it was rendered), or an end event
// saying another status than the page's badge, tells the page's record part to reload ("run-changed" on
// the body, which its hx-trigger listens for). The stream ends when the run ends or waits for input; an
// action that changed the run (its reply's HX-Trigger: run-changed) opens it again after the last event
// shown, and so does a timer every PAUSED_RETRY_MS while the run waits for input (an answer or a cancel
// given elsewhere, in the CLI or another page, lets it go on).
(function () {
  "use strict";
  var list = document.getElementById("events");
  var state = document.getElementById("events-state");
  if (!list || !window.EventSource) { return; }
  var last = "";  // the id of the newest event shown
  var ended = false;
  var ours = false;  // true while this script triggers run-changed itself
  var rendered = list.getAttribute("data-shown") || "";
  var PAUSED_RETRY_MS = 5000;

  function newer(id, than) {  // stream ids "ms-seq" (a message id's ".n" dropped), compared as numbers
    if (!than) { return true; }
    var a = id.split(".")[0].split("-").map(Number), b = than.split(".")[0].split("-").map(Number);
    return a[0] > b[0] || (a[0] === b[0] && a[1] > b[1]);
  }

  function add(kind, text, id) {
    var item = document.createElement("li");
    item.className = "event event-" + kind;
    if (id) { item.setAttribute("data-id", id); }
    item.textContent = text;
    list.appendChild(item);
  }

  function changed(status) {
    var badge = document.getElementById("run-status");
    if (!window.htmx || (badge && badge.textContent === status)) { return; }
    ours = true;
    try { window.htmx.trigger(document.body, "run-changed"); } finally { ours = false; }
  }

  function shown(message) {
    var event = JSON.parse(message.data);
    add(event.mode, message.lastEventId + "  step " + event.step + "  " + event.mode + "  " +
      JSON.stringify(event.data), message.lastEventId);
    if (message.lastEventId) { last = message.lastEventId; }
    state.textContent = "live";
  }

  function follow(url) {
    var source = new EventSource(url);
    ended = false;
    ["status", "values", "updates", "tasks", "custom", "messages", "interrupt", "retry", "progress",
      "checkpoints", "debug"].forEach(function (mode) { source.addEventListener(mode, shown); });
    source.onmessage = shown;
    source.addEventListener("status", function (message) {
      if (newer(message.lastEventId, rendered)) { changed(JSON.parse(message.data).data.status); }
    });
    source.addEventListener("end", function (message) {
      var end = JSON.parse(message.data);
      state.textContent = "the run is " + end.status;
      source.close();
      ended = true;
      changed(end.status);
      if (end.status === "awaiting_input") {
        window.setTimeout(function () { if (ended) { again(); } }, PAUSED_RETRY_MS);
      }
    });
    source.onerror = function () { if (!ended) { state.textContent = "reconnecting…"; } };
  }

  function again() {  // follow the stream again, after the last event shown
    var url = list.getAttribute("data-source");
    follow(last ? url + "?after=" + encodeURIComponent(last) : url);
  }

  document.body.addEventListener("run-changed", function () {
    if (ours || !ended) { return; }
    again();
  });
  follow(list.getAttribute("data-source"));
}());
