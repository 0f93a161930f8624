// The corpus's passages in SQLite FTS5, kept between runs and brought up to date by each run.
import { mkdirSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { passagesOf } from './corpus.mjs';

const SCHEMA_VERSION = 1;
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
  -- porter folds "upgrading" onto "upgrade"; remove_diacritics 2 lets "cafe" find "café".
  CREATE VIRTUAL TABLE passages USING fts5 (body, heading, tokenize = 'porter unicode61 remove_diacritics 2');
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

function looksBinary(buffer) {
  return buffer.subarray(0, 8000).includes(0);
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
    const passage = db.prepare('INSERT INTO passages (rowid, body, heading) VALUES (?, ?, ?)');
    for (const p of passages) {
      const id = chunk.run(fileId, p.line_start, p.line_end, p.heading).lastInsertRowid;
      passage.run(id, p.body, p.heading ?? '');
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
    putFile.immediate(file, passagesOf(buffer.toString('utf8')));
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
    'than that the their them then there these this to was we were what when where which who why will with you your').split(' '),
);
const MAX_TERMS = 32;

/**
 * The question as an FTS5 query that can only mean "any of these words": each word is a quoted string, so
 * quotes, `*`, `NEAR(`, `AND`/`OR`/`NOT`, column filters and parentheses in the question are plain text.
 * Common words are left out unless nothing else is left. Null when the question has no word at all.
 */
export function matchExpression(question) {
  const words = [...new Set(question.normalize('NFKC').toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])];
  const meaningful = words.filter((word) => !STOPWORDS.has(word));
  const terms = (meaningful.length > 0 ? meaningful : words).slice(0, MAX_TERMS);
  return terms.length === 0 ? null : terms.map((term) => `"${term}"`).join(' OR ');
}

/** The best passages, best first. bm25() is SQLite's: lower (more negative) is a better match. */
export function searchPassages(db, expression, limit) {
  return db
    .prepare(
      `SELECT files.path AS file, chunks.line_start, chunks.line_end, chunks.heading, bm25(passages, 1.0, 0.5) AS bm25, passages.body AS text
         FROM passages JOIN chunks ON chunks.id = passages.rowid JOIN files ON files.id = chunks.file_id
        WHERE passages MATCH ? ORDER BY bm25 LIMIT ?`,
    )
    .all(expression, limit);
}
