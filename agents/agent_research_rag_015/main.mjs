// agent_research_rag_015: answers a question from a folder of Markdown and text files on the node's host, with
// passages cited by file and line range. See docs/sections/starter-agents.md.
import { createHash } from 'node:crypto';
import { realpath, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute } from 'node:path';
import { InputError, refuseUnknownFields, runAgent } from './agent-io.mjs';
import { listCorpus } from './corpus.mjs';
import { matchExpression, openIndex, refreshIndex, searchPassages } from './search-index.mjs';

const TOP_PASSAGES = 5;
const MAX_PASSAGE_CHARS = 1_500;
const MAX_QUESTION_CHARS = 1_000;
/** Indexing stops starting new files after this long, so the answer arrives within the run's 30 s deadline. */
const INDEX_BUDGET_MS = 20_000;

async function openCorpus(corpus) {
  if (typeof corpus !== 'string' || !isAbsolute(corpus)) throw new InputError('corpus: must be an absolute path to a folder on this host');
  const info = await stat(corpus).catch(() => null);
  if (!info?.isDirectory()) throw new InputError(`corpus: no directory at ${corpus}`);
  return realpath(corpus);
}

function readQuestion(question) {
  if (typeof question !== 'string' || question.trim() === '') throw new InputError('question: must be a non-empty string');
  if (question.length > MAX_QUESTION_CHARS) throw new InputError(`question: must be at most ${MAX_QUESTION_CHARS} characters`);
  const expression = matchExpression(question);
  if (expression === null) throw new InputError('question: has no words to search for');
  return { question: question.trim(), expression };
}

function summarise(passages, index) {
  const partial = index.complete ? '' : ' (index still being built: run again for the rest)';
  if (passages.length === 0) return `No passage of the ${index.files} indexed files matches the question${partial}`;
  const best = passages[0];
  const where = best.heading ? ` (${best.heading})` : '';
  const gist = best.text.replace(/\s+/g, ' ').slice(0, 100);
  return `Best match: ${best.citation}${where} of ${passages.length} passages from ${index.files} files${partial}\n${gist}${best.text.length > 100 ? '…' : ''}`;
}

await runAgent('agent_research_rag_015', async (input) => {
  const started = Date.now();
  refuseUnknownFields(input, ['corpus', 'question']);
  const { question, expression } = readQuestion(input.question);
  const corpus = await openCorpus(input.corpus);

  // One index per corpus, in the state directory when the node keeps one for this agent, else in the run's own
  // directory (rebuilt every run).
  const stateDir = process.env.SWARM_STATE_DIR;
  const indexDir = stateDir || process.env.TMPDIR || tmpdir();
  const db = openIndex(indexDir, `index-${createHash('sha256').update(corpus).digest('hex').slice(0, 16)}.sqlite`);
  try {
    const index = await refreshIndex(db, await listCorpus(corpus), started + INDEX_BUDGET_MS);
    const passages = searchPassages(db, expression, TOP_PASSAGES).map((row) => ({
      citation: `${row.file}:${row.line_start}-${row.line_end}`,
      file: row.file,
      line_start: row.line_start,
      line_end: row.line_end,
      heading: row.heading,
      bm25: row.bm25,
      text: row.text.length > MAX_PASSAGE_CHARS ? `${row.text.slice(0, MAX_PASSAGE_CHARS)}…` : row.text,
      text_truncated: row.text.length > MAX_PASSAGE_CHARS,
    }));
    return {
      summary: summarise(passages, index),
      question,
      corpus,
      passages,
      index: { ...index, kept_between_runs: Boolean(stateDir) },
      truncated: passages.some((passage) => passage.text_truncated),
    };
  } finally {
    db.close();
  }
});
