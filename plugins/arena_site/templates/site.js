// Arena's leaderboard: sort by a column, filter by name and size. The page reads whole without it.
(function () {
  "use strict";
  var table = document.getElementById("leaderboard");
  if (!table) { return; }
  var body = table.tBodies[0];
  var filters = document.getElementById("filters");
  var search = document.getElementById("model-filter");
  var sizes = new Set();

  function value(row, index, numeric) {
    var text = row.cells[index].textContent.trim();
    if (!numeric) { return text.toLowerCase(); }
    var number = parseFloat(text.replace(/^=/, "").replace(/[^0-9.eE+-]/g, " "));
    if (isNaN(number)) { return null; }
    return /[0-9] ?ms\b/.test(text) ? number / 1000 : number;  // "261 ms" and "261 ms (mean)"
  }

  function sortBy(header) {
    var index = header.cellIndex;
    var numeric = header.dataset.sort === "number";
    var descending = header.getAttribute("aria-sort") !== "descending";
    Array.prototype.forEach.call(header.parentNode.cells, function (cell) { cell.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", descending ? "descending" : "ascending");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = value(a, index, numeric), y = value(b, index, numeric);
      if (x === null) { return y === null ? 0 : 1; }  // rows without a figure go last, either way
      if (y === null) { return -1; }
      return (x < y ? -1 : x > y ? 1 : 0) * (descending ? -1 : 1);
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }

  function applyFilters() {
    var words = (search.value || "").toLowerCase();
    Array.prototype.forEach.call(document.querySelectorAll("tr.leaderboard-row"), function (row) {
      var name = row.querySelector(".model").textContent.toLowerCase();
      var shown = name.indexOf(words) !== -1 && (sizes.size === 0 || sizes.has(row.dataset.size));
      row.hidden = !shown;
    });
  }

  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (header) {
    if (!header.dataset.sort) { return; }
    header.tabIndex = 0;
    header.addEventListener("click", function () { sortBy(header); });
    header.addEventListener("keydown", function (event) { if (event.key === "Enter") { sortBy(header); } });
  });
  Array.prototype.forEach.call(filters.querySelectorAll("button[data-size]"), function (button) {
    button.addEventListener("click", function () {
      var size = button.dataset.size;
      if (sizes.has(size)) { sizes.delete(size); } else { sizes.add(size); }
      button.setAttribute("aria-pressed", sizes.has(size) ? "true" : "false");
      applyFilters();
    });
  });
  search.addEventListener("input", applyFilters);
  filters.hidden = false;  // the controls show only where they work
})();
