// Trove console: the few things a page does in the browser. Directories of
// the memory tree load when expanded (HTML fragments from this server),
// and a submitted form shows that it is busy. No inline script, no other
// origin, nothing logged.
"use strict";

function loadInto(list, src, replace) {
  const busy = document.createElement("li");
  busy.className = "loading";
  busy.textContent = "Loading…";
  if (replace) {
    list.replaceChildren(busy);
  } else {
    list.appendChild(busy);
  }
  fetch(src, { credentials: "same-origin", headers: { "Accept": "text/html" } })
    .then(function (r) {
      if (!r.ok) {
        throw new Error("the server answered " + r.status);
      }
      return r.text();
    })
    .then(function (html) {
      // The fragment is rendered by this server's templates, which escape
      // everything the store holds.
      const t = document.createElement("template");
      t.innerHTML = html;
      busy.replaceWith(t.content);
    })
    .catch(function (err) {
      busy.className = "error";
      busy.textContent = "Could not load this directory: " + err.message + ". ";
      const retry = document.createElement("button");
      retry.type = "button";
      retry.className = "small";
      retry.textContent = "Retry";
      retry.addEventListener("click", function () {
        busy.remove();
        loadInto(list, src, false);
      });
      busy.appendChild(retry);
    });
}

document.addEventListener("toggle", function (ev) {
  const d = ev.target;
  if (!(d instanceof HTMLDetailsElement) || !d.dataset.src) {
    return;
  }
  if (d.open && !d.dataset.loaded) {
    d.dataset.loaded = "1";
    loadInto(d.querySelector("ul"), d.dataset.src, true);
  }
}, true);

document.addEventListener("click", function (ev) {
  const a = ev.target instanceof Element ? ev.target.closest("li.more > a[data-src]") : null;
  if (!a) {
    return;
  }
  ev.preventDefault();
  const li = a.parentElement;
  const list = li.parentElement;
  li.remove();
  loadInto(list, a.dataset.src, false);
});

document.addEventListener("submit", function (ev) {
  const f = ev.target;
  if (!(f instanceof HTMLFormElement) || f.method.toLowerCase() !== "post") {
    return;
  }
  if (f.dataset.busy) {
    ev.preventDefault(); // a second click while the first is in flight
    return;
  }
  f.dataset.busy = "1";
  const b = ev.submitter || f.querySelector("button[type=submit]");
  if (b) {
    b.setAttribute("aria-busy", "true");
  }
});

// Store counts (memories, size, last change) load after the page: counting
// a large store takes longer than drawing the page.
function fillStats() {
  document.querySelectorAll("[data-stats]").forEach(function (el) {
    fetch(el.dataset.stats, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) {
        if (!r.ok) {
          throw new Error("the server answered " + r.status);
        }
        return r.json();
      })
      .then(function (stats) {
        el.querySelectorAll("[data-stat]").forEach(function (cell) {
          const v = stats[cell.dataset.stat];
          if (cell.dataset.stat === "last_change" && typeof stats.last_change_ago === "string") {
            // Relative, with the exact UTC time on hover, as the server
            // writes times.
            const t = document.createElement("time");
            t.dateTime = stats.last_change_at;
            t.title = v;
            t.textContent = stats.last_change_ago;
            cell.replaceChildren(t);
          } else if (typeof v === "string") {
            cell.textContent = v;
          }
        });
        el.dataset.statsLoaded = "1";
      })
      .catch(function () {
        el.querySelectorAll("[data-stat=memories], [data-stat=size]").forEach(function (cell) {
          cell.textContent = "?";
          cell.title = "Could not count this store; reload to try again.";
        });
      });
  });
}

if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", fillStats);
} else {
  fillStats();
}
