// agent_svc_skills_005: a tutor over the private docs sections the user's tier unlocks. It answers a question with
// the fact that answers it and where it is written, gives a quiz drawn from the docs' facts, or grades a quiz's
// answers with explanations. See docs/sections/starter-agents.md.
import { existsSync } from 'node:fs';
import { InputError, refuseUnknownFields, runAgent } from './agent-io.mjs';
import { SECTIONS_BY_TIER, factsOf, passagesOf, readSection } from './docs.mjs';
import { configuredModel } from './model.mjs';
import { modelExplanation } from './model-explanation.mjs';
import { LETTERS, gradeQuiz, makeQuiz } from './quiz.mjs';
import { rankFacts } from './tutor.mjs';

const TOP_PASSAGES = 3;
const DEFAULT_QUIZ_QUESTIONS = 3;
const MAX_QUIZ_QUESTIONS = 10;

function readRequest(input) {
  refuseUnknownFields(input, ['question', 'quiz', 'grade']);
  const given = ['question', 'quiz', 'grade'].filter((key) => input[key] !== undefined);
  if (given.length !== 1) throw new InputError('input: give exactly one of "question", "quiz" and "grade"');
  if (input.question !== undefined) {
    if (typeof input.question !== 'string' || input.question.trim() === '' || input.question.length > 500) throw new InputError('question: must be a non-empty string of at most 500 characters');
    return { question: input.question.trim() };
  }
  if (input.grade !== undefined) {
    const { grade } = input;
    if (grade === null || typeof grade !== 'object' || typeof grade.quiz_id !== 'string' || !Array.isArray(grade.answers) || grade.answers.some((answer) => typeof answer !== 'string' || answer.length > 200)) {
      throw new InputError('grade: must be {"quiz_id": "<the quiz_id of a quiz>", "answers": ["A", "B", …]} (a letter or the answer\'s text each)');
    }
    return { grade };
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

/** The passage (paragraph, table, code block) that holds a fact: the context shown with an answer. */
function passageOf(doc, fact) {
  return passagesOf(doc).find((passage) => passage.line_start <= fact.line_start && passage.line_end >= fact.line_end) ?? { line_start: fact.line_start, line_end: fact.line_end, heading: fact.heading, text: fact.text };
}

async function answer(docs, question, model) {
  const facts = docs.flatMap(factsOf);
  const ranked = rankFacts(facts, question);
  if (ranked.length === 0) return null;
  const best = ranked[0];
  const passages = [];
  for (const fact of ranked) {
    const doc = docs.find((candidate) => candidate.section === fact.section);
    const passage = passageOf(doc, fact);
    if (passages.some((shown) => shown.citation.section === fact.section && shown.citation.line_start === passage.line_start)) continue;
    passages.push({ citation: citationOf({ ...passage, section: fact.section, file: fact.file }), score: fact.score, text: passage.text });
    if (passages.length === TOP_PASSAGES) break;
  }
  const explained = model ? await modelExplanation(model, question, best, passages) : null;
  return {
    answer: { text: best.text.slice(0, 400), citation: citationOf(best), ...(explained?.text ? { explanation: explained.text, model: explained.model } : {}), ...(explained?.error ? { model_error: explained.error } : {}) },
    passages,
    where: `${best.section} § ${best.heading ?? best.file}, lines ${best.line_start}-${best.line_end}`,
  };
}

await runAgent('agent_svc_skills_005', async (input, run) => {
  const request = readRequest(input);
  const { sections, docs, missing } = await unlockedDocs(run.tier);
  const base = { tier: run.tier, sections, ...(missing.length > 0 ? { missing_sections: missing } : {}) };
  const facts = docs.flatMap(factsOf);
  if (request.question !== undefined) {
    const found = await answer(docs, request.question, configuredModel());
    return {
      summary: found ? `${found.answer.text.slice(0, 240)}\n(${found.where})` : `Nothing in the sections your tier unlocks (${sections.join(', ')}) answers that; try other words.`,
      mode: 'answer',
      question: request.question,
      ...base,
      answer: found?.answer ?? null,
      passages: found?.passages ?? [],
    };
  }
  if (request.grade !== undefined) {
    const { results, right } = gradeQuiz(facts, docs, request.grade.quiz_id, request.grade.answers);
    return {
      summary: `${right} of ${results.length} right${results.some((result) => !result.correct) ? `; wrong: ${results.filter((result) => !result.correct).map((result) => `${result.number} (${result.answer})`).join(', ')}` : ''}.`,
      mode: 'grade',
      ...base,
      quiz_id: request.grade.quiz_id,
      score: { right, of: results.length },
      results,
    };
  }
  const { quiz_id, items, available } = makeQuiz(facts, docs, request.quiz, String(run.run_id ?? Date.now()));
  const short = items.length < request.quiz ? ` (only ${items.length} could be drawn)` : '';
  return {
    summary: `Quiz of ${items.length} question${items.length === 1 ? '' : 's'} from ${sections.join(', ')}${short}. Answer with {"grade": {"quiz_id": "${quiz_id}", "answers": [...]}}.`,
    mode: 'quiz',
    ...base,
    quiz_id,
    quiz: items.map((item, i) => ({ number: i + 1, kind: item.kind, question: item.question, choices: item.choices.map((choice, j) => `${LETTERS[j]}. ${choice}`), answer: item.answer, citation: citationOf(item.fact) })),
    drawn_from: available,
  };
});
