// agent_research_rag_015: answers a question from a folder of Markdown and text files on the node's host, citing
// the passages it drew on by file and line range, or says the corpus does not hold the answer. See
// docs/sections/starter-agents.md.
import { createHash } from 'node:crypto';
import { realpath, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute } from 'node:path';
import { IncompleteRunError, InputError, refuseUnknownFields, runAgent, timeLimitMs } from './agent-io.mjs';
import { listCorpus } from './corpus.mjs';
import { evidenceOf, extractAnswer } from './evidence.mjs';
import { configuredModel } from './model.mjs';
import { modelAnswer } from './model-answer.mjs';
import { openIndex, questionTerms, refreshIndex, searchPassages, searchTerms } from './search-index.mjs';

const TOP_PASSAGES = 5;
const MAX_PASSAGE_CHARS = 1_500;
const MAX_QUESTION_CHARS = 1_000;
/** What of the run's time limit indexing may take: the rest is for the search, the answer and a model's. */
const INDEX_SHARE = 0.7;
/**
 * The weight of the share of the question a passage's file holds beside its BM25 (as a share of the best's): set on
 * the eval's training questions, where 0.1 to 0.3 all did best.
 */
const FILE_WEIGHT = 0.2;

async function openCorpus(corpus) {
  if (typeof corpus !== 'string' || !isAbsolute(corpus)) throw new InputError('corpus: must be an absolute path to a folder on this host');
  const info = await stat(corpus).catch(() => null);
  if (!info?.isDirectory()) throw new InputError(`corpus: no directory at ${corpus}`);
  return realpath(corpus);
}

function readQuestion(question) {
  if (typeof question !== 'string' || question.trim() === '') throw new InputError('question: must be a non-empty string');
  if (question.length > MAX_QUESTION_CHARS) throw new InputError(`question: must be at most ${MAX_QUESTION_CHARS} characters`);
  const terms = questionTerms(question);
  if (terms.length === 0) throw new InputError('question: has no words to search for');
  return { question: question.trim(), terms };
}

function cited(row) {
  return {
    citation: `${row.file}:${row.line_start}-${row.line_end}`,
    file: row.file,
    line_start: row.line_start,
    line_end: row.line_end,
    heading: row.heading,
    bm25: row.bm25,
    text: row.text.length > MAX_PASSAGE_CHARS ? `${row.text.slice(0, MAX_PASSAGE_CHARS)}…` : row.text,
    text_truncated: row.text.length > MAX_PASSAGE_CHARS,
  };
}

function summarise(answer, index) {
  const partial = index.complete ? '' : ` (from ${index.files} files indexed so far: run again for the rest)`;
  if (!answer.found) return `Not in this corpus: no passage of its ${index.files} files holds enough of the question.`;
  return `${answer.text.replace(/\s+/g, ' ').slice(0, 200)}${answer.text.length > 200 ? '…' : ''}\n(${answer.citations.map((c) => c.citation).join(', ')})${partial}`;
}

await runAgent('agent_research_rag_015', async (input) => {
  const started = Date.now();
  refuseUnknownFields(input, ['corpus', 'question']);
  const { question, terms } = readQuestion(input.question);
  const corpus = await openCorpus(input.corpus);
  const model = configuredModel();

  // One index per corpus, in the state directory when the node keeps one for this agent, else in the run's own
  // directory (rebuilt every run).
  const stateDir = process.env.SWARM_STATE_DIR;
  const indexDir = stateDir || process.env.TMPDIR || tmpdir();
  const db = openIndex(indexDir, `index-${createHash('sha256').update(corpus).digest('hex').slice(0, 16)}.sqlite`);
  try {
    const listing = await listCorpus(corpus);
    const index = await refreshIndex(db, listing, started + timeLimitMs() * INDEX_SHARE);
    if (index.files === 0 && index.complete) {
      throw new InputError(`corpus: ${corpus} holds no Markdown or text file this agent reads (.md, .markdown, .txt, .text${index.skipped > 0 ? `; ${index.skipped} skipped: unreadable, binary or over 2 MiB` : ''})`);
    }
    // A passage ranks by its BM25 and by how much of the question its whole file holds (evidence.mjs).
    const rows = searchPassages(db, searchTerms(question, terms), TOP_PASSAGES, { fileShare: (path) => evidenceOf(db, terms, path).score, fileWeight: FILE_WEIGHT });
    const evidence = evidenceOf(db, terms, rows[0]?.file ?? null);
    const found = evidence.found;
    if (!found && !index.complete) {
      // What is not indexed yet may hold it: saying "not in this corpus" now would be a guess, charged.
      throw new IncompleteRunError(`the index is still being built (${index.files} of ${listing.files.length} files so far) and holds no answer yet: run again to go on indexing`, `indexed ${index.added + index.updated} files this run`);
    }
    const passages = rows.map(cited);
    let answer;
    if (!found) {
      answer = { found: false, text: 'Not in this corpus.', evidence: evidence.score, unknown_words_share: evidence.unknown, missing_words: evidence.missing, citations: [], answered_by: 'search' };
    } else {
      const sources = passages.slice(0, 3);
      const written = model ? await modelAnswer(model, question, sources) : null;
      answer = {
        found: true,
        text: written?.text ?? extractAnswer(rows[0], terms),
        evidence: evidence.score,
        citations: (written?.cited ?? [passages[0]]).map(({ citation, file, line_start, line_end }) => ({ citation, file, line_start, line_end })),
        answered_by: written?.text ? 'model' : 'search',
        ...(written?.model ? { model: written.model } : {}),
        ...(written?.error ? { model_error: written.error } : {}),
      };
    }
    return {
      summary: summarise(answer, index),
      question,
      corpus,
      answer,
      passages: found ? passages : [],
      index: { ...index, kept_between_runs: Boolean(stateDir) },
      truncated: passages.some((passage) => passage.text_truncated),
    };
  } finally {
    db.close();
  }
});
