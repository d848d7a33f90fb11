/* GroBot's page shell, in the browser only (no server round trip):
 * the sidebar's width, dragged on its edge ([data-sidebar-handle]) or set with the arrow keys
 * while the edge has focus, is the CSS variable --grobot-sidebar-width and is remembered in
 * localStorage ("grobot.sidebarWidth"); a double-click on the edge resets it. */
(function () {
  "use strict";
  var KEY = "grobot.sidebarWidth";
  var VAR = "--grobot-sidebar-width";
  var MIN = 176, MAX = 480, STEP = 16;

  function clamp(width) {
    return Math.max(MIN, Math.min(MAX, Math.round(width)));
  }
  function apply(width) {
    document.documentElement.style.setProperty(VAR, clamp(width) + "px");
  }
  function save(width) {
    try { localStorage.setItem(KEY, String(clamp(width))); } catch (e) { /* storage off: not remembered */ }
  }
  function current(handle) {
    return handle.parentElement.getBoundingClientRect().width;
  }
  function handleOf(target) {
    return target && target.closest ? target.closest("[data-sidebar-handle]") : null;
  }

  try {
    var saved = parseInt(localStorage.getItem(KEY) || "", 10);
    if (saved > 0) { apply(saved); }
  } catch (e) { /* storage off */ }

  document.addEventListener("pointerdown", function (event) {
    var handle = handleOf(event.target);
    if (!handle || event.button !== 0) { return; }
    event.preventDefault();
    var left = handle.parentElement.getBoundingClientRect().left;
    var width = current(handle);
    document.documentElement.style.cursor = "col-resize";
    document.documentElement.style.userSelect = "none";
    function move(e) {
      width = clamp(e.clientX - left);
      apply(width);
    }
    function up() {
      document.removeEventListener("pointermove", move);
      document.removeEventListener("pointerup", up);
      document.removeEventListener("pointercancel", up);
      document.documentElement.style.cursor = "";
      document.documentElement.style.userSelect = "";
      save(width);
    }
    document.addEventListener("pointermove", move);
    document.addEventListener("pointerup", up);
    document.addEventListener("pointercancel", up);
  });

  document.addEventListener("keydown", function (event) {
    var handle = handleOf(event.target);
    if (!handle || (event.key !== "ArrowLeft" && event.key !== "ArrowRight")) { return; }
    event.preventDefault();
    var width = clamp(current(handle) + (event.key === "ArrowRight" ? STEP : -STEP));
    apply(width);
    save(width);
  });

  document.addEventListener("dblclick", function (event) {
    if (!handleOf(event.target)) { return; }
    document.documentElement.style.removeProperty(VAR);
    try { localStorage.removeItem(KEY); } catch (e) { /* storage off */ }
  });
})();
