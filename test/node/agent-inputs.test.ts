// What the wizard asks for before an agent's first run: the inputs its input_schema cannot do without.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { inputFlag, inputFlagsOf, missingInputs } from '../../src/node/runs/agent-inputs.js';
import { REPO_ROOT } from '../helpers/svc-api.js';

const schemaOf = (agentId: string): Record<string, unknown> =>
  JSON.parse(readFileSync(join(REPO_ROOT, 'agents', agentId, 'agent.json'), 'utf8')).input_schema;

describe('missingInputs', () => {
  it('the reference agents: each required property with its description, and none for the ops monitor', () => {
    expect(missingInputs(schemaOf('agent_ops_monitor_004'), [])).toEqual([]);
    expect(missingInputs(schemaOf('agent_dev_review_012'), []).map((field) => field.name)).toEqual(['repo']);
    expect(missingInputs(schemaOf('agent_sales_outreach_008'), []).map((field) => field.name)).toEqual(['leads', 'template']);
    expect(missingInputs(schemaOf('agent_research_rag_015'), [])).toEqual([
      {
        name: 'corpus',
        description: "Absolute path of a folder of Markdown (.md, .markdown) and text (.txt, .text) files on the node's host.",
      },
      { name: 'question', description: 'The question, in plain words; search operators in it are read as text.' },
    ]);
  });

  it('given inputs are not asked again; optional ones given do not stand in for a required one', () => {
    expect(missingInputs(schemaOf('agent_research_rag_015'), ['corpus']).map((field) => field.name)).toEqual(['question']);
    expect(missingInputs(schemaOf('agent_research_rag_015'), ['corpus', 'question'])).toEqual([]);
    expect(missingInputs(schemaOf('agent_dev_review_012'), ['rev']).map((field) => field.name)).toEqual(['repo']);
  });

  it('minProperties beyond the required ones: the first string property, unless enough were given (the tutor: a question or a quiz)', () => {
    expect(missingInputs(schemaOf('agent_svc_skills_005'), []).map((field) => field.name)).toEqual(['question']);
    expect(missingInputs(schemaOf('agent_svc_skills_005'), ['quiz'])).toEqual([]);
    expect(missingInputs(schemaOf('agent_svc_skills_005'), ['question'])).toEqual([]);
    const schema = {
      properties: { count: { type: 'integer' }, a: { type: 'string' }, b: { type: 'string' } },
      required: ['b'],
      minProperties: 2,
    };
    expect(missingInputs(schema, []).map((field) => field.name)).toEqual(['b', 'a']);
  });

  it('a schema with no properties, no required list or no description still answers', () => {
    expect(missingInputs({ type: 'object' }, [])).toEqual([]);
    expect(missingInputs({ required: ['path'] }, [])).toEqual([{ name: 'path', description: 'path' }]);
    expect(missingInputs({ required: 'path', minProperties: 'x' }, [])).toEqual([]);
  });
});

describe('the flags that give inputs', () => {
  it('names a missing field as a usage line, and repeats given ones without their values', () => {
    expect(inputFlag({ name: 'repo', description: 'x' })).toBe('--input repo=<value>');
    expect(inputFlagsOf({ corpus: '/srv/docs', question: 'secret plans?' })).toBe(' --input corpus=… --input question=…');
    expect(inputFlagsOf(undefined)).toBe('');
  });
});
