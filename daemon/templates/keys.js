// dreamd serve's keys, without a mouse: j/k next/previous, a accept, r reject (the reason
// box), u undo, ? help. Keys typed into a text box stay text; Ctrl+Enter sends its form.
"use strict";
document.addEventListener("keydown", (event) => {
  const help = document.getElementById("help");
  if (event.target.closest("input, textarea, select")) {
    if (event.key === "Escape") event.target.blur();
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && event.target.form) {
      event.preventDefault();
      event.target.form.requestSubmit();
    }
    return;
  }
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const click = (selector) => {
    const found = document.querySelector(selector);
    if (found) found.click();
    return found !== null;
  };
  const actions = {
    j: () => click("a[rel=next]"),
    k: () => click("a[rel=prev]"),
    a: () => click("#accept"),
    r: () => {
      const reason = document.getElementById("reason");
      if (reason) reason.focus();
      return reason !== null;
    },
    u: () => click("#undo"),
    "?": () => { help.hidden = !help.hidden; return true; },
    Escape: () => { help.hidden = true; return true; },
  };
  const act = actions[event.key];
  if (act && act()) event.preventDefault();
});
