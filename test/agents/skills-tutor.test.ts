// agent_svc_skills_005 over this repository's own docs sections: every citation must point at the real lines.
import { afterAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TIERS, TIER_IDS } from '../../src/contract/tiers.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';
import { DOCS_SECTIONS_DIR, inputSchemaValidator, runAgentProcess } from './agent-process.js';

const AGENT = 'agent_svc_skills_005';

afterAll(() => removeTempDirs());

interface Citation {
  section: string;
  file: string;
  heading: string | null;
  line_start: number;
  line_end: number;
}

function citedLines(citation: Citation): string[] {
  expect(citation.file).toBe(`${citation.section}.md`);
  const lines = readFileSync(join(DOCS_SECTIONS_DIR, citation.file), 'utf8').split('\n');
  expect(citation.line_start).toBeGreaterThanOrEqual(1);
  expect(citation.line_end).toBeLessThanOrEqual(lines.length);
  return lines.slice(citation.line_start - 1, citation.line_end);
}

/** The cited lines as one line of plain text: list markers, `code` and **bold** marks gone, spaces collapsed. */
function plainText(lines: string[]): string {
  return lines
    .map((line) => line.replace(/^\s*(?:[-*+]|\d+[.)])\s+/, ''))
    .join(' ')
    .replace(/\*\*([^*]+)\*\*/g, '$1')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/\s+/g, ' ');
}

/** Each question answered, on the starter tier, from `section` with a text that matches. */
async function expectAnswers(cases: readonly (readonly [string, string, RegExp])[]): Promise<void> {
  for (const [question, section, expected] of cases) {
    const run = await runAgentProcess(AGENT, { question }, { tier: 'svc_starter_agents' });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.json.answer.citation.section, question).toBe(section);
    expect(run.json.answer.text, question).toMatch(expected);
  }
}

describe('agent_svc_skills_005', () => {
  it('answers a question from the unlocked sections, citing the passage and the sentence at their real lines', async () => {
    const run = await runAgentProcess(AGENT, { question: 'How long does the JWT live?' }, { tier: 'svc_starter_agents' });
    expect(run.exitCode, run.stderr).toBe(0);
    const out = run.json;
    expect(out).toMatchObject({ mode: 'answer', tier: 'svc_starter_agents', sections: ['starter-agents', 'node-install', 'agent-upload'] });
    expect(out.passages.length).toBeGreaterThan(0);
    for (const passage of out.passages as { citation: Citation; score: number; text: string }[]) {
      expect(out.sections).toContain(passage.citation.section);
      expect(passage.text).toBe(citedLines(passage.citation).join('\n'));
      expect(passage.score).toBeGreaterThan(0);
    }
    expect(out.passages[0].text).toContain('JWT');
    expect(out.answer.text).toMatch(/JWT.*30 days/);
    expect(plainText(citedLines(out.answer.citation))).toContain(out.answer.text);
    const { section, heading, line_start, line_end } = out.answer.citation;
    expect(out.summary).toBe(`${out.answer.text}\n(${section} § ${heading}, lines ${line_start}-${line_end})`);
  });

  it('answers with the kind of value a question asks for: a price, a path, what an exit code means, a command, a duration, a version', async () => {
    await expectAnswers([
      ['How much does one run of the dev review agent cost?', 'starter-agents', /price per run: \$0\.12/],
      ['Where is the node installed?', 'node-install', /\/opt\/svc\/swarm-node/],
      ['What does exit code 6 mean?', 'node-install', /^exit: 6; meaning: service unreachable/],
      ['How do I roll back my uploaded agent?', 'agent-upload', /swarm-node agent rollback/],
      ['How long is a deploy token valid?', 'node-install', /15 minutes/],
      ['Which version of Node.js runs an agent written in TypeScript?', 'agent-upload', /22\.18/],
      ['How do I start a new agent bundle?', 'agent-upload', /agent init/],
    ] as const);
  });

  it('answers with a code line read with its whole introducing sentence, a limit, a user account, and the labelled definition a "which X" question asks for', async () => {
    await expectAnswers([
      // The block's introducing sentence ("Every question has a flag, so it also runs unattended:") wraps over lines.
      ['How do I run the wizard unattended with a schedule?', 'starter-agents', /^swarm-node wizard --agent .* --every 1h/],
      ['How many files may a bundle hold?', 'agent-upload', /1000 files/],
      ["What user does the node's systemd unit run the daemon as?", 'node-install', /svc-swarm\b/],
      ['Which input does the sales outreach agent need?', 'starter-agents', /^Input: \{leads, template/],
      ['How do I give an agent a number as input?', 'starter-agents', /--input quiz=3 gives the number 3/],
    ] as const);
  });

  it("reads a code block's comment line as what the lines after it do, and a path relative to the node's home as a path", async () => {
    const docsDir = tempDir('tutor-docs-');
    writeFileSync(join(docsDir, 'starter-agents.md'), '# Agents\n\nThe agents run on the node.\n');
    writeFileSync(join(docsDir, 'agent-upload.md'), '# Upload\n\nUploaded bundles are kept small, and the node itself lives under /opt/demo.\n\nUploaded bundles are kept under `var/bundles/<digest>/`.\n');
    writeFileSync(join(docsDir, 'node-install.md'), ['# Install', '', 'From the package:', '', '```sh', 'sudo ./install.sh --token-file ./token', '# or, with the token in the environment:', 'DEMO_TOKEN=... sudo ./install.sh', '```', ''].join('\n'));
    const environment = await runAgentProcess(AGENT, { question: 'How do I install with the token in the environment?' }, { tier: 'svc_starter_agents', docsDir });
    expect(environment.exitCode, environment.stderr).toBe(0);
    expect(environment.json.answer).toMatchObject({ text: 'DEMO_TOKEN=... sudo ./install.sh', citation: { section: 'node-install', line_start: 8 } });
    const where = await runAgentProcess(AGENT, { question: 'Where are uploaded bundles kept?' }, { tier: 'svc_starter_agents', docsDir });
    expect(where.exitCode, where.stderr).toBe(0);
    expect(where.json.answer.text).toContain('var/bundles/<digest>/');
  });

  it('answers from a table with the row that fits, by its column names', async () => {
    const run = await runAgentProcess(AGENT, { question: 'What is the default disk warning threshold?' }, { tier: 'svc_starter_agents' });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.json.answer.text).toBe('threshold: disk_warning_percent; default: 80');
    expect(run.json.answer.citation).toMatchObject({ section: 'starter-agents', line_start: run.json.answer.citation.line_end });
    expect(citedLines(run.json.answer.citation)[0]).toMatch(/^\| `disk_warning_percent` \| 80 \|$/);
  });

  it('reads only the sections the run\'s tier unlocks, as the contract lists them', async () => {
    for (const tier of TIER_IDS) {
      const run = await runAgentProcess(AGENT, { question: 'How long does the JWT live and how is the wallet funded?' }, { tier });
      expect(run.exitCode, run.stderr).toBe(0);
      expect(run.json.sections).toEqual(TIERS[tier].docs_sections);
      for (const passage of run.json.passages as { citation: Citation }[]) expect(TIERS[tier].docs_sections).toContain(passage.citation.section);
    }
  });

  it('gives a quiz of questions drawn from facts, each with choices of its kind and its answer on the lines it cites, and grades it', async () => {
    const run = await runAgentProcess(AGENT, { quiz: 8 }, { tier: 'svc_starter_agents' });
    expect(run.exitCode, run.stderr).toBe(0);
    const quiz = run.json.quiz as { number: number; kind: string; question: string; choices: string[]; answer: string; citation: Citation }[];
    expect(quiz).toHaveLength(8);
    expect(run.json.quiz_id).toMatch(/\.8\.[0-9a-f]{8}$/);
    expect(run.json.summary).toBe(`Quiz of 8 questions from starter-agents, node-install, agent-upload. Answer with {"grade": {"quiz_id": "${run.json.quiz_id}", "answers": [...]}}.`);
    expect(new Set(quiz.map((item) => `${item.citation.file}:${item.citation.line_start}`)).size).toBe(8);
    for (const item of quiz) {
      expect(['price', 'exit_code', 'default', 'command', 'layout', 'limit']).toContain(item.kind);
      expect(item.choices.length).toBeGreaterThanOrEqual(2);
      expect(item.choices.map((choice) => choice.slice(3))).toContain(item.answer);
      expect(new Set(item.choices.map((choice) => choice.slice(3))).size).toBe(item.choices.length);
      expect(plainText(citedLines(item.citation)).replace(/\\\|/g, '|'), item.question).toContain(item.answer);
      // Never the word of the question itself blanked out: a question names what it asks.
      expect(item.question).not.toMatch(/\bquiz\b.*_____|_____.*\bquiz\b/);
    }

    // Grading: the first answered by its letter, the second by its text, the rest wrongly.
    const letterOf = (item: (typeof quiz)[number]) => item.choices.find((choice) => choice.slice(3) === item.answer)!.slice(0, 1);
    const wrong = (item: (typeof quiz)[number]) => item.choices.find((choice) => choice.slice(3) !== item.answer)!.slice(0, 1);
    const answers = quiz.map((item, i) => (i === 0 ? letterOf(item) : i === 1 ? item.answer : wrong(item)));
    const graded = await runAgentProcess(AGENT, { grade: { quiz_id: run.json.quiz_id, answers } }, { tier: 'svc_starter_agents' });
    expect(graded.exitCode, graded.stderr).toBe(0);
    expect(graded.json).toMatchObject({ mode: 'grade', score: { right: 2, of: 8 } });
    expect(graded.json.summary).toMatch(/^2 of 8 right; wrong: 3 \(/);
    for (const result of graded.json.results) {
      expect(result.question).toBe(quiz[result.number - 1]!.question);
      expect(result.explanation.length).toBeGreaterThan(0);
      expect(result.citation).toEqual(quiz[result.number - 1]!.citation);
    }

    const three = await runAgentProcess(AGENT, { quiz: true }, { tier: 'svc_starter_agents' });
    expect(three.exitCode, three.stderr).toBe(0);
    expect(three.json.quiz).toHaveLength(3);
  });

  it('says so when the docs hold no answer', async () => {
    const run = await runAgentProcess(AGENT, { question: 'zygomorphic xylophones' }, { tier: 'svc_pay_wallet_fund' });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.json).toMatchObject({ answer: null, passages: [] });
    expect(run.json.summary).toBe('Nothing in the sections your tier unlocks (wallet-funding) answers that; try other words.');
  });

  it('refuses bad requests and an unknown tier with exit 2, and a node without docs with exit 1', async () => {
    for (const [input, message, options] of [
      [{ question: 'x', quiz: 3 }, 'give exactly one of "question", "quiz" and "grade"', {}],
      [{}, 'give exactly one of "question", "quiz" and "grade"', {}],
      [{ grade: { quiz_id: 'nope', answers: [] } }, 'grade.quiz_id: not a quiz id', {}],
      [{ grade: { quiz_id: 'abc.3.00000000', answers: ['A', 'B', 'C'] } }, 'grade.quiz_id: the docs changed since this quiz was drawn', {}],
      [{ grade: { answers: ['A'] } }, 'grade: must be {"quiz_id"', {}],
      [{ quiz: 11 }, 'quiz: must be true or a number of questions from 1 to 10', {}],
      [{ quiz: false }, 'quiz: must be true', {}],
      [{ question: '   ' }, 'question: must be a non-empty string', {}],
      [{ question: 'x' }, 'tier: "enterprise" unlocks no docs sections', { tier: 'enterprise' }],
    ] as const) {
      const run = await runAgentProcess(AGENT, input, options);
      expect(run.exitCode, JSON.stringify(input)).toBe(2);
      expect(run.stderr).toContain(message);
      expect(run.stdout).toBe('');
    }
    const noDocs = await runAgentProcess(AGENT, { question: 'x' }, { docsDir: join(tempDir('tutor-'), 'missing') });
    expect(noDocs.exitCode).toBe(1);
    expect(noDocs.stderr).toContain('is not a readable docs directory');
    expect(noDocs.stdout).toBe('');
  });

  it('has an input_schema that takes the documented inputs and refuses others', () => {
    const valid = inputSchemaValidator(AGENT);
    expect(valid({ question: 'How do I upgrade?' })).toBe(true);
    expect(valid({ quiz: 5 })).toBe(true);
    expect(valid({ quiz: true })).toBe(true);
    expect(valid({})).toBe(false);
    expect(valid({ question: 'x', quiz: 2 })).toBe(false);
    expect(valid({ quiz: 0 })).toBe(false);
    expect(valid({ quiz: 11 })).toBe(false);
    expect(valid({ quiz: false })).toBe(false);
    expect(valid({ quiz: 2.5 })).toBe(false);
    expect(valid({ question: '' })).toBe(false);
    expect(valid({ topic: 'billing' })).toBe(false);
    expect(valid({ grade: { quiz_id: 'r1.3.0a1b2c3d', answers: ['A', 'B', 'C'] } })).toBe(true);
    expect(valid({ grade: { quiz_id: 'r1.3.0a1b2c3d' } })).toBe(false);
    expect(valid({ grade: { quiz_id: 'r1', answers: [1] } })).toBe(false);
  });
});
