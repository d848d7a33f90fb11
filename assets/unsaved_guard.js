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

  // A form whose fields live in the page's state (it holds the data-unsaved marker) learns of an edit only
  // once the server has answered; so a field typed in counts as edited for PENDING_MS after the last
  // keystroke too, and leaving right after typing still asks. Sending the form (Save changes) or a plain
  // button in it (Discard) ends that time.
  const PENDING_MS = 2000;
  const STATEFUL = "form";
  const statefulForm = (target) => {
    const form = target && target.closest ? target.closest(STATEFUL) : null;
    return form && form.querySelector("[data-unsaved]") ? form : null;
  };
  const mark = (event) => {
    const target = event.target;
    if (!target || !target.closest || target.closest("[data-unsaved-ignore]")) return;
    const form = target.closest(GUARDED);
    if (form) form.dataset.edited = "true";
    const stateful = statefulForm(target);
    if (stateful) stateful.dataset.pendingSince = String(Date.now());
  };
  const pending = () => Array.from(document.querySelectorAll(`${STATEFUL}[data-pending-since]`)).some(
    (form) => Date.now() - Number(form.dataset.pendingSince) < PENDING_MS);
  const settle = (form) => { if (form) delete form.dataset.pendingSince; };
  document.addEventListener("submit", (event) => settle(statefulForm(event.target)), true);
  document.addEventListener("click", (event) => {
    const button = event.target && event.target.closest ? event.target.closest("button:not([role])") : null;
    if (button && button.type !== "submit") settle(statefulForm(button));
  }, true);
  document.addEventListener("input", mark, true);
  document.addEventListener("change", mark, true);
  document.addEventListener("click", (event) => {
    const target = event.target;
    if (target && target.closest && target.closest('[role="checkbox"], [role="switch"], [role="radio"]')) {
      mark(event);
      armOnInput(event);
    }
  }, true);

  const dirty = () => Boolean(document.querySelector(`${GUARDED}[data-edited="true"], [data-unsaved="true"]`))
    || pending();
  const forget = () => {
    document.querySelectorAll(`${GUARDED}[data-edited]`).forEach((form) => delete form.dataset.edited);
    document.querySelectorAll(`${STATEFUL}[data-pending-since]`).forEach(settle);
  };
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
