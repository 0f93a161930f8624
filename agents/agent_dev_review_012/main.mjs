// agent_dev_review_012: reviews a commit or a range of a git repository on the node's host: secrets (secretlint's
// recommended preset and rules of its own), code checks by maintained analyzers, conflict markers, large binaries
// and to-do comments. See docs/sections/starter-agents.md for what it flags and why.
import { stat } from 'node:fs/promises';
import { basename, isAbsolute } from 'node:path';
import { IncompleteRunError, InputError, artifactsDir, refuseUnknownFields, runAgent } from './agent-io.mjs';
import { analyzerOf, runAnalyzers } from './analyzers.mjs';
import { binaryPaths, blobSizes, blobTexts, changedFiles, git, resolveReview } from './git.mjs';
import { configuredModel } from './model.mjs';
import { modelReview } from './model-review.mjs';
import { eachAddedLine } from './patch-lines.mjs';
import { LARGE_BINARY_BYTES, SHELL_EXTENSIONS, SHELL_SHEBANG, SQL_FILES, conflictMarkerKind, sqlBuiltFromStrings, todoMarker } from './rules.mjs';
import { writeSarif } from './sarif.mjs';
import { createRedactor } from './redact.mjs';
import { findSecrets } from './secrets.mjs';
import { findSecretsStreamed, MAX_SECRET_SEARCH_BYTES } from './large-text.mjs';

const MAX_FINDINGS = 300;
/** Keeps a huge diff (a vendored tree) within the run's time limit; the output says when it cut. */
const MAX_ADDED_LINES = 500_000;
/** Text files above this are not read for secrets or checked (a generated bundle, a data dump). */
const MAX_TEXT_BYTES = 1024 * 1024;
const KINDS = ['secret', 'conflict_marker', 'large_binary', 'sql', 'eslint', 'shellcheck', 'bandit', 'todo'];

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
  all = [];
  counts = Object.fromEntries(KINDS.map((kind) => [kind, 0]));
  add(finding) {
    this.counts[finding.kind]++;
    this.all.push(finding);
  }
  get listed() {
    return [...this.all].sort((a, b) => KINDS.indexOf(a.kind) - KINDS.indexOf(b.kind)).slice(0, MAX_FINDINGS);
  }
}

const isShellScript = (file, text) => SHELL_EXTENSIONS.test(file.path) || (file.mode === '100755' && !basename(file.path).includes('.') && SHELL_SHEBANG.test(text));

const PARTS = [
  ['secret', 'secret', 'secrets'],
  ['conflict_marker', 'conflict marker', 'conflict markers'],
  ['large_binary', 'large binary', 'large binaries'],
  ['sql', 'SQL built from strings', 'SQL statements built from strings'],
  ['eslint', 'ESLint issue', 'ESLint issues'],
  ['shellcheck', 'shellcheck issue', 'shellcheck issues'],
  ['bandit', 'bandit issue', 'bandit issues'],
  ['todo', 'to-do comment', 'to-do comments'],
];

function summarise(rev, review, counts, filesChanged) {
  const what = review.subject === null ? `${rev} (${review.commits} commit${review.commits === 1 ? '' : 's'})` : `${rev} (${review.head.slice(0, 7)} "${review.subject.slice(0, 60)}")`;
  const parts = PARTS.filter(([kind]) => counts[kind] > 0).map(([kind, one, many]) => `${counts[kind]} ${counts[kind] === 1 ? one : many}`);
  const files = `${filesChanged} changed file${filesChanged === 1 ? '' : 's'}`;
  return parts.length === 0 ? `${what}: nothing flagged in ${files}` : `${what}: ${parts.join(', ')} in ${files}`;
}

const redactor = createRedactor();
/** A new file's added lines, asked of line by line (the streamed search makes a Set of each chunk's). */
const EVERY_LINE = { has: (line) => line >= 1 };

await runAgent('agent_dev_review_012', async (input) => {
  try {
    return await redactor.deep(await review(input));
  } catch (error) {
    throw await redactor.error(error);
  }
});

async function review(input) {
  refuseUnknownFields(input, ['repo', 'rev']);
  const repo = await openRepo(input.repo);
  const rev = input.rev ?? 'HEAD';
  const model = configuredModel();
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

  const added = new Map();
  const separators = [];
  let fileHasMarker = false;
  const scan = await eachAddedLine(repo, review.base, review.head, {
    maxLines: MAX_ADDED_LINES,
    onAdded(path, line, text) {
      if (!added.has(path)) added.set(path, new Map());
      added.get(path).set(line, text);
      const marker = conflictMarkerKind(text);
      if (marker === 'marker') {
        fileHasMarker = true;
        findings.add({ kind: 'conflict_marker', severity: 'critical', file: path, line, message: `adds the merge-conflict marker ${text.slice(0, 7)}` });
      } else if (marker === 'separator') {
        separators.push({ path, line });
      }
      if (SQL_FILES.test(path) && sqlBuiltFromStrings(text, path)) {
        findings.add({ kind: 'sql', severity: 'warning', file: path, line, rule: 'sql-built-from-strings', message: 'builds an SQL statement by formatting values into a string (SQL injection)', fix: 'pass the values as query parameters: execute("… WHERE name = %s", (name,)), or a ? / $1 placeholder' });
      }
      const todo = todoMarker(text);
      if (todo) findings.add({ kind: 'todo', severity: 'info', file: path, line, message: `adds a ${todo} comment`, excerpt: text.trim().slice(0, 160) });
    },
    onFileEnd() {
      if (fileHasMarker) {
        for (const { path, line } of separators) findings.add({ kind: 'conflict_marker', severity: 'critical', file: path, line, message: 'adds the merge-conflict marker =======' });
      }
      separators.length = 0;
      fileHasMarker = false;
    },
  });

  // Which lines of each text file the change added: a new file's are all of them, known without the diff; another
  // file's are the diff's, and past a cut of the diff (MAX_ADDED_LINES) they are not known: such a file cannot be
  // searched for secrets, and the review is not a full one (below).
  const textOf = present.filter((file) => !binary.has(file.path));
  const cutAt = scan.truncated ? [...added.keys()].at(-1) : undefined;
  const linesKnown = (file) => file.status === 'A' || !scan.truncated || (added.has(file.path) && file.path !== cutAt);
  const notSearched = textOf.filter((file) => !linesKnown(file) || (sizes.get(file.blob) ?? 0) > MAX_SECRET_SEARCH_BYTES).map((file) => file.path);
  const searchable = textOf.filter((file) => linesKnown(file) && (file.status === 'A' || added.has(file.path)) && (sizes.get(file.blob) ?? 0) <= MAX_SECRET_SEARCH_BYTES);
  const addSecrets = (file, secrets) => {
    for (const secret of secrets) {
      redactor.learn(secret);
      findings.add({ kind: 'secret', severity: 'critical', file: file.path, ...secret });
    }
  };
  // Read whole, the files the analyzers check too: secrets span lines (a PEM key) and analyzers need the file.
  const textFiles = searchable.filter((file) => (sizes.get(file.blob) ?? 0) <= MAX_TEXT_BYTES);
  const texts = await blobTexts(repo, [...new Set(textFiles.map((file) => file.blob))]);
  // Too large for the analyzers: searched for secrets as they stream, and named in the summary as not analyzed.
  const largeText = searchable.filter((file) => (sizes.get(file.blob) ?? 0) > MAX_TEXT_BYTES);
  for (const file of largeText) addSecrets(file, await findSecretsStreamed(repo, file, file.status === 'A' ? EVERY_LINE : added.get(file.path)));
  const tooBig = largeText.map((file) => file.path);
  const groups = { eslintFiles: [], scripts: [], pythonFiles: [] };
  for (const file of textFiles) {
    const text = texts.get(file.blob) ?? '';
    // A Set: the dotenv rule walks the added lines.
    const lines = file.status === 'A' ? new Set(text.split('\n').map((_, index) => index + 1)) : new Set(added.get(file.path)?.keys() ?? []);
    addSecrets(file, await findSecrets(file.path, text, lines));
    const entry = { path: file.path, text, added: lines };
    if (isShellScript(file, text)) groups.scripts.push(entry);
    else if (analyzerOf(file.path) === 'eslint') groups.eslintFiles.push(entry);
    else if (analyzerOf(file.path) === 'bandit') groups.pythonFiles.push(entry);
  }
  const { reports, missing } = await runAnalyzers(groups, (finding) => findings.add(finding));
  const failed = Object.entries(reports).filter(([, report]) => report.failures?.length > 0).map(([name]) => name);
  const tools = { secretlint: { ran: true, files: textFiles.length }, ...reports };
  // Every finding's text as it will be written, once all the change's secrets are known: a to-do line or a tool's
  // message may quote one found in another file (./redact.mjs).
  findings.all = await redactor.deep(findings.all);

  const dir = artifactsDir();
  const artifacts = dir ? [writeSarif(dir, findings.all, Object.fromEntries(Object.entries(reports).map(([name, report]) => [name, report.version])))] : [];
  const modelAnswer = model ? await modelReview(model, added, findings.all) : null;
  const output = {
    // A review whose code analysis alone was cut says which files it left out (their secrets were searched).
    summary:
      summarise(rev, review, findings.counts, files.length) +
      (tooBig.length === 0 ? '' : `; code analysis skipped ${tooBig.length} file(s) over ${MAX_TEXT_BYTES / 1024 / 1024} MiB, searched for secrets only: ${tooBig.slice(0, 5).join(', ')}${tooBig.length > 5 ? ', …' : ''}`),
    repo,
    rev,
    base: review.parent,
    head: review.head,
    commits: review.commits,
    files_changed: files.length,
    counts: findings.counts,
    findings: findings.listed,
    tools,
    ...(tooBig.length > 0 ? { not_analyzed: { over_bytes: MAX_TEXT_BYTES, files: tooBig.slice(0, 50) } } : {}),
    ...(modelAnswer ? { model_review: modelAnswer } : {}),
    artifacts,
    large_binary_bytes: LARGE_BINARY_BYTES,
    truncated: findings.all.length > MAX_FINDINGS || scan.truncated || Object.values(reports).some((report) => report.over_cap > 0),
  };
  if (missing.length > 0 || failed.length > 0 || notSearched.length > 0) {
    const why = [
      ...(notSearched.length > 0 ? [`${notSearched.length} file(s) not searched for secrets (over ${MAX_SECRET_SEARCH_BYTES / 1024 / 1024} MiB, or past the diff's cut of ${MAX_ADDED_LINES} added lines): ${notSearched.slice(0, 20).join(', ')}`] : []),
      ...missing.map((name) => reports[name].note),
      ...failed.map((name) => `${name} could not check ${reports[name].failures.map((failure) => failure.file ?? 'its files').join(', ')}: ${reports[name].failures[0].error}`),
    ];
    const done = [`${output.summary} (by the tools that ran)`, ...findings.listed.slice(0, 20).map((finding) => `  ${finding.file}:${finding.line ?? '-'} ${finding.kind} ${finding.rule ?? ''} ${finding.message}`)].join('\n');
    throw new IncompleteRunError(`not a full review, so the run is refunded: ${why.join('; ')}`, done);
  }
  return output;
}

