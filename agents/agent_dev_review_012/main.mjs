// agent_dev_review_012: reviews a commit or a range of a git repository on the node's host.
// See docs/sections/starter-agents.md for what it flags and why.
import { stat } from 'node:fs/promises';
import { basename, isAbsolute } from 'node:path';
import { InputError, refuseUnknownFields, runAgent } from './agent-io.mjs';
import { binaryPaths, blobSizes, blobText, changedFiles, git, resolveReview } from './git.mjs';
import { eachAddedLine } from './patch-lines.mjs';
import { LARGE_BINARY_BYTES, SHELL_EXTENSIONS, SHELL_SHEBANG, TODO, conflictMarkerKind, findSecrets } from './rules.mjs';
import { checkScript, severityOfLevel, shellcheckVersion } from './shellcheck.mjs';

const MAX_FINDINGS = 300;
/** Keeps a huge diff (a vendored tree) within the run's deadline; the output says when it cut. */
const MAX_ADDED_LINES = 500_000;
const MAX_SCRIPTS = 20;
const KINDS = ['secret', 'conflict_marker', 'large_binary', 'shellcheck', 'todo'];

async function openRepo(repo) {
  if (typeof repo !== 'string' || !isAbsolute(repo)) throw new InputError('repo: must be an absolute path to a git repository on this host');
  const info = await stat(repo).catch(() => null);
  if (!info?.isDirectory()) throw new InputError(`repo: no directory at ${repo}`);
  try {
    await git(repo, ['rev-parse', '--git-dir']);
  } catch (error) {
    throw new InputError(`repo: ${repo} is not a git repository this agent can read (${error.stderr?.trim() || error.message})`);
  }
  return repo;
}

class Findings {
  list = [];
  counts = Object.fromEntries(KINDS.map((kind) => [kind, 0]));
  add(finding) {
    this.counts[finding.kind]++;
    if (this.list.length < MAX_FINDINGS) this.list.push(finding);
  }
}

/** Scripts among the changed files: by extension, or executable and extension-less with a shell `#!` line. */
async function shellScripts(repo, files, sizes, binary) {
  const scripts = [];
  for (const file of files) {
    if (binary.has(file.path)) continue;
    if (SHELL_EXTENSIONS.test(file.path)) scripts.push(file);
    else if (file.mode === '100755' && !basename(file.path).includes('.') && (sizes.get(file.blob) ?? Infinity) <= LARGE_BINARY_BYTES && SHELL_SHEBANG.test(await blobText(repo, file.blob))) scripts.push(file);
  }
  return scripts;
}

function summarise(rev, review, counts, filesChanged) {
  const what = review.subject === null ? `${rev} (${review.commits} commit${review.commits === 1 ? '' : 's'})` : `${rev} (${review.head.slice(0, 7)} "${review.subject.slice(0, 60)}")`;
  const parts = [
    [counts.secret, 'secret', 'secrets'],
    [counts.conflict_marker, 'conflict marker', 'conflict markers'],
    [counts.large_binary, 'large binary', 'large binaries'],
    [counts.shellcheck, 'shellcheck issue', 'shellcheck issues'],
    [counts.todo, 'TODO/FIXME', 'TODO/FIXMEs'],
  ].filter(([count]) => count > 0).map(([count, one, many]) => `${count} ${count === 1 ? one : many}`);
  const files = `${filesChanged} changed file${filesChanged === 1 ? '' : 's'}`;
  return parts.length === 0 ? `${what}: nothing flagged in ${files}` : `${what}: ${parts.join(', ')} in ${files}`;
}

await runAgent('agent_dev_review_012', async (input) => {
  refuseUnknownFields(input, ['repo', 'rev']);
  const repo = await openRepo(input.repo);
  const rev = input.rev ?? 'HEAD';
  const review = await resolveReview(repo, rev);
  const files = await changedFiles(repo, review.base, review.head);
  // Deleted files, symlinks and submodules have no new content to review.
  const present = files.filter((file) => file.status !== 'D' && file.mode !== '120000' && file.mode !== '160000');
  const sizes = await blobSizes(repo, present.map((file) => file.blob));
  const binary = await binaryPaths(repo, review.base, review.head);
  const findings = new Findings();

  for (const file of present) {
    const size = sizes.get(file.blob) ?? 0;
    if (binary.has(file.path) && size >= LARGE_BINARY_BYTES) {
      findings.add({ kind: 'large_binary', severity: 'warning', file: file.path, size_bytes: size, message: `${file.status === 'A' ? 'adds' : 'changes'} a binary file of ${(size / 1024 / 1024).toFixed(1)} MiB` });
    }
  }

  const scripts = await shellScripts(repo, present, sizes, binary);
  const addedInScripts = new Map(scripts.map((script) => [script.path, new Set()]));
  const separators = [];
  let fileHasMarker = false;
  const scan = await eachAddedLine(repo, review.base, review.head, {
    maxLines: MAX_ADDED_LINES,
    onAdded(path, line, text) {
      addedInScripts.get(path)?.add(line);
      for (const secret of findSecrets(text)) findings.add({ kind: 'secret', severity: 'critical', file: path, line, ...secret });
      const marker = conflictMarkerKind(text);
      if (marker === 'marker') {
        fileHasMarker = true;
        findings.add({ kind: 'conflict_marker', severity: 'critical', file: path, line, message: `adds the merge-conflict marker ${text.slice(0, 7)}` });
      } else if (marker === 'separator') {
        separators.push({ path, line });
      }
      const todo = TODO.exec(text);
      if (todo) findings.add({ kind: 'todo', severity: 'info', file: path, line, message: `adds a ${todo[1]}`, excerpt: text.trim().slice(0, 160) });
    },
    onFileEnd() {
      if (fileHasMarker) {
        for (const { path, line } of separators) findings.add({ kind: 'conflict_marker', severity: 'critical', file: path, line, message: 'adds the merge-conflict marker =======' });
      }
      separators.length = 0;
      fileHasMarker = false;
    },
  });

  const version = await shellcheckVersion();
  const checked = version === null ? [] : scripts.slice(0, MAX_SCRIPTS);
  let outsideDiff = 0;
  const failures = [];
  for (const script of checked) {
    const added = addedInScripts.get(script.path);
    // One script shellcheck cannot handle (too big to check in time) leaves the rest of the review standing.
    const comments = await checkScript(await blobText(repo, script.blob)).catch((error) => {
      failures.push({ file: script.path, error: error.message });
      return [];
    });
    for (const comment of comments) {
      if (!added.has(comment.line)) {
        outsideDiff++;
        continue;
      }
      findings.add({ kind: 'shellcheck', severity: severityOfLevel(comment.level), file: script.path, line: comment.line, code: `SC${comment.code}`, level: comment.level, message: comment.message });
    }
  }

  return {
    summary: summarise(rev, review, findings.counts, files.length),
    repo,
    rev,
    base: review.parent,
    head: review.head,
    commits: review.commits,
    files_changed: files.length,
    counts: findings.counts,
    findings: findings.list,
    shellcheck: version === null
      ? { available: false, scripts: scripts.length, checked: 0, note: `shellcheck is not installed on this host: ${scripts.length} changed shell script(s) not checked` }
      : { available: true, version, scripts: scripts.length, checked: checked.length, comments_outside_diff: outsideDiff, ...(failures.length > 0 ? { failures } : {}) },
    large_binary_bytes: LARGE_BINARY_BYTES,
    truncated: findings.list.length < Object.values(findings.counts).reduce((a, b) => a + b, 0) || scan.truncated || checked.length < (version === null ? 0 : scripts.length),
  };
});
