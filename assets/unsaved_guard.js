// Unsaved changes are never lost silently: leaving a page (a link, a bot's tab, the sidebar, the browser's
// Back button, closing or reloading the tab) while a guarded form has edits asks "Discard unsaved
// changes?" first.
// A form opts in with data-unsaved-guard (it counts as edited once the admin types in it; a saved form
// is rendered afresh, without the mark); a page whose fields live in its state says so with an element
// data-unsaved="true". A checkbox with data-confirm-when-checked="Question?" (or -when-unchecked) makes
// its form's submit ask first.
(() => {
  if (window.__grobotUnsavedGuard) return;
  window.__grobotUnsavedGuard = true;
  const MESSAGE = "Discard unsaved changes?";
  const GUARDED = "form[data-unsaved-guard]";

  const mark = (event) => {
    const target = event.target;
    const form = target && target.closest ? target.closest(GUARDED) : null;
    if (form && !(target.closest && target.closest("[data-unsaved-ignore]"))) form.dataset.edited = "true";
  };
  document.addEventListener("input", mark, true);
  document.addEventListener("change", mark, true);
  document.addEventListener("click", (event) => {
    const target = event.target;
    if (target && target.closest && target.closest('[role="checkbox"], [role="switch"], [role="radio"]')) {
      mark(event);
      armOnInput(event);
    }
  }, true);

  const dirty = () => Boolean(document.querySelector(`${GUARDED}[data-edited="true"], [data-unsaved="true"]`));
  const forget = () => document.querySelectorAll(`${GUARDED}[data-edited]`).forEach((form) => delete form.dataset.edited);
  window.grobotUnsaved = { dirty, forget };

  // Links inside the app (React Router handles them without unloading the page).
  document.addEventListener("click", (event) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    const link = event.target && event.target.closest ? event.target.closest("a[href]") : null;
    if (!link || (link.target && link.target !== "_self") || link.hasAttribute("download")) return;
    const url = new URL(link.href, window.location.href);
    if (url.origin !== window.location.origin) return;
    if (url.pathname === window.location.pathname && url.search === window.location.search) return;
    if (!dirty()) return;
    if (window.confirm(MESSAGE)) {
      forget();
      return;
    }
    event.preventDefault();
    event.stopImmediatePropagation();
  }, true);

  // The browser's Back button. History moves before any script can ask, so once the admin types in a
  // guarded page its history entry is doubled: Back first returns to the same page (nothing moves),
  // where the question is asked if there are edits; staying doubles the entry again, and discarding, or
  // having nothing to lose, goes on back. The copy keeps React Router's state (it sees no move there).
  const SENTINEL = "grobotUnsavedGuard";
  const onSentinel = () => Boolean(window.history.state && window.history.state[SENTINEL]);
  let atSentinel = onSentinel();
  const pushState = window.history.pushState.bind(window.history);
  window.history.pushState = (state, title, url) => {
    pushState(state, title, url);
    atSentinel = onSentinel();
  };
  const arm = () => {
    if (atSentinel) return;
    pushState({ ...(window.history.state || {}), [SENTINEL]: true }, "", window.location.href);
    atSentinel = true;
  };
  const guardedPage = () => Boolean(document.querySelector(`${GUARDED}, [data-unsaved]`));
  const armOnInput = (event) => {
    const target = event.target;
    if (target && target.closest && !target.closest("[data-unsaved-ignore]") && guardedPage()) arm();
  };
  document.addEventListener("input", armOnInput, true);
  document.addEventListener("change", armOnInput, true);
  window.addEventListener("popstate", (event) => {
    const fromSentinel = atSentinel;
    atSentinel = onSentinel();
    if (!fromSentinel || atSentinel) return;  // a move the app handles
    event.stopImmediatePropagation();  // still the same page: the app must not see it
    if (dirty() && !window.confirm(MESSAGE)) {
      arm();
      return;
    }
    forget();
    window.history.back();
  }, { capture: true });

  // Closing or reloading the tab: the browser asks with its own words. Captured first, so that the app
  // keeps its connection while the admin may still stay (it disconnects on "pagehide" when leaving).
  window.addEventListener("beforeunload", (event) => {
    if (!dirty()) return;
    event.preventDefault();
    event.returnValue = MESSAGE;
    event.stopImmediatePropagation();
  }, { capture: true });

  // A destructive choice inside a form (e.g. "Remove the stored key") is confirmed when the form is sent.
  document.addEventListener("submit", (event) => {
    const form = event.target;
    if (!form || !form.querySelector) return;
    if (event.submitter && event.submitter.hasAttribute("data-no-confirm")) return;
    const checked = form.querySelector(
      '[data-confirm-when-checked][aria-checked="true"], input[data-confirm-when-checked]:checked');
    const unchecked = form.querySelector(
      '[data-confirm-when-unchecked]:not([data-confirm-when-unchecked=""])[aria-checked="false"]');
    const question = checked ? checked.getAttribute("data-confirm-when-checked")
      : unchecked ? unchecked.getAttribute("data-confirm-when-unchecked") : "";
    if (question && !window.confirm(question)) {
      event.preventDefault();
      event.stopImmediatePropagation();
    }
  }, true);
})();
