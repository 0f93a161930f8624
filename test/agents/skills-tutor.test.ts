// agent_svc_skills_005 over this repository's own docs sections: every citation must point at the real lines.
import { afterAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
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
    expect(out.answer.text).toMatch(/JWT/);
    expect(plainText(citedLines(out.answer.citation))).toContain(out.answer.text);
    const { section, heading, line_start, line_end } = out.passages[0].citation;
    expect(out.summary).toBe(`${out.answer.text}\n(${section} § ${heading}, lines ${line_start}-${line_end})`);
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

  it('gives a quiz whose every answer is written on the lines it cites', async () => {
    const run = await runAgentProcess(AGENT, { quiz: 8 }, { tier: 'svc_starter_agents' });
    expect(run.exitCode, run.stderr).toBe(0);
    const quiz = run.json.quiz as { number: number; kind: 'table' | 'cloze'; question: string; answer: string; citation: Citation }[];
    expect(quiz).toHaveLength(8);
    expect(run.json.summary).toBe('Quiz of 8 questions from starter-agents, node-install, agent-upload; answers included.');
    expect(new Set(quiz.map((item) => `${item.citation.file}:${item.citation.line_start}`)).size).toBe(8);
    for (const item of quiz) {
      const text = plainText(citedLines(item.citation));
      expect(run.json.sections).toContain(item.citation.section);
      expect(text, item.question).toContain(item.answer);
      if (item.kind === 'cloze') {
        expect(item.question).toMatch(/^Fill in the blank: .*_____/);
        expect(text).toContain(item.question.replace('Fill in the blank: ', '').replace('_____', item.answer));
      } else {
        expect(item.citation.line_start).toBe(item.citation.line_end);
        expect(text.startsWith('|')).toBe(true);
        // The row is named by its first cell, or its first two when the first repeats in the table.
        for (const cell of /for "(.*)"\?$/.exec(item.question)![1]!.split(', ')) expect(text).toContain(`| ${cell} |`);
      }
    }
    const three = await runAgentProcess(AGENT, { quiz: true }, { tier: 'svc_pay_wallet_fund' });
    expect(three.exitCode, three.stderr).toBe(0);
    expect(three.json.quiz).toHaveLength(3);
    for (const item of three.json.quiz) expect(item.citation.section).toBe('wallet-funding');
  });

  it('says so when the docs hold no answer', async () => {
    const run = await runAgentProcess(AGENT, { question: 'zygomorphic xylophones' }, { tier: 'svc_pay_wallet_fund' });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.json).toMatchObject({ answer: null, passages: [] });
    expect(run.json.summary).toBe('Nothing in the sections your tier unlocks (wallet-funding) answers that; try other words.');
  });

  it('refuses bad requests and an unknown tier with exit 2, and a node without docs with exit 1', async () => {
    for (const [input, message, options] of [
      [{ question: 'x', quiz: 3 }, 'give either "question" or "quiz"', {}],
      [{}, 'give either "question" or "quiz"', {}],
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
  });
});
