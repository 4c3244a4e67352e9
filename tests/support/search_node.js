// Runs listlib's search client (static/search.js) under node over an index folder:
//   node search_node.js SEARCH_JS INDEX_DIR < queries.json  -> results as JSON lines
// queries.json: [{"q": ..., "offset": 0, "limit": 10, "lists": [...], "stale": FILE}, ...] or {"vectors": [texts]}.
// "stale": FILE is served as the first manifest.json (one a browser had cached before an update).
// "scripts": true reads each file's script twin (FILE.js) instead, as a page opened from file:// does.
"use strict";
const fs = require("fs");
const path = require("path");
const vm = require("vm");
const api = require(path.resolve(process.argv[2]));
const dir = process.argv[3];
const input = JSON.parse(fs.readFileSync(0, "utf8"));

function fetchFile(url) {
  try {
    const data = fs.readFileSync(url);
    return { ok: true, status: 200, arrayBuffer: async () => data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) };
  } catch (e) {
    return { ok: false, status: 404, arrayBuffer: async () => new ArrayBuffer(0) };
  }
}

// Runs the twin FILE.js with ListlibSearch.put and answers what search.js's script loader would.
function fetchTwin(url) {
  let code;
  try {
    code = fs.readFileSync(url + ".js", "utf8");
  } catch (e) {
    return api.twinResponse(url, null);
  }
  let got = null;
  vm.runInNewContext(code, { ListlibSearch: { put: (name, value) => { got = { name, value }; } } });
  return api.twinResponse(url, got);
}

function staleFirst(file) {
  let served = false;
  return (url, init) => {
    if (!served && url.endsWith("/manifest.json")) {
      served = true;
      return fetchFile(file);
    }
    return fetchFile(url, init);
  };
}

(async () => {
  if (input.vectors) {
    process.stdout.write(JSON.stringify(input.vectors.map((t) => api.words(t))) + "\n");
    return;
  }
  const out = [];
  for (const q of input) {
    const index = new api.Index(dir, q.stale ? staleFirst(q.stale) : q.scripts ? fetchTwin : fetchFile);
    const r = await index.search(q.q, { offset: q.offset || 0, limit: q.limit || 10, lists: q.lists });
    out.push({ total: r.total, hits: r.hits.map((h) => [h.call, h.score]), fetched: index.fetched });
  }
  process.stdout.write(JSON.stringify(out) + "\n");
})().catch((e) => { console.error(e.stack); process.exit(1); });
