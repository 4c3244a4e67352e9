/* listlib: what is new since the reader's last visit, kept in their own browser only.
 *
 * Pages are complete without this script. With it, localStorage ("listlib-visits")
 * remembers when this browser last looked at each list (its list and month pages) and
 * each thread (its pages); nothing is sent anywhere and there is no account. A visit
 * within SESSION of the one before continues it, so going from a list to a month and
 * back keeps the same marks. Marks: on list and month pages, threads with messages
 * newer than the visit before ("new" or "new replies", by data-first/data-last); on a
 * thread page, each message newer than the thread's last visit (or, for a thread never
 * opened, the list's) gets a "New" tag, and a bar at the top and each new message offer
 * "Next new message" (across the pages of a long thread: the contents list every
 * message with its date and page). The first visit marks nothing.
 */
(function () {
  "use strict";
  var KEY = "listlib-visits", SESSION = 30 * 60 * 1000, MAX_THREADS = 2000;
  var page = document.querySelector("[data-visit-list]");
  if (!page) return;
  var store;
  try { store = window.localStorage; } catch (e) { return; }  // storage off: nothing to do
  if (!store) return;
  var visits;
  try { visits = JSON.parse(store.getItem(KEY) || "{}") || {}; } catch (e) { visits = {}; }
  visits.lists = visits.lists || {};
  visits.threads = visits.threads || {};
  var now = Date.now(), slug = page.getAttribute("data-visit-list");
  // The page's words: the "js.visits" strings of the site's translation table, which the
  // page carries in <script type="application/json" id="visits-texts">.
  var texts = {}, element = document.getElementById("visits-texts");
  try { texts = element ? JSON.parse(element.textContent).texts || {} : {}; } catch (e) { texts = {}; }
  function say(key, n) { return String(texts[key] || key).replace("{n}", String(n)); }

  // The moment this visit compares with (``fallback`` for a first visit), and the record
  // updated for this visit: a later visit in the same session compares with the same.
  function visit(map, key, fallback) {
    var rec = map[key], since = fallback;
    if (rec && now - rec.at < SESSION) since = rec.prev;
    else if (rec) since = rec.at;
    map[key] = { at: now, prev: since };
    return since;
  }

  function threadKey(href) {
    var name = href.split("#")[0].split("?")[0].split("/").pop();
    return slug + "/" + name.replace(/(-[0-9]+)?\.html$/, "");
  }

  function tag(text, className) {
    var span = document.createElement("span");
    span.className = "tag " + className;
    span.textContent = text;
    return span;
  }

  function seenThread(key, listSince) {
    var rec = visits.threads[key];
    if (!rec) return { since: listSince, opened: false };
    return { since: now - rec.at < SESSION ? rec.prev : rec.at, opened: true };
  }

  var threadId = page.getAttribute("data-visit-thread");
  if (threadId) {
    var key = slug + "/" + threadId, listRec = visits.lists[slug];
    var listSince = listRec ? (now - listRec.at < SESSION ? listRec.prev : listRec.at) : null;
    var since = visit(visits.threads, key, listSince);  // a thread never opened: what is new since the list
    // Every message of the thread in its order, with its date: from the table of contents
    // (it lists them all, on every page of a long thread), else from the page's messages.
    var entries = [], toc = document.querySelectorAll(".toc li > a[href]");
    var sources = toc.length ? toc : document.querySelectorAll("article.message[id]");
    for (var i = 0; i < sources.length; i++) {
      var time = sources[i].querySelector(toc.length ? "time[datetime]" : ".message-header time[datetime]");
      var href = toc.length ? sources[i].getAttribute("href") : "#" + sources[i].id;
      if (time) entries.push({ href: href, id: href.slice(href.indexOf("#") + 1), date: Date.parse(time.getAttribute("datetime")) });
    }
    var fresh = since === null || since === undefined ? [] : entries.filter(function (e) { return e.date > since; });
    fresh.forEach(function (entry, n) {
      var article = document.getElementById(entry.id);
      if (!article || !article.classList.contains("message")) return;  // on another page
      article.classList.add("new");
      var heading = article.querySelector("h2");
      heading.appendChild(document.createTextNode(" "));
      heading.appendChild(tag(say("new_message"), "new-tag"));
      var links = article.querySelector(".message-links");
      if (links && fresh[n + 1]) {
        var next = document.createElement("a");
        next.href = fresh[n + 1].href;
        next.className = "next-new";
        next.textContent = say("next_new");
        links.insertBefore(next, links.firstChild);
      }
    });
    if (fresh.length) {
      var bar = document.createElement("p"), first = document.createElement("a");
      bar.className = "note new-since";
      bar.setAttribute("role", "status");
      bar.appendChild(document.createTextNode(say("new_since", fresh.length) + " "));
      first.href = fresh[0].href;
      first.className = "next-new";
      first.textContent = say("next_new");
      bar.appendChild(first);
      var heading1 = document.querySelector("article.thread h1");
      if (heading1) heading1.parentNode.insertBefore(bar, heading1.nextSibling);
    }
  } else {
    var listSince2 = visit(visits.lists, slug, null), rows = document.querySelectorAll("[data-last] a[href]");
    for (var r = 0; r < rows.length; r++) {
      var row = rows[r].closest("[data-last]"), seen = seenThread(threadKey(rows[r].getAttribute("href")), listSince2);
      if (seen.since === null || seen.since === undefined) continue;
      var last = Date.parse(row.getAttribute("data-last")), begun = Date.parse(row.getAttribute("data-first"));
      if (!(last > seen.since)) continue;
      row.classList.add("new");
      // A thread never opened that began after the visit (or whose start the row does not say) is "new".
      var label = !seen.opened && !(begun <= seen.since) ? say("new_thread") : say("new_replies");
      rows[r].parentNode.insertBefore(tag(label, "new-tag"), rows[r].nextSibling);
      rows[r].parentNode.insertBefore(document.createTextNode(" "), rows[r].nextSibling);
    }
  }

  // Keep the most recently seen threads when there are too many.
  var keys = Object.keys(visits.threads);
  if (keys.length > MAX_THREADS) {
    keys.sort(function (a, b) { return visits.threads[b].at - visits.threads[a].at; });
    keys.slice(MAX_THREADS).forEach(function (k) { delete visits.threads[k]; });
  }
  try { store.setItem(KEY, JSON.stringify(visits)); } catch (e) { /* full or refused: marks only */ }
})();
