/* listlib search client: reads the static index in search/ (see listlib/search/).
 *
 * Plain JavaScript, no framework, no build step. The core (tokenizer, query parser,
 * index reader, scoring) mirrors listlib/search/{analysis,query,reader}.py step by
 * step so both give the same results; it runs in a browser and under node
 * (module.exports, with any fetch-like function). The page part runs only when the
 * search page's #search-app element exists.
 */
(function (root) {
  "use strict";

  // -- analysis.py ---------------------------------------------------------------
  var MAX_WORD = 40;
  var WORD_RE = /[\p{L}\p{M}\p{N}]+/gu;
  var CJK_RE = /[\u2E80-\u2FDF\u3005-\u3007\u3021-\u3029\u3038-\u303B\u3040-\u30FF\u31F0-\u31FF\u3400-\u4DBF\u4E00-\u9FFF\uF900-\uFAFF\u{20000}-\u{3134F}]+/gu;
  var ASCII_RE = /^[\x00-\x7f]*$/;

  function fold(text) {
    return text.normalize("NFKC").toLowerCase().replace(/\u00df/g, "ss").replace(/\u03c2/g, "\u03c3");
  }

  function plain(word, out) {
    if (Array.from(word).length <= MAX_WORD) out.push(word);
  }

  function words(text) {
    var out = [];
    var folded = fold(text);
    var m;
    WORD_RE.lastIndex = 0;
    while ((m = WORD_RE.exec(folded)) !== null) {
      var word = m[0];
      if (ASCII_RE.test(word)) {
        if (word.length <= MAX_WORD) out.push(word);
        continue;
      }
      var at = 0, c;
      CJK_RE.lastIndex = 0;
      while ((c = CJK_RE.exec(word)) !== null) {
        if (c.index > at) plain(word.slice(at, c.index), out);
        var chars = Array.from(c[0]);
        if (chars.length === 1) out.push(chars[0]);
        else for (var i = 0; i + 1 < chars.length; i++) out.push(chars[i] + chars[i + 1]);
        at = c.index + c[0].length;
      }
      if (at < word.length) plain(word.slice(at), out);
    }
    return out;
  }

  // -- query.py --------------------------------------------------------------------
  var ITEM_RE = /(-?)(?:([A-Za-z]+):)?(?:"([^"]*)"?|(\S+))/g;
  var DATE_RE = /^([0-9]{4})(?:-([0-9]{1,2})(?:-([0-9]{1,2}))?)?$/;
  var FIELDS = { from: "f:", subject: "s:", is: "c:" };
  var CLASS_FIELD = "c:"; // is:patch narrows the results; its word is not highlighted

  function dayOf(text) {
    var m = DATE_RE.exec(text);
    if (!m) return null;
    var y = +m[1], mo = m[2] ? +m[2] : 1, d = m[3] ? +m[3] : 1;
    if (y < 1 || mo < 1 || mo > 12 || d < 1) return null;
    var date = new Date(0);
    date.setUTCFullYear(y, mo - 1, d);
    if (date.getUTCMonth() !== mo - 1 || date.getUTCDate() !== d) return null;
    return Math.round(date.getTime() / 86400000);
  }

  function parseQuery(text) {
    var q = { must: [], mustNot: [], lists: [], after: null, before: null };
    var m;
    ITEM_RE.lastIndex = 0;
    while ((m = ITEM_RE.exec(text)) !== null) {
      var negate = m[1] === "-", name = (m[2] || "").toLowerCase(), quoted = m[3], bare = m[4];
      if (name && !(name in FIELDS) && name !== "list" && name !== "after" && name !== "before") {
        bare = m[2] + ":" + (quoted !== undefined ? quoted : bare);
        name = "";
        quoted = undefined;
      }
      var value = quoted !== undefined ? quoted : bare || "";
      if (name === "list") {
        if (value && !negate) q.lists.push(value.toLowerCase());
        continue;
      }
      if (name === "after" || name === "before") {
        var day = dayOf(value);
        if (day !== null) q[name] = day;
        continue;
      }
      var prefix = quoted === undefined && value.slice(-1) === "*";
      var toks = words(prefix ? value.slice(0, -1) : value);
      if (!toks.length) continue;
      var clause = { tokens: toks, field: FIELDS[name] || "", prefix: prefix && toks.length === 1 };
      (negate ? q.mustNot : q.must).push(clause);
    }
    return q;
  }

  // -- codec.py ----------------------------------------------------------------------
  function decodePostings(bytes) {
    var view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    var count = view.getUint32(0, true), at = 4, docs = [], impacts = [];
    while (docs.length < count) {
      var n = Math.min(count - docs.length, 128), width = view.getUint8(at), doc = view.getUint32(at + 1, true);
      at += 5;
      docs.push(doc);
      for (var i = 1; i < n; i++) {
        doc += width === 1 ? view.getUint8(at) : width === 2 ? view.getUint16(at, true) : view.getUint32(at, true);
        at += width;
        docs.push(doc);
      }
      for (var j = 0; j < n; j++) impacts.push(bytes[at + j]);
      at += n;
    }
    return { docs: docs, impacts: impacts };
  }

  function decodePositions(bytes, count) {
    var view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), at = 0, out = [];
    for (var i = 0; i < count; i++) {
      var n = view.getUint16(at, true), list = [];
      for (var k = 1; k <= n; k++) list.push(view.getUint16(at + 2 * k, true));
      out.push(list);
      at += 2 * (n + 1);
    }
    return out;
  }

  // -- reader.py -----------------------------------------------------------------------
  var PREFIX_EXPANSIONS = 50, RECENCY = 0.02;

  function bisectRight(list, key) {
    var lo = 0, hi = list.length;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (key < list[mid]) hi = mid; else lo = mid + 1;
    }
    return lo;
  }

  function round6(x) { return Math.floor(x * 1e6 + 0.5) / 1e6; }

  function Index(base, fetcher) {
    this.base = base.replace(/\/?$/, "/");
    this.fetcher = fetcher || root.fetch.bind(root);
    this.files = {};
    this.fetched = 0;
  }

  // -- script twins (codec.py's script_twin): the index read from file:// ------------------
  // A page opened from disk may not fetch files, but may load scripts: each index file
  // has a twin "<file>.js" that calls ListlibSearch.put(name, data). A classic script's
  // load event follows its execution at once, so the last put is that script's.
  var pending = null;

  function put(name, value) { pending = { name: name, value: value }; }

  function fromBase64(text) {
    var raw = root.atob(text), out = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
    return out;
  }

  // What fetch would have answered for url, from the put of its twin (or none: missing).
  function twinResponse(url, got) {
    var name = url.slice(url.lastIndexOf("/") + 1);
    if (!got || got.name !== name) return { ok: false, status: 404 };
    if (typeof got.value === "string") {
      var data = fromBase64(got.value);
      return { ok: true, status: 200, size: got.value.length, arrayBuffer: function () { return Promise.resolve(data.buffer); } };
    }
    return { ok: true, status: 200, size: JSON.stringify(got.value).length, value: got.value };
  }

  function scriptFetcher(doc) {
    return function (url, init) {
      return new Promise(function (resolve) {
        var script = doc.createElement("script");
        function done(got) { script.remove(); resolve(twinResponse(url, got)); }
        script.onload = function () { var got = pending; pending = null; done(got); };
        script.onerror = function () { done(null); };
        // After a segment went missing, the manifest's twin is loaded past the cache.
        script.src = url + ".js" + (init && init.cache === "no-cache" ? "?" + Date.now() : "");
        doc.head.appendChild(script);
      });
    };
  }

  Index.prototype.bytes = function (path) {
    var self = this, fresh = this.fresh;
    if (!this.files[path]) {
      // After a segment went missing, the manifest is asked for past the browser's cache.
      var request = fresh ? this.fetcher(this.base + path, { cache: "no-cache" }) : this.fetcher(this.base + path);
      this.files[path] = Promise.resolve(request).then(function (response) {
        if (!response.ok) {
          var error = new Error("cannot load " + path + " (" + response.status + ")");
          error.code = "load";
          error.file = path;
          error.status = response.status;
          error.segmentGone = response.status === 404 && path.slice(0, 4) === "seg/";
          throw error;
        }
        if (response.value !== undefined) {  // a JSON file's twin: its value, parsed already
          self.fetched += response.size;
          return response.value;
        }
        return Promise.resolve(response.arrayBuffer()).then(function (buffer) {
          self.fetched += response.size !== undefined ? response.size : buffer.byteLength;
          return new Uint8Array(buffer);
        });
      });
    }
    return this.files[path];
  };

  Index.prototype.json = function (path) {
    return this.bytes(path).then(function (b) {
      return b instanceof Uint8Array ? JSON.parse(new TextDecoder().decode(b)) : b;
    });
  };

  function Segment(index, info, meta) {
    this.index = index;
    this.id = info.id;
    this.deleted = new Set(info.deleted || []);
    this.meta = meta;
    this.entries = new Map();
    this.postings = new Map();
  }

  Segment.prototype.path = function (name) { return "seg/" + this.id + "/" + name; };

  // A purged segment's files, as its revision names them (segment.py's meta_name,
  // dict_name, docs_name): a file rewritten by a purge has a new name, never new bytes.
  function metaName(rev) { return rev ? "meta-" + rev + ".json" : "meta.json"; }

  Segment.prototype.dictName = function (k) {
    var rev = this.meta.trev ? this.meta.trev[k] : 0;
    return rev ? "t" + k + "-" + rev + ".json" : "t" + k + ".json";
  };

  Segment.prototype.docsName = function (k) {
    var rev = (this.meta.drev || {})[String(k)] || 0;
    return rev ? "d" + k + "-" + rev + ".json" : "d" + k + ".json";
  };

  Segment.prototype.entry = function (term) {
    var self = this;
    if (this.entries.has(term)) return Promise.resolve(this.entries.get(term));
    var number = bisectRight(this.meta.dict, term) - 1;
    if (number < 0) { this.entries.set(term, null); return Promise.resolve(null); }
    return this.index.json(this.path(this.dictName(number))).then(function (chunk) {
      var found = null;
      for (var i = 0; i < chunk.length; i++) if (chunk[i][0] === term) { found = chunk[i]; break; }
      self.entries.set(term, found);
      return found;
    });
  };

  Segment.prototype.expand = async function (prefix) {
    var dict = this.meta.dict, found = [];
    for (var number = Math.max(0, bisectRight(dict, prefix) - 1); number < dict.length; number++) {
      if (number > 0 && dict[number] > prefix && !dict[number].startsWith(prefix)) break;
      var chunk = await this.index.json(this.path(this.dictName(number)));
      for (var i = 0; i < chunk.length; i++) if (chunk[i][0].startsWith(prefix)) found.push(chunk[i]);
    }
    return found;
  };

  Segment.prototype.docs = async function (entry) {
    if (!this.postings.has(entry[0])) {
      var data = await this.index.bytes(this.path("p" + entry[2] + ".bin"));
      this.postings.set(entry[0], decodePostings(data.subarray(entry[3], entry[3] + entry[4])));
    }
    return this.postings.get(entry[0]);
  };

  Segment.prototype.liveDf = async function (entry) {
    if (!this.deleted.size) return entry[1];
    var p = await this.docs(entry), n = 0;
    for (var i = 0; i < p.docs.length; i++) if (!this.deleted.has(p.docs[i])) n++;
    return n;
  };

  Segment.prototype.docDays = function () {
    if (!this.dayList) {
      var runs = this.meta.day_runs, day = 0, out = [];
      for (var at = 0; at < runs.length; at += 2) {
        day += runs[at + 1];
        for (var k = 0; k < runs[at]; k++) out.push(day);
      }
      this.dayList = out;
    }
    return this.dayList;
  };

  Segment.prototype.positions = async function (entry) {
    var data = await this.index.bytes(this.path("q" + entry[5] + ".bin"));
    return decodePositions(data.subarray(entry[6], entry[6] + entry[7]), entry[1]);
  };

  Segment.prototype.row = async function (number) {
    var size = this.meta.docs_chunk;
    var chunk = await this.index.json(this.path(this.docsName(Math.floor(number / size))));
    return chunk[number % size];
  };

  function clauseTerms(clause) {
    return clause.tokens.map(function (t) { return clause.field + t; });
  }

  function termKey(clause) { return (clause.prefix ? "*" : "") + clause.field + clause.tokens.join(" "); }

  // reader.py's search: a segment file missing means the index was updated since the
  // manifest was read (a take-down deletes the old copy of a purged segment at once):
  // run the query again, once, from a manifest read afresh.
  Index.prototype.search = async function (text, options) {
    try {
      return await this.searchOnce(text, options);
    } catch (error) {
      if (!error.segmentGone) throw error;
    }
    this.files = {};
    this.fresh = true;
    try {
      return await this.searchOnce(text, options);
    } catch (error) {
      if (error.segmentGone) {
        error.message += "; the search index changed twice while it was read, try again";
        error.code = "changed";
      }
      throw error;
    }
  };

  Index.prototype.searchOnce = async function (text, options) {
    options = options || {};
    var offset = options.offset || 0, limit = options.limit || 10;
    var query = parseQuery(text);
    if (options.lists) query.lists = query.lists.concat(options.lists);
    var manifest = await this.json("manifest.json");
    if (manifest.format !== 4) {
      var wrong = new Error("search index format " + manifest.format + " is not 4");
      wrong.code = "format";
      throw wrong;
    }
    var self = this;
    var metas = await Promise.all(manifest.segments.map(function (info) {
      return self.json("seg/" + info.id + "/" + metaName(info.rev || 0));
    }));
    var segments = manifest.segments.map(function (info, i) { return new Segment(self, info, metas[i]); });
    var table = manifest.impacts, totalDocs = Math.max(1, manifest.live);
    var all = query.must.concat(query.mustNot), expansions = new Map();
    for (var clause of all) {
      if (!clause.prefix) continue;
      var term = clauseTerms(clause)[0], dfs = new Map();
      for (var segment of segments) {
        for (var entry of await segment.expand(term)) {
          segment.entries.set(entry[0], entry);
          dfs.set(entry[0], (dfs.get(entry[0]) || 0) + await segment.liveDf(entry));
        }
      }
      var best = Array.from(dfs.keys()).sort(function (a, b) {
        return dfs.get(b) - dfs.get(a) || (a < b ? -1 : a > b ? 1 : 0);
      }).slice(0, PREFIX_EXPANSIONS);
      expansions.set(termKey(clause), best.sort(function (a, b) { return a < b ? -1 : a > b ? 1 : 0; }));
    }
    function termsOf(clause) {
      var found = expansions.get(termKey(clause));
      return found && found.length ? found : clauseTerms(clause);
    }
    var idf = new Map(), looked = new Set();
    for (clause of all) {
      var terms = termsOf(clause);
      if (clause.field && clause.tokens.length > 1) terms = terms.concat(clause.tokens);
      for (term of terms) {
        if (idf.has(term)) continue;
        var df = 0;
        for (segment of segments) {
          var e = await segment.entry(term);
          if (e) df += await segment.liveDf(e);
        }
        idf.set(term, Math.log(1 + (totalDocs - df + 0.5) / (df + 0.5)));
      }
    }
    for (clause of query.must) {
      if (clause.field === CLASS_FIELD) continue;
      for (term of termsOf(clause)) looked.add(clause.field ? term.slice(2) : term);
    }
    var lookedList = Array.from(looked).sort();
    if (!query.must.length) return { total: 0, hits: [], terms: lookedList };
    var low = manifest.min_day, high = manifest.max_day;
    var scored = [];
    for (var position = 0; position < segments.length; position++) {
      var hits = await segmentHits(segments[position], query, termsOf, idf, table);
      hits.forEach(function (value, number) {
        var recency = high > low ? (value[1] - low) / (high - low) : 0;
        scored.push([round6(value[0] * (1 + RECENCY * recency)), value[1], position, number]);
      });
    }
    scored.sort(function (a, b) { return b[0] - a[0] || b[1] - a[1]; });
    var page = await pageOf(segments, scored, offset, limit);
    return {
      total: scored.length,
      terms: lookedList,
      hits: page.map(function (h) {
        var r = h[1];
        return { call: r[0], message_id: r[1], list: r[2], url: r[3], subject: r[4], author: r[5],
          date: r[6], excerpt: r[7], score: h[0], thread: r[8] || "" };
      })
    };
  };

  // reader.py's _page: hits equal in score and day are ordered by date, then call number.
  async function pageOf(segments, scored, offset, limit) {
    var start = offset, end = Math.min(offset + limit, scored.length);
    if (start >= end) return [];
    function same(a, b) { return a[0] === b[0] && a[1] === b[1]; }
    while (start > 0 && same(scored[start - 1], scored[offset])) start--;
    while (end < scored.length && same(scored[end], scored[end - 1])) end++;
    var part = scored.slice(start, end);
    var rows = await Promise.all(part.map(function (h) { return segments[h[2]].row(h[3]); }));
    var window = part.map(function (h, i) { return [h[0], h[1], rows[i]]; });
    window.sort(function (a, b) {
      return b[0] - a[0] || b[1] - a[1] || b[2][6] - a[2][6] || (a[2][0] < b[2][0] ? 1 : a[2][0] > b[2][0] ? -1 : 0);
    });
    return window.slice(offset - start, offset - start + limit).map(function (h) { return [h[0], h[2]]; });
  }

  async function clauseDocs(segment, clause, terms, idf, table) {
    var found, i, term, entry, p, weight;
    if (clause.prefix) {
      found = new Map();
      for (term of terms) {
        entry = await segment.entry(term);
        if (!entry) continue;
        p = await segment.docs(entry);
        weight = idf.get(term);
        for (i = 0; i < p.docs.length; i++) {
          var value = weight * table[p.impacts[i]];
          if (value > (found.has(p.docs[i]) ? found.get(p.docs[i]) : -1)) found.set(p.docs[i], value);
        }
      }
      return found;
    }
    var result = null;
    for (term of terms) {
      entry = await segment.entry(term);
      if (!entry) return new Map();
      p = await segment.docs(entry);
      weight = idf.get(term);
      var next = new Map();
      for (i = 0; i < p.docs.length; i++) {
        if (result === null) next.set(p.docs[i], weight * table[p.impacts[i]]);
        else if (result.has(p.docs[i])) next.set(p.docs[i], result.get(p.docs[i]) + weight * table[p.impacts[i]]);
      }
      result = next;
      if (!result.size) return result;
    }
    if (clause.tokens.length > 1 && result.size) result = await phrase(segment, clause.tokens, result);
    return result;
  }

  async function phrase(segment, tokens, candidates) {
    var perToken = [];
    for (var token of tokens) {
      var entry = await segment.entry(token);
      if (!entry) return new Map();
      var p = await segment.docs(entry), positions = await segment.positions(entry), map = new Map();
      for (var i = 0; i < p.docs.length; i++) if (candidates.has(p.docs[i])) map.set(p.docs[i], new Set(positions[i]));
      perToken.push(map);
    }
    var kept = new Map();
    candidates.forEach(function (score, doc) {
      var firsts = perToken[0].get(doc) || new Set();
      for (var first of firsts) {
        var ok = true;
        for (var k = 1; k < tokens.length && ok; k++) {
          var set = perToken[k].get(doc);
          ok = !!set && set.has(first + k);
        }
        if (ok) { kept.set(doc, score); break; }
      }
    });
    return kept;
  }

  async function segmentHits(segment, query, termsOf, idf, table) {
    var scores = null, clause, doc;
    for (clause of query.must) {
      var found = await clauseDocs(segment, clause, termsOf(clause), idf, table);
      if (clause.field && clause.tokens.length > 1 && found.size) found = await phrase(segment, clause.tokens, found);
      if (scores === null) scores = found;
      else {
        var next = new Map();
        scores.forEach(function (s, d) { if (found.has(d)) next.set(d, s + found.get(d)); });
        scores = next;
      }
      if (!scores.size) return scores;
    }
    for (clause of query.mustNot) {
      (await clauseDocs(segment, clause, termsOf(clause), idf, table)).forEach(function (_s, d) { scores.delete(d); });
    }
    segment.deleted.forEach(function (d) { scores.delete(d); });
    if (query.lists.length) {
      var ranges = query.lists.map(function (slug) { return segment.meta.lists[slug]; }).filter(Boolean);
      scores.forEach(function (_s, d) {
        if (!ranges.some(function (r) { return r[0] <= d && d < r[1]; })) scores.delete(d);
      });
    }
    var days = segment.docDays();
    if ((query.after !== null || query.before !== null) && scores.size) {
      var after = query.after !== null ? query.after : -1, before = query.before !== null ? query.before : 1 << 30;
      scores.forEach(function (_s, d) { if (!(after <= days[d] && days[d] < before)) scores.delete(d); });
    }
    var out = new Map();
    scores.forEach(function (s, d) { out.set(d, [s, days[d]]); });
    return out;
  }

  // -- the page's words ------------------------------------------------------------------
  // The page carries its words (the "js.search" strings of the site's translation table)
  // in <script type="application/json" id="search-texts">: this file holds none.
  var PLURAL_RULES = {  // translation.py's PLURAL_RULES: a count's CLDR category
    "one-other": function (n) { return n === 1 ? "one" : "other"; },
    "zero-one-other": function (n) { return n === 0 || n === 1 ? "one" : "other"; },
    "east-slavic": function (n) {
      if (n % 10 === 1 && n % 100 !== 11) return "one";
      return n % 10 >= 2 && n % 10 <= 4 && !(n % 100 >= 12 && n % 100 <= 14) ? "few" : "many";
    },
    "polish": function (n) {
      if (n === 1) return "one";
      return n % 10 >= 2 && n % 10 <= 4 && !(n % 100 >= 12 && n % 100 <= 14) ? "few" : "many";
    },
    "czech": function (n) { return n === 1 ? "one" : n >= 2 && n <= 4 ? "few" : "other"; },
    "other": function () { return "other"; }
  };

  // say(key, values): the text of key, its {name}s filled; a plural entry's form for values.n.
  function sayer(data) {
    var texts = (data && data.texts) || {}, rule = PLURAL_RULES[data && data.plural] || PLURAL_RULES["one-other"];
    return function (key, values) {
      var entry = texts[key];
      if (entry === undefined) return key;
      if (typeof entry !== "string") entry = entry[rule(values.n)] || entry.other;
      return entry.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, function (whole, name) {
        return values && Object.prototype.hasOwnProperty.call(values, name) ? String(values[name]) : whole;
      });
    };
  }

  function pageTexts(doc, id) {
    var element = doc.getElementById(id);
    try { return element ? JSON.parse(element.textContent) : null; } catch (e) { return null; }
  }

  // reader.py's group_by_thread: a page of hits grouped by thread, each group where its best
  // hit ranked, its hits oldest first; the subject is its earliest hit's without reply prefixes.
  var REPLY_PREFIX_RE = /^(?:\s*(?:re|fwd?|aw|sv|vs|antw)\s*(?:\[\d+\])?\s*[:\uff1a]\s*)+/i;

  function groupByThread(hits) {
    var groups = new Map();
    hits.forEach(function (hit) {
      var key = hit.thread || "=" + hit.call;
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(hit);
    });
    return Array.from(groups.values()).map(function (members) {
      members.sort(function (a, b) { return a.date - b.date || (a.call < b.call ? -1 : a.call > b.call ? 1 : 0); });
      return { subject: (members[0].subject || "").replace(REPLY_PREFIX_RE, ""), first: members[0], hits: members };
    });
  }

  // -- the search page -------------------------------------------------------------------
  function highlight(text, terms, into) {
    var doc = into.ownerDocument, at = 0, m, re = /[\p{L}\p{M}\p{N}]+/gu;
    while ((m = re.exec(text)) !== null) {
      var hit = words(m[0]).some(function (t) {
        return terms.some(function (term) { return t === term || (term.length > 1 && t.startsWith(term)); });
      });
      if (!hit) continue;
      into.appendChild(doc.createTextNode(text.slice(at, m.index)));
      var mark = doc.createElement("mark");
      mark.textContent = m[0];
      into.appendChild(mark);
      at = m.index + m[0].length;
    }
    into.appendChild(doc.createTextNode(text.slice(at)));
  }

  function startPage(doc) {
    var app = doc.getElementById("search-app");
    if (!app) return;
    var form = doc.getElementById("search-form"), input = form.querySelector("input[name=q]");
    var status = doc.getElementById("search-status"), list = doc.getElementById("search-results");
    var pager = doc.getElementById("search-pager"), siteRoot = app.getAttribute("data-root") || "../";
    var names = {}, perPage = 20, say = sayer(pageTexts(doc, "search-texts"));
    var fromDisk = root.location.protocol === "file:";
    var index = new Index(app.getAttribute("data-index") || "./", fromDisk ? scriptFetcher(doc) : null);
    var params = new URLSearchParams(root.location.search);
    var text = params.get("q") || "", pageNo = Math.max(1, parseInt(params.get("page") || "1", 10) || 1);
    var only = params.get("list") || "", hidden = form.querySelector("input[name=list]");
    input.value = text;
    if (hidden) {
      if (only) hidden.value = only;
      else hidden.remove();
    }
    app.hidden = false;
    var scope = doc.getElementById("search-scope");
    function showScope() {  // a search of one list says so, and links to the same search of all
      if (!only || !scope) return;
      scope.textContent = say("scope", { list: names[only] || only }) + " ";
      var all = doc.createElement("a");
      all.href = "?q=" + encodeURIComponent(text);
      all.textContent = say("all_lists");
      scope.appendChild(all);
      scope.hidden = false;
    }
    showScope();
    if (!text.trim()) return;
    var parsed = parseQuery(text);
    if (!parsed.must.length && parsed.mustNot.length) {
      status.textContent = say("only_negative");
      return;
    }
    status.textContent = say("searching");
    status.setAttribute("aria-busy", "true");
    index.json("manifest.json").then(function (m) { names = m.lists || {}; showScope(); return index.search(text, {
      offset: (pageNo - 1) * perPage, limit: perPage, lists: only ? [only] : [] }); }).then(function (results) {
      list.textContent = "";
      status.removeAttribute("aria-busy");
      var first = (pageNo - 1) * perPage + 1;
      var count = say("count", { n: results.total });
      status.textContent = !results.total ? say("none") : results.total <= perPage ? count :
        say("shown", { count: count, first: first, last: first + results.hits.length - 1 });
      // One item a thread: its subject (a heading, linking its first hit), then its hits.
      groupByThread(results.hits).forEach(function (group) {
        var item = doc.createElement("li"), heading = doc.createElement("h2"), link = doc.createElement("a");
        item.className = "thread-hits";
        link.href = siteRoot + group.first.url;
        link.className = "thread-link";
        highlight(group.subject || say("no_subject"), results.terms, link);
        heading.appendChild(link);
        item.appendChild(heading);
        var inner = doc.createElement("ol");
        inner.className = "thread-messages";
        group.hits.forEach(function (hit) {
          var li = doc.createElement("li"), a = doc.createElement("a"), meta = doc.createElement("span");
          a.href = siteRoot + hit.url;
          a.className = "hit";
          highlight(hit.author || say("unknown_sender"), results.terms, a);
          li.appendChild(a);
          meta.className = "meta";
          var time = doc.createElement("time"), when = new Date(hit.date * 1000);
          time.dateTime = when.toISOString();
          time.setAttribute("data-utc", "");
          time.textContent = when.toISOString().slice(0, 10);
          meta.appendChild(doc.createTextNode(" \u00b7 "));
          meta.appendChild(time);
          meta.appendChild(doc.createTextNode(" \u00b7 " + (names[hit.list] || hit.list)));
          li.appendChild(meta);
          var own = (hit.subject || "").replace(REPLY_PREFIX_RE, "");
          if (own && own !== group.subject) {
            var changed = doc.createElement("span");
            changed.className = "changed-subject";
            highlight(hit.subject, results.terms, changed);
            li.appendChild(doc.createTextNode(" "));
            li.appendChild(changed);
          }
          if (hit.excerpt) {
            var p = doc.createElement("p");
            p.className = "excerpt";
            highlight(hit.excerpt, results.terms, p);
            li.appendChild(p);
          }
          inner.appendChild(li);
        });
        item.appendChild(inner);
        list.appendChild(item);
      });
      if (root.ListlibTimes) root.ListlibTimes.show(list);  // dates in the reader's format (times.js)
      pager.textContent = "";
      function link(label, number) {
        var a = doc.createElement("a");
        a.href = "?q=" + encodeURIComponent(text) + (only ? "&list=" + encodeURIComponent(only) : "") + "&page=" + number;
        a.textContent = label;
        pager.appendChild(a);
      }
      if (pageNo > 1) link(say("previous"), pageNo - 1);
      if (pageNo * perPage < results.total) link(say("next"), pageNo + 1);
    }).catch(function (error) {
      // The index's errors carry a code the page words in its language (their message is
      // for developers and node); any other error is shown as it is.
      var detail = error.code === "load" ? say("failed_load", { file: error.file, status: error.status })
        : error.code === "format" ? say("failed_format") : error.code === "changed" ? say("failed_changed")
        : error.message;
      status.textContent = say("failed", { detail: detail }) + (fromDisk ? " " + say("from_disk") : "");
      status.removeAttribute("aria-busy");
    });
  }

  var api = { fold: fold, words: words, parseQuery: parseQuery, Index: Index, decodePostings: decodePostings,
    put: put, twinResponse: twinResponse, sayer: sayer, PLURAL_RULES: PLURAL_RULES, groupByThread: groupByThread };
  if (typeof module !== "undefined" && module.exports) module.exports = api;
  else root.ListlibSearch = api;
  if (typeof document !== "undefined") {
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", function () { startPage(document); });
    else startPage(document);
  }
})(typeof globalThis !== "undefined" ? globalThis : this);
