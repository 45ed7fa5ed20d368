// The independent reading of the sitemap corpus: every body in the
// directory named by the first argument, read with npm `sitemap` (its own
// XML parsers and text-sitemap reader) and the WHATWG URL parser built into
// Node, written to stdout as one JSON object:
//
//   {"<file>": {"kind": "urlset" | "index" | "text" | "none",
//               "urls": ["<href>", ...],   // in document order
//               "error": "<why reading stopped>" | ""}}
//
// The library reads a body it is handed as a URL set or as an index; like a
// crawler using it, this chooses by the body itself: a body whose first
// character (after a byte order mark and white space) is not "<" is a text
// sitemap, else the root element's local name picks the parser (sax, the
// library's own XML parser, reads it), and any other root is no sitemap. A
// gzip-compressed body is decompressed first, as an HTTP client would
// (a stream cut off midway gives what came before the cut).
// Every URL the library yields is kept when Node's URL parser reads it, on
// its own (no base), as an http: or https: URL; its href is what is
// written.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');
const { Readable } = require('node:stream');
const sax = require('sax');
const {
  XMLToSitemapItemStream,
  XMLToSitemapIndexStream,
  lineSeparatedURLsToSitemapOptions,
  validateURL,
} = require('sitemap');

// kindOf tells a text sitemap from XML, and a URL set from an index.
function kindOf(text) {
  const start = text.replace(/^\uFEFF/, '').trimStart();
  if (start === '') return 'text';
  if (start[0] !== '<') return 'text';
  let root = '';
  const p = sax.parser(true, { xmlns: true });
  p.onopentag = (tag) => {
    if (root === '') root = tag.local;
  };
  try {
    p.write(text.slice(0, 1 << 20)); // the root is near the start
  } catch {
    // sax stops at the first fault: a root found before it still counts
  }
  if (root === 'urlset') return 'urlset';
  if (root === 'sitemapindex') return 'index';
  return 'none';
}

// collect reads a library stream's items to its end or its first error:
// the URLs they name (urlOf gives "" for none), and the error.
function collect(stream, urlOf) {
  return new Promise((resolve) => {
    const urls = [];
    let done = false;
    const finish = (error) => {
      if (!done) {
        done = true;
        resolve({ urls, error });
      }
    };
    stream.on('data', (item) => {
      const u = urlOf(item);
      if (u) urls.push(u);
    });
    stream.on('end', () => finish(''));
    stream.on('error', (err) => finish(String(err && err.message ? err.message : err)));
  });
}

// lineURL is a text sitemap's line when the library's own URL check
// (validateURL: http(s), at most 2,048 characters, parseable) takes it.
function lineURL(line) {
  const s = String(line).trim();
  try {
    validateURL(s, 'url');
    return s;
  } catch {
    return '';
  }
}

function httpHref(s) {
  try {
    const u = new URL(s);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : '';
  } catch {
    return '';
  }
}

async function read(file) {
  let body = fs.readFileSync(file);
  if (body.length >= 2 && body[0] === 0x1f && body[1] === 0x8b) {
    try {
      // What a cut-off stream gave before it ended counts, as it does
      // for a client reading the response as it arrives.
      body = zlib.gunzipSync(body, { finishFlush: zlib.constants.Z_SYNC_FLUSH });
    } catch (err) {
      return { kind: 'none', urls: [], error: 'gzip: ' + err.message };
    }
  }
  const kind = kindOf(body.toString('utf8'));
  const source = () => Readable.from([body]);
  let r;
  switch (kind) {
    case 'urlset':
      r = await collect(source().pipe(new XMLToSitemapItemStream({ logger: false })), (item) => item.url);
      break;
    case 'index':
      r = await collect(source().pipe(new XMLToSitemapIndexStream({ logger: false })), (item) => item.url);
      break;
    case 'text':
      r = await collect(lineSeparatedURLsToSitemapOptions(source(), { isJSON: false }), lineURL);
      break;
    default:
      r = { urls: [], error: '' };
  }
  return { kind, urls: r.urls.map(httpHref).filter((h) => h !== ''), error: r.error };
}

async function main() {
  const dir = process.argv[2];
  const out = {};
  for (const name of fs.readdirSync(dir).sort()) {
    out[name] = await read(path.join(dir, name));
  }
  process.stdout.write(JSON.stringify(out));
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack ? err.stack : err) + '\n');
  process.exit(1);
});
