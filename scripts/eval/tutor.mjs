// agent_svc_skills_005's eval: questions about the product, each answered right when the answer cites the section
// that holds the fact and its text says it; and quizzes, whose every answer must be on the lines it cites.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, figure, heading, percent, readSet, runAgent, setParts } from './support.mjs';

const AGENT = 'agent_svc_skills_005';

/**
 * Right: the answer cites the section that holds the fact (README.md is section "README") and says it; for a
 * question nothing the user may read answers (`unanswerable`), it declines: no answer, or one that cites nothing.
 */
function isRight(item, answer) {
  if (item.unanswerable === true) return !answer?.citation;
  if (!answer?.citation || answer.citation.section !== item.section) return false;
  const text = answer.text.toLowerCase();
  return item.expect.some((expected) => text.includes(expected.toLowerCase()));
}

async function questionsPart(part) {
  const set = readSet(AGENT, part);
  let right = 0;
  let sectionRight = 0;
  let declined = 0;
  const wrong = [];
  for (const item of set.questions) {
    const run = await runAgent(AGENT, { question: item.question }, { tier: set.tier });
    const answer = run.json?.answer;
    if (item.unanswerable !== true && answer?.citation?.section === item.section) sectionRight++;
    if (isRight(item, answer)) {
      if (item.unanswerable === true) declined++;
      else right++;
    } else
      wrong.push(
        `${item.question} -> ${answer ? `${answer.citation?.section}: ${String(answer.text).slice(0, 90)}` : `exit ${run.exitCode}`}`,
      );
  }
  const unanswerable = set.questions.filter((item) => item.unanswerable === true).length;
  const n = set.questions.length - unanswerable;
  heading(`${AGENT} (${part}): ${n + unanswerable} questions about the product`);
  figure('answered right, with the section cited', `${right} of ${n}`, percent(right, n));
  figure('the right section cited', `${sectionRight} of ${n}`, percent(sectionRight, n));
  if (unanswerable > 0) figure('unanswerable ones declined', `${declined} of ${unanswerable}`, percent(declined, unanswerable));
  for (const line of wrong) process.stdout.write(`    wrong: ${line}\n`);
}

/** 20 quizzes of 10: is each answer written on the lines its citation names, and how many kinds of fact are asked. */
async function quizPart() {
  let items = 0;
  let onCitedLines = 0;
  const kinds = {};
  const questions = new Set();
  for (let i = 0; i < 20; i++) {
    const run = await runAgent(AGENT, { quiz: 10 });
    for (const item of run.json?.quiz ?? []) {
      items++;
      questions.add(item.question);
      kinds[item.kind] = (kinds[item.kind] ?? 0) + 1;
      const lines = readFileSync(join(REPO_ROOT, 'docs', 'sections', item.citation.file), 'utf8')
        .split('\n')
        .slice(item.citation.line_start - 1, item.citation.line_end)
        .join('\n');
      if (lines.replace(/[`*]/g, '').toLowerCase().includes(String(item.answer).replace(/[`*]/g, '').toLowerCase())) onCitedLines++;
    }
  }
  heading(`${AGENT} (quiz): 20 quizzes of 10 questions`);
  figure('answers written on the lines they cite', `${onCitedLines} of ${items}`, percent(onCitedLines, items));
  figure('distinct questions', questions.size);
  figure(
    'questions by kind',
    Object.entries(kinds)
      .map(([kind, count]) => `${kind} ${count}`)
      .join(', '),
  );
}

export async function evalTutor() {
  for (const part of setParts(AGENT)) await questionsPart(part);
  await quizPart();
}
