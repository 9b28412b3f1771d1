// Click a column's heading to sort its table by it; click again to reverse. A cell with
// data-v sorts by that number (a size by its bytes), any other by its text.
"use strict";
(function () {
  function key(cell) {
    if (cell === undefined) return "";
    const v = cell.getAttribute("data-v");
    return v === null ? cell.textContent : Number(v);
  }
  function compare(a, b) {
    const numeric = typeof a === "number" && typeof b === "number";
    if (numeric) return a - b;
    return String(a).localeCompare(String(b), undefined, { numeric: true });
  }
  function sortBy(table, index, heading) {
    const body = table.tBodies[0];
    const ascending = heading.getAttribute("aria-sort") !== "ascending";
    for (const th of table.tHead.rows[0].cells) th.removeAttribute("aria-sort");
    heading.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    const rows = Array.from(body.rows).map((row, at) => [key(row.cells[index]), at, row]);
    rows.sort((x, y) => compare(x[0], y[0]) * (ascending ? 1 : -1) || x[1] - y[1]);
    for (const [, , row] of rows) body.appendChild(row);
  }
  for (const table of document.querySelectorAll("table.sortable")) {
    const headings = table.tHead.rows[0].cells;
    for (let i = 0; i < headings.length; i++) {
      headings[i].addEventListener("click", () => sortBy(table, i, headings[i]));
    }
  }
})();
