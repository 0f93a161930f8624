// Secrets of a text file too large for the code analyzers (over the review's MAX_TEXT_BYTES): searched line by line
// as git streams it, in chunks of lines, each chunk starting with the last lines of the one before, so that a key
// written over several lines (a PEM block) lies whole in one of them. The analyzers skip such a file; the secret
// search never does, up to MAX_SECRET_SEARCH_BYTES (docs/sections/starter-agents.md).
import { blobLines } from './git.mjs';
import { findSecrets } from './secrets.mjs';

/** The largest text file searched for secrets; a review with a larger one is not a full review. */
export const MAX_SECRET_SEARCH_BYTES = 64 * 1024 * 1024;
const CHUNK_LINES = 20_000;
/** More than the longest key written over lines (an RSA-4096 PEM block is 51 lines). */
const OVERLAP_LINES = 100;

/** The secrets of `file` (`{path, blob}`) on the lines `added`, as findSecrets gives them, numbered in the file. */
export async function findSecretsStreamed(repo, file, added) {
  const found = new Map();
  let chunk = [];
  let firstLine = 1;
  const search = async () => {
    const local = new Set();
    for (let index = 0; index < chunk.length; index += 1) if (added.has(firstLine + index)) local.add(index + 1);
    if (local.size === 0) return;
    for (const secret of await findSecrets(file.path, chunk.join('\n'), local)) {
      const line = secret.line + firstLine - 1;
      if (!found.has(line)) found.set(line, { ...secret, line });
    }
  };
  for await (const line of blobLines(repo, file.blob)) {
    chunk.push(line);
    if (chunk.length < CHUNK_LINES) continue;
    await search();
    firstLine += chunk.length - OVERLAP_LINES;
    chunk = chunk.slice(-OVERLAP_LINES);
  }
  if (chunk.length > 0) await search();
  return [...found.values()].sort((a, b) => a.line - b.line);
}
