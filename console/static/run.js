// The run page's live events: an EventSource on the run's event stream (the browser resends the last
// event id when it reconnects; the server goes on after it, so nothing comes twice). Each line becomes a
// list item, as text; one stored event may give several lines (tasks, then updates) with the same id.
// A status or end event tells the page's record part to reload ("run-changed" on the body, which its
// hx-trigger listens for).
(function () {
  "use strict";
  var list = document.getElementById("events");
  var state = document.getElementById("events-state");
  if (!list || !window.EventSource) { return; }
  var source = new EventSource(list.getAttribute("data-source"));

  function add(kind, text, id) {
    var item = document.createElement("li");
    item.className = "event event-" + kind;
    if (id) { item.setAttribute("data-id", id); }
    item.textContent = text;
    list.appendChild(item);
  }

  function changed() {
    if (window.htmx) { window.htmx.trigger(document.body, "run-changed"); }
  }

  function shown(message) {
    var event = JSON.parse(message.data);
    add(event.mode, message.lastEventId + "  step " + event.step + "  " + event.mode + "  " +
      JSON.stringify(event.data), message.lastEventId);
    state.textContent = "live";
  }

  ["status", "values", "updates", "tasks", "custom", "messages", "interrupt", "retry", "progress",
    "checkpoints", "debug"].forEach(function (mode) { source.addEventListener(mode, shown); });
  source.onmessage = shown;
  source.addEventListener("status", changed);
  source.addEventListener("end", function (message) {
    var end = JSON.parse(message.data);
    state.textContent = "the run is " + end.status + " (reload for new events)";
    source.close();
    changed();
  });
  source.onerror = function () { state.textContent = "reconnecting…"; };
}());
