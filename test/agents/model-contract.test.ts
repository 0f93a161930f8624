// The contract test of the agents' language-model client (agents/*/model.mjs, the maintained `openai` client): an
// OpenAI-compatible HTTP server started here (the shape llama.cpp's server, Ollama and vLLM answer) stands for the
// host's model. Each agent that uses one sends it a chat completion with the configured model's name and key, says
// in its answer which model answered, withholds what must not leave the host, and answers without it when it fails.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { removeTempDirs, tempDir } from '../helpers/temp.js';
import { runAgentProcess } from './agent-process.js';

interface Received {
  path: string;
  authorization: string | undefined;
  body: { model: string; messages: { role: string; content: string }[]; max_tokens?: number };
}

let server: Server;
let baseUrl: string;
const received: Received[] = [];
/** What the next answers are: a text, or an HTTP status to fail with. */
let reply: { text: string } | { status: number } = { text: 'A model wrote this [1].' };

async function bodyOf(request: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of request) text += chunk;
  return text;
}

beforeAll(async () => {
  server = createServer(async (request, response) => {
    const body = JSON.parse(await bodyOf(request)) as Received['body'];
    received.push({ path: request.url ?? '', authorization: request.headers.authorization, body });
    if ('status' in reply) {
      response.writeHead(reply.status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'the model is loading', type: 'server_error' } }));
      return;
    }
    // The answer names the model that answered, as servers do (a local server may serve another than asked).
    response.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        id: 'chatcmpl-1',
        object: 'chat.completion',
        created: 1767225600,
        model: `${body.model}-q4`,
        choices: [{ index: 0, message: { role: 'assistant', content: reply.text }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  removeTempDirs();
});

const modelSecrets = (key?: string) => ({ OPENAI_BASE_URL: baseUrl, OPENAI_MODEL: 'local-llama', ...(key === undefined ? {} : { OPENAI_API_KEY: key }) });

describe('the agents with a model the host serves (OpenAI-compatible)', () => {
  it('RAG writes its answer with the model from the passages it found, citing them, and names the model', async () => {
    const corpus = tempDir('model-corpus-');
    writeFileSync(join(corpus, 'keys.md'), '# Keys\n\nThe spare key hangs in the shed behind the house.\n');
    reply = { text: 'The spare key is in the shed [1].' };
    received.length = 0;
    const run = await runAgentProcess('agent_research_rag_015', { corpus, question: 'Where is the spare key?' }, { env: modelSecrets('sk-local-test') });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.json.answer).toMatchObject({ found: true, answered_by: 'model', model: 'local-llama-q4', text: 'The spare key is in the shed [1].', citations: [{ citation: 'keys.md:1-3' }] });
    expect(received).toHaveLength(1);
    expect(received[0]!.path).toBe('/v1/chat/completions');
    expect(received[0]!.authorization).toBe('Bearer sk-local-test');
    expect(received[0]!.body.model).toBe('local-llama');
    expect(received[0]!.body.messages.at(-1)!.content).toContain('[1] keys.md:1-3\n# Keys');
    expect(received[0]!.body.messages.at(-1)!.content).toContain('Question: Where is the spare key?');
    // Not in the corpus: the model is not asked to make something up.
    received.length = 0;
    const none = await runAgentProcess('agent_research_rag_015', { corpus, question: 'What is the capital of France?' }, { env: modelSecrets('sk-local-test') });
    expect(none.json.answer.found).toBe(false);
    expect(received).toEqual([]);
  });

  it('the tutor explains with the model beside the cited fact; the review sends the change with every secret line withheld', async () => {
    reply = { text: 'Run swarm-node agent rollback.' };
    received.length = 0;
    const tutor = await runAgentProcess('agent_svc_skills_005', { question: 'How do I roll back my uploaded agent?' }, { env: modelSecrets() });
    expect(tutor.exitCode, tutor.stderr).toBe(0);
    expect(tutor.json.answer).toMatchObject({ citation: { section: 'agent-upload' }, explanation: 'Run swarm-node agent rollback.', model: 'local-llama-q4' });
    // No key configured (a local server): the client sends a placeholder, never another secret.
    expect(received[0]!.authorization).toBe('Bearer none');

    const repo = tempDir('model-repo-');
    const git = (...args: string[]) => execa('git', ['-c', 'user.name=T', '-c', 'user.email=t@example.com', '-c', 'init.defaultBranch=main', ...args], { cwd: repo, env: { HOME: repo } });
    await git('init', '-q');
    const token = ['ghp', 'Zx9aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3'].join('_');
    mkdirSync(join(repo, 'src'));
    writeFileSync(join(repo, 'src', 'a.js'), `export const token = '${token}';\nexport function add(a, b) { return a - b; }\n`);
    await git('add', '.');
    await git('commit', '-q', '-m', 'add');
    reply = { text: 'src/a.js:2 add subtracts: use a + b.' };
    received.length = 0;
    const review = await runAgentProcess('agent_dev_review_012', { repo }, { env: modelSecrets('sk-review') });
    expect(review.exitCode, review.stderr).toBe(0);
    expect(review.json.model_review).toEqual({ text: 'src/a.js:2 add subtracts: use a + b.', model: 'local-llama-q4' });
    const sent = JSON.stringify(received[0]!.body);
    expect(sent).toContain('2: export function add(a, b) { return a - b; }');
    expect(sent).toContain('1: [line withheld: it holds a secret]');
    expect(sent).not.toContain(token.slice(4));
  });

  it('outreach asks for a better template once, with no lead in it; a model that fails leaves each answer standing and says why', async () => {
    const leads = join(tempDir('model-leads-'), 'leads.csv');
    writeFileSync(leads, 'email,name\nann@example.com,Ann\nbo@example.com,Bo\n');
    reply = { text: 'Subject: Hi {{name}}\n\nHello {{name}}.' };
    received.length = 0;
    const outreach = await runAgentProcess('agent_sales_outreach_008', { leads, template: 'Hi {{name}}, we sell things.' }, { env: modelSecrets() });
    expect(outreach.exitCode, outreach.stderr).toBe(0);
    expect(outreach.json.template_suggestion).toEqual({ text: 'Subject: Hi {{name}}\n\nHello {{name}}.', model: 'local-llama-q4' });
    expect(received).toHaveLength(1);
    expect(JSON.stringify(received[0]!.body)).not.toContain('ann@example.com');

    reply = { status: 503 };
    const corpus = tempDir('model-corpus-');
    writeFileSync(join(corpus, 'keys.md'), '# Keys\n\nThe spare key hangs in the shed behind the house.\n');
    const rag = await runAgentProcess('agent_research_rag_015', { corpus, question: 'Where is the spare key?' }, { env: modelSecrets() });
    expect(rag.exitCode, rag.stderr).toBe(0);
    expect(rag.json.answer).toMatchObject({ found: true, answered_by: 'search', text: 'The spare key hangs in the shed behind the house.' });
    expect(rag.json.answer.model_error).toMatch(/^local-llama at 127\.0\.0\.1:\d+: 503/);

    const bad = await runAgentProcess('agent_research_rag_015', { corpus, question: 'Where is the spare key?' }, { env: { OPENAI_BASE_URL: 'not a url', OPENAI_MODEL: 'x' } });
    expect(bad.exitCode).toBe(1);
    expect(bad.stderr).toContain('the secret OPENAI_BASE_URL is not a URL');
  });
});
