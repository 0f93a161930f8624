// agent_research_rag_015's eval: questions over a corpus of real text (the README of every package in
// node_modules, and this repository's docs), answerable ones with the file that answers them and unanswerable ones
// that must be answered "not in this corpus"; then 10,000 files indexed from nothing, and again unchanged.
import { copyFileSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, figure, heading, percent, readSet, runAgent, setParts, tempDir } from './support.mjs';

const AGENT = 'agent_research_rag_015';
const BULK_FILES = 10_000;

function readmeOf(dir) {
  const name = readdirSync(dir).find((file) => /^readme\.md$/i.test(file));
  return name === undefined ? null : join(dir, name);
}

/** readmes/<package>.md for each package of node_modules (a scope's / as __), svc/<path> for this repository's docs. */
export function buildCorpus() {
  const corpus = tempDir('rag-corpus');
  const readmes = join(corpus, 'readmes');
  mkdirSync(readmes, { recursive: true });
  const modules = join(REPO_ROOT, 'node_modules');
  for (const entry of readdirSync(modules).sort()) {
    const dirs = entry.startsWith('@')
      ? readdirSync(join(modules, entry)).map((name) => [`${entry}__${name}`, join(modules, entry, name)])
      : [[entry, join(modules, entry)]];
    for (const [name, dir] of dirs) {
      if (!statSync(dir).isDirectory()) continue;
      const readme = readmeOf(dir);
      if (readme) copyFileSync(readme, join(readmes, `${name}.md`));
    }
  }
  for (const sub of ['', 'sections']) {
    const from = join(REPO_ROOT, 'docs', sub);
    mkdirSync(join(corpus, 'svc', sub), { recursive: true });
    for (const file of readdirSync(from).filter((name) => name.endsWith('.md')))
      copyFileSync(join(from, file), join(corpus, 'svc', sub, file));
  }
  return corpus;
}

/** 10,000 files of about 6 KB, windows of the corpus's own text, in 100 folders. */
function buildBulkCorpus(corpus) {
  const bulk = tempDir('rag-bulk');
  const texts = readdirSync(join(corpus, 'readmes'))
    .map((name) => readFileSync(join(corpus, 'readmes', name), 'utf8'))
    .filter((text) => text.length > 2_000);
  for (let i = 0; i < BULK_FILES; i++) {
    const text = texts[i % texts.length];
    const start = Math.floor((((i * 7919) % 1000) / 1000) * Math.max(1, text.length - 6_000));
    const dir = join(bulk, `part-${String(i % 100).padStart(2, '0')}`);
    if (i < 100) mkdirSync(dir);
    writeFileSync(join(dir, `doc-${i}.md`), `# Document ${i}\n\n${text.slice(start, start + 6_000)}\n`);
  }
  return bulk;
}

const filesOf = (output) => (output?.passages ?? []).map((passage) => passage.file);
const saysNotInCorpus = (output) => output?.answer?.found === false;

async function questionsPart(corpus, stateDir, part) {
  const set = readSet(AGENT, part);
  let top1 = 0;
  let top5 = 0;
  let passageRight = 0;
  let answeredAnswerable = 0;
  const wrong = [];
  for (const item of set.answerable) {
    const run = await runAgent(AGENT, { corpus, question: item.question }, { stateDir });
    const files = filesOf(run.json);
    if (!saysNotInCorpus(run.json)) answeredAnswerable++;
    if (files[0] === item.file) top1++;
    else wrong.push(`${item.question} -> ${files[0] ?? (run.exitCode === 0 ? 'nothing' : `exit ${run.exitCode}`)}`);
    if (files.slice(0, 5).includes(item.file)) top5++;
    if (files[0] === item.file && run.json.passages[0].text.includes(item.contains)) passageRight++;
  }
  let notInCorpus = 0;
  const answeredWrongly = [];
  for (const item of set.unanswerable) {
    const run = await runAgent(AGENT, { corpus, question: item.question }, { stateDir });
    if (saysNotInCorpus(run.json)) notInCorpus++;
    else answeredWrongly.push(`${item.question} -> ${filesOf(run.json)[0] ?? `exit ${run.exitCode}`}`);
  }
  const n = set.answerable.length;
  heading(`${AGENT} (${part}): ${n} answerable, ${set.unanswerable.length} unanswerable questions`);
  figure('top-1 citation is the right file', `${top1} of ${n}`, percent(top1, n));
  figure('right file among the top 5', `${top5} of ${n}`, percent(top5, n));
  figure('top-1 passage holds the answer', `${passageRight} of ${n}`, percent(passageRight, n));
  figure('answerable questions answered (not "not in this corpus")', `${answeredAnswerable} of ${n}`, percent(answeredAnswerable, n));
  figure(
    'unanswerable questions answered "not in this corpus"',
    `${notInCorpus} of ${set.unanswerable.length}`,
    percent(notInCorpus, set.unanswerable.length),
  );
  for (const line of wrong) process.stdout.write(`    top-1 wrong: ${line}\n`);
  for (const line of answeredWrongly) process.stdout.write(`    answered: ${line}\n`);
}

async function scalePart(corpus) {
  const bulk = buildBulkCorpus(corpus);
  const stateDir = tempDir('rag-bulk-state');
  const limit = JSON.parse(readFileSync(join(REPO_ROOT, 'agents', AGENT, 'agent.json'), 'utf8')).timeout_seconds ?? 30;
  heading(`${AGENT} (scale): ${BULK_FILES} files of about 6 KB, the agent's time limit ${limit} s`);
  let runs = 0;
  let totalMs = 0;
  let last;
  do {
    last = await runAgent(AGENT, { corpus: bulk, question: 'How do I configure the connection pool size?' }, { stateDir });
    runs++;
    totalMs += last.ms;
    figure(
      `run ${runs}`,
      `${(last.ms / 1000).toFixed(1)} s`,
      last.exitCode === 0
        ? `${last.json.index.files} files indexed, complete: ${last.json.index.complete}`
        : `exit ${last.exitCode}: ${last.stderr.split('\n')[0]}`,
    );
  } while (last.exitCode === 0 && !last.json.index.complete && runs < 20);
  figure('runs until the index was complete', runs, `${(totalMs / 1000).toFixed(1)} s in all`);
  const again = await runAgent(AGENT, { corpus: bulk, question: 'How do I parse a semver range?' }, { stateDir });
  figure(
    'a run over the unchanged, complete index',
    `${(again.ms / 1000).toFixed(1)} s`,
    again.exitCode === 0 ? `unchanged ${again.json.index.unchanged}` : `exit ${again.exitCode}`,
  );
}

export async function evalRag({ scale = true } = {}) {
  const corpus = buildCorpus();
  const stateDir = tempDir('rag-state');
  for (const part of setParts(AGENT)) await questionsPart(corpus, stateDir, part);
  if (scale) await scalePart(corpus);
}
