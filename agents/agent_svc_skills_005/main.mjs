// agent_svc_skills_005: a tutor over the private docs sections the user's tier unlocks. It answers a question
// with cited passages, or gives a short quiz drawn from the docs. See docs/sections/starter-agents.md.
import { existsSync } from 'node:fs';
import { InputError, refuseUnknownFields, runAgent } from './agent-io.mjs';
import { SECTIONS_BY_TIER, passagesOf, plain, readSection, tableRows } from './docs.mjs';
import { bestSentence, makeQuiz, rankPassages, terms } from './tutor.mjs';

const TOP_PASSAGES = 3;
const DEFAULT_QUIZ_QUESTIONS = 3;
const MAX_QUIZ_QUESTIONS = 10;

function readRequest(input) {
  refuseUnknownFields(input, ['question', 'quiz']);
  if ((input.question === undefined) === (input.quiz === undefined)) throw new InputError('input: give either "question" or "quiz", not both or neither');
  if (input.question !== undefined) {
    if (typeof input.question !== 'string' || input.question.trim() === '' || input.question.length > 500) throw new InputError('question: must be a non-empty string of at most 500 characters');
    return { question: input.question.trim() };
  }
  if (input.quiz === true) return { quiz: DEFAULT_QUIZ_QUESTIONS };
  if (!Number.isInteger(input.quiz) || input.quiz < 1 || input.quiz > MAX_QUIZ_QUESTIONS) throw new InputError(`quiz: must be true or a number of questions from 1 to ${MAX_QUIZ_QUESTIONS}`);
  return { quiz: input.quiz };
}

/** The unlocked sections that exist in this package's docs; the tier comes from the run, never from the input. */
async function unlockedDocs(tier) {
  const sections = SECTIONS_BY_TIER[tier];
  if (!sections) throw new InputError(`tier: "${tier}" unlocks no docs sections (known tiers: ${Object.keys(SECTIONS_BY_TIER).join(', ')})`);
  const docsDir = process.env.SWARM_DOCS_DIR;
  if (!docsDir || !existsSync(docsDir)) throw new Error(`SWARM_DOCS_DIR (${docsDir ?? 'unset'}) is not a readable docs directory: the node must point it at its package's docs/sections`);
  const docs = [];
  const missing = [];
  for (const section of sections) {
    try {
      docs.push(await readSection(docsDir, section));
    } catch (error) {
      if (error.code !== 'ENOENT') throw error;
      missing.push(section);
    }
  }
  return { sections, docs, missing };
}

function citationOf(item) {
  return { section: item.section, file: item.file, heading: item.heading, line_start: item.line_start, line_end: item.line_end };
}

/**
 * In a passage without sentences (a code block, a table), the line sharing most words with the question; a table
 * row is given with its column names ("threshold: disk_warning_percent; default: 80").
 */
function bestLine(doc, passage, question) {
  const wanted = new Set(terms(question));
  const rows = new Map(tableRows(doc).map((row) => [row.line, row]));
  let best = null;
  for (let number = passage.line_start; number <= passage.line_end; number++) {
    const text = doc.lines[number - 1].trim();
    // Not blank lines, headings, fences, nor a table's header and rule rows (a row is asked by its cells).
    if (text === '' || /^(?:#|```|~~~)/.test(text) || (text.startsWith('|') && !rows.has(number))) continue;
    const overlap = new Set(terms(text).filter((term) => wanted.has(term))).size;
    if (best === null || overlap > best.overlap) best = { number, text, overlap };
  }
  if (best === null) return { text: doc.lines[passage.line_start - 1].trim(), line_start: passage.line_start, line_end: passage.line_start, heading: passage.heading };
  const row = rows.get(best.number);
  const text = row ? row.headers.map((header, i) => `${plain(header)}: ${plain(row.cells[i] ?? '')}`).join('; ') : best.text;
  return { text, line_start: best.number, line_end: best.number, heading: passage.heading };
}

function answer(docs, question) {
  const passages = docs.flatMap((doc) => passagesOf(doc).map((passage) => ({ ...passage, section: doc.section, file: doc.file })));
  const ranked = rankPassages(passages, question).slice(0, TOP_PASSAGES);
  if (ranked.length === 0) return { summary: null, answer: null, passages: [] };
  const best = ranked[0];
  const doc = docs.find((candidate) => candidate.section === best.section);
  const line = bestSentence(doc, best, question) ?? bestLine(doc, best, question);
  const where = `${best.section} § ${best.heading ?? best.file}, lines ${best.line_start}-${best.line_end}`;
  const text = plain(line.text).slice(0, 240);
  return {
    summary: `${text}\n(${where})`,
    answer: { text, citation: citationOf({ ...line, section: best.section, file: best.file }) },
    passages: ranked.map((passage) => ({ citation: citationOf(passage), score: passage.score, text: passage.text })),
  };
}

await runAgent('agent_svc_skills_005', async (input, run) => {
  const request = readRequest(input);
  const { sections, docs, missing } = await unlockedDocs(run.tier);
  const base = { tier: run.tier, sections, ...(missing.length > 0 ? { missing_sections: missing } : {}) };
  if (request.question !== undefined) {
    const found = answer(docs, request.question);
    return {
      summary: found.summary ?? `Nothing in the sections your tier unlocks (${sections.join(', ')}) answers that; try other words.`,
      mode: 'answer',
      question: request.question,
      ...base,
      answer: found.answer,
      passages: found.passages,
    };
  }
  const { quiz, available } = makeQuiz(docs, request.quiz, String(run.run_id ?? Date.now()));
  const short = quiz.length < request.quiz ? ` (only ${quiz.length} could be drawn)` : '';
  return {
    summary: `Quiz of ${quiz.length} question${quiz.length === 1 ? '' : 's'} from ${sections.join(', ')}${short}; answers included.`,
    mode: 'quiz',
    ...base,
    quiz: quiz.map((item, i) => ({ number: i + 1, kind: item.kind, question: item.question, answer: item.answer, citation: citationOf(item) })),
    drawn_from: available,
  };
});
