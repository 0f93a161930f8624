// The corpus's passages in SQLite FTS5, kept between runs and brought up to date by each run.
import { mkdirSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { passagesOf } from './corpus.mjs';

const SCHEMA_VERSION = 3;
const SCHEMA = `
  CREATE TABLE files (
    id       INTEGER PRIMARY KEY,
    path     TEXT NOT NULL UNIQUE,   -- relative to the corpus
    mtime_ns TEXT NOT NULL,
    size     INTEGER NOT NULL
  );
  CREATE TABLE chunks (
    id         INTEGER PRIMARY KEY,  -- = passages.rowid
    file_id    INTEGER NOT NULL REFERENCES files (id),
    line_start INTEGER NOT NULL,
    line_end   INTEGER NOT NULL,
    heading    TEXT
  );
  CREATE INDEX chunks_by_file ON chunks (file_id);
  -- porter folds "upgrading" onto "upgrade"; remove_diacritics 2 lets "cafe" find "café". The file's path is a
  -- column too: a question naming a package or a page ("the debug module") finds its file. "parts" holds the words
  -- of the body's camelCase identifiers ("keepAliveTimeout": keep alive timeout), which the tokenizer keeps whole.
  CREATE VIRTUAL TABLE passages USING fts5 (body, heading, path, parts, tokenize = 'porter unicode61 remove_diacritics 2');
`;

function openOnce(path) {
  const db = new Database(path, { timeout: 10_000 });
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  const version = db.pragma('user_version', { simple: true });
  if (version === 0) {
    db.transaction(() => {
      db.exec(SCHEMA);
      db.pragma(`user_version = ${SCHEMA_VERSION}`);
    }).immediate();
  } else if (version !== SCHEMA_VERSION) {
    db.close();
    throw Object.assign(new Error(`index schema ${version}`), { code: 'SQLITE_NOTADB' });
  }
  return db;
}

/** The index is a cache of the corpus: one that is damaged or of another schema is thrown away and rebuilt. */
export function openIndex(dir, name) {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, name);
  try {
    return openOnce(path);
  } catch (error) {
    if (!/^SQLITE_(?:NOTADB|CORRUPT)/.test(error.code ?? '')) throw error;
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
    return openOnce(path);
  }
}

/** A word written in camelCase or PascalCase ("keepAliveTimeout", "BufferList", "parseHTMLString"). */
const CAMEL_WORD = /\b[A-Za-z][a-z0-9]*(?:[A-Z]+[a-z0-9]*)+\b/g;
const CAMEL_BOUNDARY = /(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])/;

/** The words of each camelCase identifier of the text, in order ("new Agent({ keepAliveTimeout })": keep alive timeout). */
export function identifierParts(text) {
  return [...text.matchAll(CAMEL_WORD)].flatMap((match) => (CAMEL_BOUNDARY.test(match[0]) ? match[0].split(CAMEL_BOUNDARY) : []));
}

function looksBinary(buffer) {
  return buffer.subarray(0, 8000).includes(0);
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });
const LEGACY = new TextDecoder('windows-1252');

/** UTF-8, or, for a file that is not (an older text file), Windows-1252, whose every byte is a character. */
function decodeText(buffer) {
  try {
    return UTF8.decode(buffer);
  } catch {
    return LEGACY.decode(buffer);
  }
}

/**
 * Brings the index in line with the listed files: new and changed ones (by mtime and size) are read again,
 * files gone from the corpus are dropped (only when the listing is complete). Each file is replaced in a
 * transaction of its own, so a run stopped at its deadline, or two runs at once, leave a consistent index.
 * Stops starting new files at `deadline` (a Date.now() value) and says so.
 */
export async function refreshIndex(db, listing, deadline) {
  const known = new Map(db.prepare('SELECT id, path, mtime_ns, size FROM files').all().map((row) => [row.path, row]));
  const dropFile = db.transaction((path) => {
    const row = db.prepare('SELECT id FROM files WHERE path = ?').get(path);
    if (!row) return;
    db.prepare('DELETE FROM passages WHERE rowid IN (SELECT id FROM chunks WHERE file_id = ?)').run(row.id);
    db.prepare('DELETE FROM chunks WHERE file_id = ?').run(row.id);
    db.prepare('DELETE FROM files WHERE id = ?').run(row.id);
  });
  const putFile = db.transaction((file, passages) => {
    dropFile(file.rel);
    const fileId = db.prepare('INSERT INTO files (path, mtime_ns, size) VALUES (?, ?, ?)').run(file.rel, file.mtimeNs, file.size).lastInsertRowid;
    const chunk = db.prepare('INSERT INTO chunks (file_id, line_start, line_end, heading) VALUES (?, ?, ?, ?)');
    const passage = db.prepare('INSERT INTO passages (rowid, body, heading, path, parts) VALUES (?, ?, ?, ?, ?)');
    const pathWords = file.rel.replace(/\.[^./]+$/, '').replace(/[^\p{L}\p{N}]+/gu, ' ');
    for (const p of passages) {
      const id = chunk.run(fileId, p.line_start, p.line_end, p.heading).lastInsertRowid;
      passage.run(id, p.body, p.heading ?? '', pathWords, identifierParts(p.body).join(' '));
    }
  });

  const counts = { added: 0, updated: 0, removed: 0, unchanged: 0, skipped: listing.skipped };
  let complete = !listing.truncated;
  for (const file of listing.files) {
    const before = known.get(file.rel);
    known.delete(file.rel);
    if (before && before.mtime_ns === file.mtimeNs && before.size === file.size) {
      counts.unchanged++;
      continue;
    }
    if (Date.now() >= deadline) {
      complete = false;
      break;
    }
    const buffer = await readFile(file.path).catch(() => null);
    if (buffer === null || looksBinary(buffer)) {
      counts.skipped++;
      if (before) known.set(file.rel, before); // unreadable now: dropped below like a removed file
      continue;
    }
    putFile.immediate(file, passagesOf(decodeText(buffer)));
    counts[before ? 'updated' : 'added']++;
  }
  if (complete) {
    for (const path of known.keys()) {
      dropFile.immediate(path);
      counts.removed++;
    }
  }
  const totals = db.prepare('SELECT (SELECT count(*) FROM files) AS files, (SELECT count(*) FROM chunks) AS passages').get();
  return { ...counts, ...totals, complete };
}

const STOPWORDS = new Set(
  ('a an and are as at be by can do does for from has have how i if in into is it its of on or our should so ' +
    'than that the their them then there these this to was we were what when where which who why will with you your ' +
    'me my any all about after before get use using way make there here some one two').split(' '),
);
const MAX_TERMS = 32;

/**
 * The question's words worth searching: lower case, without common words (unless nothing else is left), at most
 * 32. Empty when the question has no word at all.
 */
export function questionTerms(question) {
  // "How long", "how many": the word after "how" asks for a measure, it is not what the question is about.
  const asked = question.normalize('NFKC').toLowerCase().replace(/\bhow\s+(?:long|much|many|often|far|big|large|old|soon)\b/g, ' ');
  const words = [...new Set(asked.match(/[\p{L}\p{N}]+/gu) ?? [])];
  const meaningful = words.filter((word) => !STOPWORDS.has(word));
  return (meaningful.length > 0 ? meaningful : words).slice(0, MAX_TERMS);
}

/**
 * What the search looks for: the question's terms and the words of its camelCase ones ("BufferList": buffer, list),
 * which the index holds in `parts`. The evidence weighs the question's own terms only (evidence.mjs).
 */
export function searchTerms(question, terms) {
  const parts = identifierParts(question.normalize('NFKC')).map((part) => part.toLowerCase());
  return [...new Set([...terms, ...parts])].slice(0, MAX_TERMS);
}

/**
 * The terms as an FTS5 query that can only mean "any of these words": each word is a quoted string, so quotes,
 * `*`, `NEAR(`, `AND`/`OR`/`NOT`, column filters and parentheses in the question are plain text.
 */
const anyOf = (terms) => terms.map((term) => `"${term}"`).join(' OR ');

/**
 * The text as written, without the identifiers' words: how rare a word is is counted there, as before `parts`
 * existed (an identifier's words are not words of the corpus's prose); whether a file holds it counts them.
 */
const written = (term) => `{body heading path} : "${term}"`;

/** In how many passages each term occurs (as the index tokenizes it: "upgrading" counts for "upgrade"), and of how many. */
export function termFrequencies(db, terms) {
  const count = db.prepare('SELECT count(*) AS n FROM passages WHERE passages MATCH ?');
  const total = db.prepare('SELECT count(*) AS n FROM chunks').get().n;
  return { total, df: new Map(terms.map((term) => [term, count.get(written(term)).n])) };
}

/** Which of `terms` occur in the file `path` (in any passage's body, heading, path or identifiers' words). */
export function termsInFile(db, path, terms) {
  const has = db.prepare('SELECT 1 FROM passages JOIN chunks ON chunks.id = passages.rowid JOIN files ON files.id = chunks.file_id WHERE passages MATCH ? AND files.path = ? LIMIT 1');
  return terms.filter((term) => has.get(`"${term}"`, path) !== undefined);
}

/** Passages a file may place among the best, so that the best five name more than one source. */
const PER_FILE = 2;
/** Candidates re-ranked: the best passages by BM25, before the file's share of the question is weighed in. */
const CANDIDATES = 60;
/** bm25's weight of a passage's heading, its file's path and its identifiers' words beside its body (1): set on the eval's training questions. */
const COLUMN_WEIGHTS = { heading: 0.5, path: 8.0, parts: 1.0 };

/**
 * The best passages, best first, at most two of a file. A passage scores its BM25 (SQLite's bm25(), lower is
 * better, here as a share of the best candidate's) plus `fileWeight` times the share of the question's weight its
 * whole file holds (`fileShare(path)`): an answer sits in a file about the question, not in a stray paragraph of
 * another that repeats its words.
 */
export function searchPassages(db, terms, limit, { fileShare = null, fileWeight = 1, weights = COLUMN_WEIGHTS } = {}) {
  const rows = db
    .prepare(
      `SELECT passages.rowid AS id, files.path AS file, chunks.line_start, chunks.line_end, chunks.heading, bm25(passages, 1.0, ${weights.heading}, ${weights.path}, ${weights.parts}) AS bm25, passages.body AS text
         FROM passages JOIN chunks ON chunks.id = passages.rowid JOIN files ON files.id = chunks.file_id
        WHERE passages MATCH ? ORDER BY bm25 LIMIT ?`,
    )
    .all(anyOf(terms), CANDIDATES);
  if (rows.length === 0) return [];
  const best = rows[0].bm25;
  const shares = new Map();
  const scored = rows.map((row) => {
    if (fileShare && !shares.has(row.file)) shares.set(row.file, fileShare(row.file));
    return { ...row, score: row.bm25 / best + (fileShare ? fileWeight * shares.get(row.file) : 0) };
  });
  scored.sort((a, b) => b.score - a.score);
  const perFile = new Map();
  const chosen = [];
  for (const row of scored) {
    const seen = perFile.get(row.file) ?? 0;
    if (seen >= PER_FILE) continue;
    perFile.set(row.file, seen + 1);
    chosen.push(row);
    if (chosen.length === limit) break;
  }
  return chosen;
}
