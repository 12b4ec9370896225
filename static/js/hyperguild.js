/* hyperguild reviewer keyboard shortcuts and small helpers. Plain JS, no dependencies.
 *
 * Note and training pages:  j / n  next,  k  previous,  p  promote (focus the form),
 *                           r  reject (focus the reason),  m  merge,  a  approve.
 * List pages:               j / k  move the selection,  o / Enter  open,  x  tick.
 * Keys are ignored while typing in a field; Escape leaves the field.
 */
(function () {
  "use strict";

  function typing(target) {
    var tag = (target && target.tagName) || "";
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (target && target.isContentEditable);
  }

  function go(id) {
    var link = document.getElementById(id);
    if (link) { window.location.href = link.href; return true; }
    return false;
  }

  function focusIn(formId, fieldSelector) {
    var form = document.getElementById(formId);
    if (!form) { return false; }
    var field = form.querySelector(fieldSelector);
    form.scrollIntoView({ behavior: "smooth", block: "center" });
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

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && typing(event.target)) { event.target.blur(); return; }
    if (typing(event.target) || event.ctrlKey || event.metaKey || event.altKey) { return; }
    var rows = listRows();
    var handled = false;
    switch (event.key) {
      case "j": case "n":
        handled = rows.length ? select(selected + 1) : go("next-note"); break;
      case "k":
        handled = rows.length ? select(selected - 1) : go("prev-note"); break;
      case "o": case "Enter":
        if (rows.length && selected >= 0) { window.location.href = rows[selected].dataset.href; handled = true; }
        break;
      case "x":
        if (rows.length && selected >= 0) {
          var box = rows[selected].querySelector("input[type=checkbox]");
          if (box) { box.checked = !box.checked; handled = true; }
        }
        break;
      case "p": handled = focusIn("promote-form", "#id_wing"); break;
      case "r": handled = focusIn("reject-form", "#id_reason"); break;
      case "m": handled = focusIn("merge-form", "#id_into"); break;
      case "a":
        var approve = document.getElementById("approve-form");
        if (approve) { approve.requestSubmit(); handled = true; }
        break;
    }
    if (handled) { event.preventDefault(); }
  });

  document.addEventListener("change", function (event) {
    if (event.target.matches("[data-check-all]")) {
      var table = event.target.closest("table");
      table.querySelectorAll("tbody input[type=checkbox]").forEach(function (box) { box.checked = event.target.checked; });
    }
  });
})();
