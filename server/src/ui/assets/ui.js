// ardacat web interface: small enhancements only; every page works without JavaScript.
// Loaded as a file of this server (the Content-Security-Policy forbids inline script).
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  // A changed page size applies at once.
  document.querySelectorAll("select.autosubmit").forEach(function (s) {
    s.addEventListener("change", function () { if (s.form) { s.form.submit(); } });
  });
  // "/" focuses the query field, as in many browsers of data.
  var q = document.getElementById("q");
  document.addEventListener("keydown", function (e) {
    var t = e.target && e.target.tagName;
    if (q && e.key === "/" && t !== "INPUT" && t !== "TEXTAREA" && t !== "SELECT") {
      e.preventDefault();
      q.focus();
    }
  });
});
