// agent_dev_review_012's eval: planted secrets and code problems in a commit of a repository made here (train and
// held-out sets, scripts/eval/sets/agent_dev_review_012/), to-do markers in comments or in code, and every commit
// of this repository's own history, whose secret findings are listed for a person to judge.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fakeSecrets, fillSecrets } from './fake-secrets.mjs';
import { REPO_ROOT, figure, heading, readSet, runAgent, setParts, tempDir } from './support.mjs';

const AGENT = 'agent_dev_review_012';
const TODO_FILE = 'misc/todo-samples.txt';

function git(cwd, ...args) {
  return execFileSync('git', ['-c', 'user.name=Eval', '-c', 'user.email=eval@example.com', '-c', 'init.defaultBranch=main', ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, HOME: cwd },
  });
}

/** The seed of a part's credentials: its own `seed` (a part keeps its values when it moves into training), else its name. */
const seedOf = (set, part) => set.seed ?? `dev-review-${part}`;

/** A repository whose HEAD commit adds the set's files (and its to-do samples) over a first commit. */
function plantedRepo(set, part) {
  const repo = tempDir(`review-${part}`);
  git(repo, 'init', '-q');
  writeFileSync(join(repo, 'README.md'), '# Planted\n');
  git(repo, 'add', '.');
  git(repo, 'commit', '-q', '-m', 'first');
  const secrets = fakeSecrets(seedOf(set, part));
  for (const [path, lines] of Object.entries(set.files)) {
    mkdirSync(dirname(join(repo, path)), { recursive: true });
    writeFileSync(join(repo, path), `${fillSecrets(lines.join('\n'), secrets)}\n`);
  }
  mkdirSync(join(repo, dirname(TODO_FILE)), { recursive: true });
  writeFileSync(join(repo, TODO_FILE), `${set.todo.map((item) => item.line).join('\n')}\n`);
  git(repo, 'add', '.');
  git(repo, 'commit', '-q', '-m', 'the planted commit');
  return repo;
}

async function plantedPart(part) {
  const set = readSet(AGENT, part);
  const repo = plantedRepo(set, part);
  const run = await runAgent(AGENT, { repo, rev: 'HEAD' }, { artifactsDir: tempDir('artifacts') });
  const output = run.json ?? {};
  const findings = output.findings ?? [];
  const at = (file, line, kinds) =>
    findings.some((finding) => finding.file === file && finding.line === line && kinds.includes(finding.kind));
  const found = set.secrets.filter((item) => at(item.file, item.line, ['secret']));
  const missed = set.secrets.filter((item) => !found.includes(item)).map((item) => item.kind);
  const secretLines = new Set([...set.secrets, ...(set.also_secrets ?? [])].map((item) => `${item.file}:${item.line}`));
  const extraSecrets = findings.filter((finding) => finding.kind === 'secret' && !secretLines.has(`${finding.file}:${finding.line}`));
  const codeKinds = ['sql', 'eslint', 'shellcheck', 'bandit'];
  const codeFound = set.code.filter((item) => at(item.file, item.line, codeKinds));
  const todoFlagged = new Set(
    findings.filter((finding) => finding.kind === 'todo' && finding.file === TODO_FILE).map((finding) => finding.line),
  );
  const todoRight = set.todo.filter((item, i) => todoFlagged.has(i + 1) === item.flag).length;
  // A stretch from the middle of each value: a PEM's first line is its header, not the key.
  const answer = JSON.stringify(output);
  const leaked = Object.entries(fakeSecrets(seedOf(set, part)))
    .filter(([, value]) => answer.includes(value.slice(Math.floor(value.length / 2) - 6, Math.floor(value.length / 2) + 6)))
    .map(([name]) => name);

  heading(
    `${AGENT} (${part}): exit ${run.exitCode}, ${Math.round(run.ms)} ms${run.exitCode === 0 ? '' : `: ${run.stderr.split('\n')[0]}`}`,
  );
  figure(
    'secret kinds found at their line',
    `${found.length} of ${set.secrets.length}`,
    missed.length ? `missed: ${missed.join(', ')}` : '',
  );
  figure(
    'secret findings elsewhere (lookalikes, placeholders)',
    extraSecrets.length,
    extraSecrets.map((f) => `${f.file}:${f.line} ${f.rule}`).join('; '),
  );
  figure(
    'code problems flagged at their line',
    `${codeFound.length} of ${set.code.length}`,
    set.code
      .filter((item) => !codeFound.includes(item))
      .map((item) => item.what)
      .join('; '),
  );
  figure('to-do lines judged right (comment or code)', `${todoRight} of ${set.todo.length}`);
  figure('credential values repeated in the answer', leaked.length, leaked.join(', '));
}

/** Every non-merge commit of this repository, reviewed one by one: the secret findings, for a person to judge. */
async function historyPart() {
  const commits = git(REPO_ROOT, 'rev-list', '--no-merges', 'HEAD').trim().split('\n');
  const secretFindings = [];
  const codeFindings = [];
  const failures = [];
  const counts = {};
  let failed = 0;
  let totalMs = 0;
  for (const commit of commits) {
    const run = await runAgent(AGENT, { repo: REPO_ROOT, rev: commit });
    totalMs += run.ms;
    if (run.exitCode !== 0 || !run.json) {
      failed++;
      failures.push(`${commit.slice(0, 7)} exit ${run.exitCode}: ${run.stderr.split('\n').at(-1)}`);
      continue;
    }
    for (const [kind, count] of Object.entries(run.json.counts ?? {})) counts[kind] = (counts[kind] ?? 0) + count;
    for (const finding of run.json.findings ?? []) {
      if (finding.kind === 'secret') secretFindings.push({ commit: commit.slice(0, 7), ...finding });
      else if (finding.kind !== 'todo') codeFindings.push({ commit: commit.slice(0, 7), ...finding });
    }
  }
  heading(`${AGENT} (this repository's history): ${commits.length} commits, ${(totalMs / 1000).toFixed(0)} s in all`);
  figure('commits whose review failed', failed);
  for (const line of failures) process.stdout.write(`    ${line}\n`);
  figure('secret findings (each listed below, to judge)', secretFindings.length);
  for (const finding of secretFindings)
    process.stdout.write(`    ${finding.commit} ${finding.file}:${finding.line} ${finding.rule}: ${finding.excerpt ?? ''}\n`);
  figure('code findings (listed below)', codeFindings.length);
  for (const finding of codeFindings)
    process.stdout.write(
      `    ${finding.commit} ${finding.file}:${finding.line} ${finding.kind} ${finding.rule ?? ''}: ${finding.message}\n`,
    );
  figure(
    'findings by kind',
    Object.entries(counts)
      .filter(([, count]) => count > 0)
      .map(([kind, count]) => `${kind} ${count}`)
      .join(', ') || 'none',
  );
  figure('mean review time per commit', `${Math.round(totalMs / commits.length)} ms`);
}

export async function evalDevReview({ history = true } = {}) {
  for (const part of setParts(AGENT)) await plantedPart(part);
  if (history) await historyPart();
}
