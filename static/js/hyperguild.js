/* hyperguild reviewer keyboard shortcuts and small helpers. Plain JS, no dependencies.
 *
 * Note and training pages:  j / n  next,  k  previous,  p  promote,  r  reject,  m  merge,  e  edit,
 *                           a  approve (a flagged example asks to confirm first).
 * List pages:               j / k  move the selection,  o / Enter  open,  x  tick.
 * Everywhere:               ?  the list of shortcuts,  Ctrl+Enter  submit the form being typed in.
 * Keys are ignored while typing in a text field; Escape leaves the field (or closes the overlay).
 * Ticking a checkbox with the mouse does not count as typing: the keys keep working.
 */
(function () {
  "use strict";

  var TEXT_INPUTS = ["text", "search", "number", "email", "password", "url", "tel", "date", "datetime-local", ""];

  function typing(target) {
    if (!target || !target.tagName) { return false; }
    var tag = target.tagName;
    if (tag === "INPUT") { return TEXT_INPUTS.indexOf((target.getAttribute("type") || "").toLowerCase()) !== -1; }
    return tag === "TEXTAREA" || tag === "SELECT" || target.isContentEditable;
  }

  function go(id) {
    var link = document.getElementById(id);
    if (link) { window.location.href = link.href; return true; }
    return false;
  }

  function focusIn(formId, fieldSelector) {
    var form = document.getElementById(formId);
    if (!form) { return false; }
    var panel = form.closest("details");
    if (panel) { panel.open = true; }
    var field = form.querySelector(fieldSelector);
    form.scrollIntoView({ block: "nearest" });
    if (field) { field.focus(); }
    return true;
  }

  function listRows() {
    var table = document.querySelector("[data-keyboard-list]");
    return table ? Array.prototype.slice.call(table.querySelectorAll("tbody tr[data-href]")) : [];
  }

  var selected = -1;
  function select(index) {
    var rows = listRows();
    if (!rows.length) { return false; }
    selected = Math.max(0, Math.min(rows.length - 1, index));
    rows.forEach(function (row, i) { row.classList.toggle("selected", i === selected); });
    rows[selected].scrollIntoView({ block: "nearest" });
    return true;
  }

  // The submit button that follows the field (a form with several, like the bulk bar, gets the one
  // next to where the reviewer is typing), else the form's first one.
  function submitterFor(field) {
    var buttons = Array.prototype.slice.call(field.form.querySelectorAll("button[type=submit], input[type=submit]"));
    for (var i = 0; i < buttons.length; i++) {
      if (field.compareDocumentPosition(buttons[i]) & Node.DOCUMENT_POSITION_FOLLOWING) { return buttons[i]; }
    }
    return buttons[0] || null;
  }

  function shortcuts(show) {
    var overlay = document.getElementById("shortcuts");
    if (!overlay) { return false; }
    overlay.hidden = !show;
    return true;
  }

  function approve() {
    var form = document.getElementById("approve-form");
    if (!form) { return false; }
    var confirmBox = form.querySelector("[name=confirm_flagged]");
    if (confirmBox && !confirmBox.checked) {
      // A flagged example is never approved by one keystroke: show the confirmation instead.
      confirmBox.focus();
      form.classList.add("needs-confirmation");
      return true;
    }
    form.requestSubmit();
    return true;
  }

  document.addEventListener("keydown", function (event) {
    var overlay = document.getElementById("shortcuts");
    if (event.key === "Escape" && overlay && !overlay.hidden) { shortcuts(false); event.preventDefault(); return; }
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && event.target.form) {
      event.preventDefault();
      event.target.form.requestSubmit(submitterFor(event.target));
      return;
    }
    if (event.key === "Escape" && typing(event.target)) { event.target.blur(); return; }
    if (typing(event.target) || event.ctrlKey || event.metaKey || event.altKey) { return; }
    // A checkbox or button clicked with the mouse keeps the focus; the page keys still apply.
    var rows = listRows();
    var handled = false;
    switch (event.key) {
      case "?": handled = shortcuts(true); break;
      case "j": case "n":
        handled = rows.length ? select(selected + 1) : go("next-note"); break;
      case "k":
        handled = rows.length ? select(selected - 1) : go("prev-note"); break;
      case "o": case "Enter":
        if (event.key === "Enter" && event.target.tagName === "BUTTON") { break; }
        if (event.key === "Enter" && event.target.tagName === "A") { break; }
        if (rows.length && selected >= 0) { window.location.href = rows[selected].dataset.href; handled = true; }
        break;
      case "x":
        if (rows.length && selected >= 0) {
          var box = rows[selected].querySelector("input[type=checkbox]");
          if (box) {
            box.checked = !box.checked;
            box.dispatchEvent(new Event("change", { bubbles: true }));  // the bulk bar's ticked count follows
            handled = true;
          }
        }
        break;
      case "p": handled = focusIn("promote-form", "#id_wing"); break;
      case "r": handled = focusIn("reject-form", "#id_reason"); break;
      case "m": handled = focusIn("merge-form", "#id_into"); break;
      case "e": handled = focusIn("edit-form", "textarea"); break;
      case "a": handled = approve(); break;
    }
    if (handled) { event.preventDefault(); }
  });

  document.addEventListener("click", function (event) {
    if (event.target.matches("[data-close-shortcuts]") || event.target.id === "shortcuts") { shortcuts(false); }
    // Mouse clicks on checkboxes must not leave the keyboard "stuck": hand the focus back to the page.
    if (event.target.matches("input[type=checkbox]") && event.detail > 0) { event.target.blur(); }
  });

  document.addEventListener("change", function (event) {
    if (event.target.matches("[data-check-all]")) {
      var table = event.target.closest("table");
      table.querySelectorAll("tbody input[type=checkbox]").forEach(function (box) { box.checked = event.target.checked; });
    }
  });

  // Merge page: re-render the preview and the diff against the target while the combined text is edited.
  var mergeForm = document.getElementById("merge-save-form");
  if (mergeForm && mergeForm.dataset.renderUrl) {
    var body = mergeForm.querySelector("textarea[name=body]");
    var timer = null;
    var sent = 0;
    var refresh = function () {
      var mine = ++sent;
      var data = new FormData(mergeForm);
      fetch(mergeForm.dataset.renderUrl, { method: "POST", body: data, credentials: "same-origin" })
        .then(function (response) { return response.ok ? response.json() : null; })
        .then(function (result) {
          if (!result || mine !== sent) { return; }  // an older answer arriving late is ignored
          document.getElementById("merge-preview").innerHTML = result.html;
          var diff = document.getElementById("merge-diff");
          if (diff) { diff.innerHTML = result.diff; }
          mergeForm.dataset.rendered = String(mine);
        });
    };
    body.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(refresh, 250);
    });
  }
})();

/* Deferred panels: an element with data-load-url is replaced by the HTML that URL answers (the note page's
 * similar-notes panel when no ranking is stored yet: the page never waits for a search). */
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll("[data-load-url]"), function (element) {
      var target = element.closest(element.getAttribute("data-load-into")) || element;
      fetch(element.getAttribute("data-load-url"), { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } })
        .then(function (response) { return response.ok ? response.text() : Promise.reject(response.status); })
        .then(function (html) { target.outerHTML = html; })
        .catch(function () { element.textContent = "Could not load the similar notes; reload the page."; });
    });
  });
})();

/* The queue's bulk bar: open on a wide screen (folded to one line on a phone), and the count of ticked notes. */
(function () {
  "use strict";
  function countTicked() {
    var counter = document.querySelector("[data-ticked-count]");
    if (!counter) { return; }
    counter.textContent = document.querySelectorAll("table.queue tbody input[name=notes]:checked").length;
  }
  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll("details[data-open-wide]"), function (details) {
      if (window.matchMedia("(min-width: 701px)").matches) { details.open = true; }
    });
    countTicked();
  });
  document.addEventListener("change", function (event) {
    if (event.target.matches("input[type=checkbox]")) { countTicked(); }
  });
})();

/* A link to #<id> of a folded panel (details) opens it: "edit the guidelines" lands in their edit form. */
(function () {
  "use strict";
  function openTarget() {
    var target = window.location.hash && document.getElementById(window.location.hash.slice(1));
    if (target && target.tagName === "DETAILS") { target.open = true; target.scrollIntoView({ block: "start" }); }
  }
  document.addEventListener("DOMContentLoaded", openTarget);
  window.addEventListener("hashchange", openTarget);
})();
