// The corpus on disk: which files count, and how a file is cut into paragraph-sized passages with line ranges.
import { lstat, readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';

export const TEXT_EXTENSIONS = /\.(?:md|markdown|txt|text)$/i;
export const MAX_FILE_BYTES = 2 * 1024 * 1024;
/** A bound on the walk, not a goal: 100,000 files index in a few minutes (npm run eval:agents). */
export const MAX_FILES = 100_000;
/** A paragraph longer than this many lines (a text file without blank lines) is cut into several passages. */
const MAX_PASSAGE_LINES = 40;
/**
 * Paragraphs under one heading are joined until a passage has this many characters: a one-line paragraph alone
 * ranks by a single word (BM25 favours short texts), and its answer is often the next paragraph.
 */
export const MIN_PASSAGE_CHARS = 400;

/**
 * Every Markdown or text file under `root`, with its stat. Hidden entries (.git) and node_modules are not
 * walked, and symbolic links are not followed, so the walk stays inside the corpus and cannot loop.
 */
export async function listCorpus(root) {
  const files = [];
  let skipped = 0;
  let truncated = false;
  const walk = async (dir) => {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      skipped++;
      return;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (truncated) return;
      if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile() && TEXT_EXTENSIONS.test(entry.name)) {
        const info = await lstat(path, { bigint: true }).catch(() => null);
        if (info === null || info.size > BigInt(MAX_FILE_BYTES)) {
          skipped++;
          continue;
        }
        if (files.length === MAX_FILES) {
          truncated = true;
          return;
        }
        files.push({ path, rel: relative(root, path), mtimeNs: info.mtimeNs.toString(), size: Number(info.size) });
      }
    }
  };
  await walk(root);
  return { files, skipped, truncated };
}

const FENCE = /^\s*(?:```|~~~)/;
const ATX_HEADING = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/;

/**
 * Paragraph-sized passages: a blank line ends one once it holds 400 characters; a heading starts one and is kept
 * with the paragraphs under it (its text is also the passage's `heading`, as is the nearest heading above for the
 * passages that follow). Blank lines inside a fenced code block do not cut it. Lines are numbered from 1.
 */
export function passagesOf(text) {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  const passages = [];
  let heading = null;
  let current = null;
  let inFence = false;
  const flush = () => {
    if (current && current.hasBody) {
      // Blank lines kept while it grew are not part of it at its end.
      while (current.lines.length > 0 && current.lines.at(-1).trim() === '') current.lines.pop();
      // Only blank lines (inside a code fence a file left open): no passage.
      if (current.lines.length > 0) passages.push({ line_start: current.start, line_end: current.start + current.lines.length - 1, heading: current.heading, body: current.lines.join('\n') });
    }
    current = null;
  };
  const add = (line, index, isBody) => {
    current ??= { start: index + 1, end: index + 1, lines: [], heading, hasBody: false };
    current.lines.push(line);
    current.chars = (current.chars ?? 0) + line.length + 1;
    current.end = index + 1;
    current.hasBody ||= isBody;
  };
  lines.forEach((line, index) => {
    if (FENCE.test(line)) inFence = !inFence;
    const headingMatch = inFence ? null : ATX_HEADING.exec(line);
    if (headingMatch) {
      flush();
      heading = headingMatch[1] || null;
      add(line, index, false);
    } else if (!inFence && line.trim() === '') {
      // The passage is exactly its lines: blank lines between a heading and its paragraph stay in it.
      if (current?.hasBody && current.chars >= MIN_PASSAGE_CHARS) flush();
      else if (current) add(line, index, false);
    } else {
      add(line, index, true);
      if (current.lines.length >= MAX_PASSAGE_LINES) flush();
    }
  });
  // A heading with nothing under it makes no passage of its own; its words are the heading of the passages below it.
  flush();
  return passages;
}
