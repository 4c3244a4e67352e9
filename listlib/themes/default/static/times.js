/* listlib: shows a page's times in the reader's time zone.
 *
 * Pages are static and correct without this script: every time is UTC, in
 * <time datetime="...Z" data-utc>, and the page says "UTC" in its [data-time-zone]
 * element. This rewrites those times in the browser's own zone, with its offset, and
 * names the zone; a time's title keeps its UTC text. Order is kept (one zone a page).
 */
(function () {
  "use strict";
  var times = document.querySelectorAll("time[data-utc]");
  if (!times.length) return;

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  function offset(date) {
    var minutes = -date.getTimezoneOffset(), sign = minutes < 0 ? "-" : "+";
    minutes = Math.abs(minutes);
    return sign + pad(Math.floor(minutes / 60)) + pad(minutes % 60);
  }

  for (var i = 0; i < times.length; i++) {
    var time = times[i], date = new Date(time.getAttribute("datetime"));
    if (isNaN(date.getTime())) continue;
    time.title = time.textContent;
    time.textContent = date.getFullYear() + "-" + pad(date.getMonth() + 1) + "-" + pad(date.getDate()) + " " +
      pad(date.getHours()) + ":" + pad(date.getMinutes()) + " " + offset(date);
  }
  var zone = "";
  try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { zone = ""; }
  // The page's words: the "js.times" strings of the site's translation table, which the
  // page carries in <script type="application/json" id="times-texts">.
  var texts = {}, element = document.getElementById("times-texts");
  try { texts = element ? JSON.parse(element.textContent).texts || {} : {}; } catch (e) { texts = {}; }
  var label = zone ? (texts.your_zone || "{zone}").replace("{zone}", zone) : texts.your_time || "";
  var labels = document.querySelectorAll("[data-time-zone]");
  for (var k = 0; k < labels.length; k++) if (label) labels[k].textContent = label;
})();
