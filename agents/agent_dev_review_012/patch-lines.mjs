// The lines a diff adds, with their file and line number in the new version, read from `git diff -U0` as it streams.
import { gitEachLine } from './git.mjs';

const C_ESCAPES = { a: 7, b: 8, t: 9, n: 10, v: 11, f: 12, r: 13, '"': 34, '\\': 92 };

/** git writes a path holding `"`, `\` or control characters C-quoted ("a\tb"); this undoes it, octal bytes as UTF-8. */
export function unquoteGitPath(text) {
  if (!text.startsWith('"')) return text;
  const bytes = [];
  for (let i = 1; i < text.length - 1; i++) {
    const char = text[i];
    if (char !== '\\') {
      bytes.push(...Buffer.from(char));
      continue;
    }
    const next = text[++i];
    if (/[0-7]/.test(next)) {
      bytes.push(parseInt(text.slice(i, i + 3), 8));
      i += 2;
    } else {
      bytes.push(C_ESCAPES[next] ?? next.charCodeAt(0));
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/**
 * Calls `onAdded(path, line, text)` for every added line and `onFileEnd(path)` after each file's last hunk.
 * Stops after `maxLines` added lines and answers whether it did.
 */
export async function eachAddedLine(repo, base, head, { onAdded, onFileEnd, maxLines }) {
  let path = null;
  let inHunk = false;
  let newLine = 0;
  let seen = 0;
  let cut = false;
  const endFile = () => {
    if (path !== null) onFileEnd(path);
    path = null;
  };
  await gitEachLine(repo, ['diff', '--no-color', '--no-ext-diff', '--no-textconv', '-U0', '--find-renames', '--src-prefix=a/', '--dst-prefix=b/', base, head, '--'], (line) => {
    if (line.startsWith('diff --git ')) {
      endFile();
      inHunk = false;
      return true;
    }
    if (!inHunk) {
      if (line.startsWith('+++ ')) {
        const target = unquoteGitPath(line.slice(4));
        path = target === '/dev/null' ? null : target.slice(2); // strip the "b/" prefix
      } else if (line.startsWith('@@ ')) {
        inHunk = true;
      }
    }
    if (line.startsWith('@@ ')) {
      newLine = Number(/^@@ -\d+(?:,\d+)? \+(\d+)/.exec(line)?.[1] ?? 0);
      return true;
    }
    if (!inHunk || path === null) return true;
    if (line.startsWith('+')) {
      onAdded(path, newLine++, line.slice(1));
      if (++seen >= maxLines) {
        cut = true;
        return false;
      }
    } else if (line.startsWith(' ')) {
      newLine++;
    }
    return true;
  });
  endFile();
  return { truncated: cut };
}
