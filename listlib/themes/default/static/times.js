/* listlib: shows a page's dates and times in the reader's own zone and format.
 *
 * Pages are static and correct without this script: every time is UTC, in
 * <time datetime="...Z" data-utc>, and the page says "UTC" in its [data-time-zone]
 * element; every day is an ISO date (YYYY-MM-DD, a UTC day) in <time datetime>. This
 * rewrites the times in the browser's own zone and the days, in the browser's own
 * language and format (Intl.DateTimeFormat's medium date and short time: "2 May 2024, 17:00",
 * "May 2, 2024, 5:00 PM", "02.05.2024, 17:00"), and names the zone; each element's title keeps its ISO text.
 * Order is kept (one zone a page). Times a page adds later (search results) are shown
 * the same way through ListlibTimes.show(element). A sender's own clock (a <time>
 * without data-utc that is not a bare day) is left as written.
 */
(function (root) {
  "use strict";
  var DAY_RE = /^\s*\d{4}-\d{2}-\d{2}\s*$/;
  var moment = null, day = null;
  try {
    moment = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
    day = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeZone: "UTC" });
  } catch (e) { return; }  // no Intl: the ISO forms stay

  function show(scope) {
    var times = scope.querySelectorAll("time[datetime]");
    for (var i = 0; i < times.length; i++) {
      var time = times[i], date = new Date(time.getAttribute("datetime")), text = time.textContent;
      if (isNaN(date.getTime()) || time.hasAttribute("data-shown")) continue;
      var isDay = DAY_RE.test(text);
      if (!isDay && !time.hasAttribute("data-utc")) continue;
      time.title = text.trim() + (isDay ? " (UTC)" : "");
      time.textContent = (isDay ? day : moment).format(date);
      time.setAttribute("data-shown", "");
    }
  }

  root.ListlibTimes = { show: show };
  function start() {
    show(document);
    var zone = "";
    try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { zone = ""; }
    // The page's words: the "js.times" strings of the site's translation table, which the
    // page carries in <script type="application/json" id="times-texts">.
    var texts = {}, element = document.getElementById("times-texts");
    try { texts = element ? JSON.parse(element.textContent).texts || {} : {}; } catch (e) { texts = {}; }
    var label = zone ? (texts.your_zone || "{zone}").replace("{zone}", zone) : texts.your_time || "";
    var labels = document.querySelectorAll("[data-time-zone]");
    for (var k = 0; k < labels.length; k++) if (label) labels[k].textContent = label;
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})(window);
