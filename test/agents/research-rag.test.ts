// agent_research_rag_015 over a Markdown corpus made here, whose answers sit in known files and lines.
import { afterAll, describe, expect, it } from 'vitest';
import { mkdirSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { removeTempDirs, tempDir } from '../helpers/temp.js';
import { inputSchemaValidator, runAgentProcess } from './agent-process.js';

const AGENT = 'agent_research_rag_015';

afterAll(() => removeTempDirs());

interface Passage {
  citation: string;
  file: string;
  line_start: number;
  line_end: number;
  heading: string | null;
  bm25: number;
  text: string;
}

function makeCorpus(): string {
  const corpus = tempDir('rag-corpus-');
  mkdirSync(join(corpus, 'guides'));
  mkdirSync(join(corpus, '.git'));
  writeFileSync(join(corpus, 'guides', 'backup.md'), [
    '# Backups', // 1
    '', // 2
    'Nightly snapshots are taken at 02:00 UTC.', // 3
    '', // 4
    '## Restoring', // 5
    '', // 6
    'To restore a snapshot, stop the writer first,', // 7
    'then copy the snapshot over the data directory', // 8
    'and start the writer again.', // 9
    '', // 10
    '```sh', // 11
    'systemctl stop writer', // 12
    '', // 13
    'systemctl start writer', // 14
    '```', // 15
    '',
  ].join('\n'));
  writeFileSync(join(corpus, 'guides', 'network.md'), ['# Network', '', 'The proxy listens on port 3128 and forwards to the gateway.', ''].join('\n'));
  writeFileSync(join(corpus, 'faq.txt'), ['Frequently asked', '', 'Snapshots are kept for fourteen days before they are pruned.', ''].join('\n'));
  writeFileSync(join(corpus, 'image.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47]));
  writeFileSync(join(corpus, '.git', 'notes.md'), 'restore snapshot restore snapshot restore snapshot\n');
  return corpus;
}

function linesOf(corpus: string, passage: Passage): string {
  return readFileSync(join(corpus, passage.file), 'utf8').split('\n').slice(passage.line_start - 1, passage.line_end).join('\n');
}

interface Answer {
  found: boolean;
  text: string;
  evidence: number;
  citations: { citation: string; file: string; line_start: number; line_end: number }[];
  answered_by: string;
}

describe('agent_research_rag_015', () => {
  it('answers from the file and lines that hold the answer, citing them, with the passages it searched', async () => {
    const corpus = makeCorpus();
    const run = await runAgentProcess(AGENT, { corpus, question: 'How do I restore a snapshot?' }, { stateDir: tempDir('rag-state-') });
    expect(run.exitCode, run.stderr).toBe(0);
    const answer = run.json.answer as Answer;
    expect(answer).toMatchObject({ found: true, answered_by: 'search', citations: [{ citation: 'guides/backup.md:5-15', file: 'guides/backup.md', line_start: 5, line_end: 15 }] });
    expect(answer.text).toBe('To restore a snapshot, stop the writer first, then copy the snapshot over the data directory and start the writer again.');
    expect(run.json.summary).toBe(`${answer.text}\n(guides/backup.md:5-15)`);
    const passages = run.json.passages as Passage[];
    expect(passages[0]).toMatchObject({ file: 'guides/backup.md', line_start: 5, line_end: 15, heading: 'Restoring' });
    for (const passage of passages) expect(passage.text).toBe(linesOf(corpus, passage)); // every citation points at exactly those lines
    expect(passages.some((passage) => passage.file === 'faq.txt')).toBe(true); // "snapshots" stems to "snapshot"
    expect(passages.some((passage) => passage.file.startsWith('.git'))).toBe(false);
    expect(run.json.index).toMatchObject({ added: 3, updated: 0, removed: 0, files: 3, complete: true, kept_between_runs: true });

    // Without a state directory the index is the run's own.
    const again = await runAgentProcess(AGENT, { corpus, question: 'Which port does the proxy listen on?' });
    expect(again.json.index).toMatchObject({ added: 3, kept_between_runs: false });
    expect(again.json.answer).toMatchObject({ found: true, text: 'The proxy listens on port 3128 and forwards to the gateway.', citations: [{ citation: 'guides/network.md:1-3' }] });
  });

  it('answers "not in this corpus", with no passages, when the corpus does not hold what the question asks', async () => {
    const corpus = makeCorpus();
    for (const question of ['What is the capital of France?', 'How do I tune the garbage collector of the JVM?', 'NEAR(']) {
      const run = await runAgentProcess(AGENT, { corpus, question });
      expect(run.exitCode, run.stderr).toBe(0);
      expect(run.json.answer, question).toMatchObject({ found: false, text: 'Not in this corpus.', citations: [] });
      expect(run.json.passages).toEqual([]);
      expect(run.json.summary).toBe('Not in this corpus: no passage of its 3 files holds enough of the question.');
    }
    // In a folder of three notes, a word the question asks with ("how long") does not outweigh the ones it asks about.
    const kept = await runAgentProcess(AGENT, { corpus, question: 'How long are snapshots kept?' });
    expect(kept.json.answer).toMatchObject({ found: true, citations: [{ file: 'faq.txt' }] });
    expect(kept.json.answer.text).toContain('Snapshots are kept for fourteen days before they are pruned.');
  });

  it('finds a camelCase identifier by its words, which a passage of another file that names them in prose does not outrank', async () => {
    const corpus = tempDir('rag-corpus-');
    writeFileSync(join(corpus, 'client.md'), [
      '# client', // 1
      '', // 2
      'Connections are pooled per origin.', // 3
      '', // 4
      '```js', // 5
      'const agent = new Agent({ keepAliveTimeout: 10000 });', // 6
      '```', // 7
      '',
    ].join('\n'));
    writeFileSync(join(corpus, 'ops.md'), ['# Operations', '', 'A keep-alive timeout of the proxy is set in its config, and an agent of the proxy keeps a timeout per agent.', ''].join('\n'));
    const stateDir = tempDir('rag-state-');

    const camel = await runAgentProcess(AGENT, { corpus, question: 'How do I set a keep-alive timeout on a client Agent?' }, { stateDir });
    expect(camel.exitCode, camel.stderr).toBe(0);
    expect(camel.json.answer).toMatchObject({ found: true, citations: [{ file: 'client.md' }] });
  });

  it('keeps its index in the state directory and refreshes only what changed, dropping removed files', async () => {
    const corpus = makeCorpus();
    const stateDir = tempDir('rag-state-');
    const first = await runAgentProcess(AGENT, { corpus, question: 'proxy port' }, { stateDir });
    expect(first.exitCode, first.stderr).toBe(0);
    expect(first.json.passages[0]).toMatchObject({ file: 'guides/network.md', line_start: 1, line_end: 3 });
    expect(readdirSync(stateDir).some((name) => /^index-[0-9a-f]{16}\.sqlite$/.test(name))).toBe(true);

    const again = await runAgentProcess(AGENT, { corpus, question: 'proxy port' }, { stateDir });
    expect(again.json.index).toMatchObject({ added: 0, updated: 0, removed: 0, unchanged: 3 });

    writeFileSync(join(corpus, 'guides', 'network.md'), ['# Network', '', 'Intro.', '', 'The proxy now listens on port 8080.', ''].join('\n'));
    utimesSync(join(corpus, 'guides', 'network.md'), new Date(), new Date(Date.now() + 5_000));
    rmSync(join(corpus, 'faq.txt'));
    writeFileSync(join(corpus, 'guides', 'dns.md'), '# DNS\n\nResolvers are 10.0.0.53 and 10.0.1.53.\n');
    const changed = await runAgentProcess(AGENT, { corpus, question: 'proxy port' }, { stateDir });
    expect(changed.exitCode, changed.stderr).toBe(0);
    expect(changed.json.index).toMatchObject({ added: 1, updated: 1, removed: 1, unchanged: 1, files: 3 });
    expect(changed.json.answer).toMatchObject({ found: true, text: 'The proxy now listens on port 8080.', citations: [{ citation: 'guides/network.md:1-5' }] });
    const pruned = await runAgentProcess(AGENT, { corpus, question: 'fourteen days pruned' }, { stateDir });
    expect(pruned.json.answer.found).toBe(false);
  });

  it('goes on indexing a large corpus run after run, refunding a run that has no answer yet', async () => {
    const corpus = tempDir('rag-large-');
    for (let i = 0; i < 400; i++) writeFileSync(join(corpus, `note-${String(i).padStart(3, '0')}.md`), `# Note ${i}\n\nRoutine entry number ${i} about the weather.\n`);
    writeFileSync(join(corpus, 'zz-answer.md'), '# Keys\n\nThe spare key hangs in the shed behind the house.\n');
    const stateDir = tempDir('rag-state-');
    // A time limit too short for any file: the index is started, the question cannot be answered yet.
    const cut = await runAgentProcess(AGENT, { corpus, question: 'Where is the spare key?' }, { stateDir, env: { SWARM_TIMEOUT_SECONDS: '0.001' } });
    expect(cut.exitCode).toBe(3);
    expect(cut.stdout).toBe('');
    expect(cut.stderr).toMatch(/the index is still being built \(\d+ of 401 files so far\) and holds no answer yet: run again to go on indexing$/);
    const done = await runAgentProcess(AGENT, { corpus, question: 'Where is the spare key?' }, { stateDir });
    expect(done.exitCode, done.stderr).toBe(0);
    expect(done.json.index).toMatchObject({ files: 401, complete: true });
    expect(done.json.answer).toMatchObject({ found: true, citations: [{ file: 'zz-answer.md' }] });
  });

  it('reads a file that is not UTF-8 as Windows-1252, and skips binary files', async () => {
    const corpus = tempDir('rag-encodings-');
    writeFileSync(join(corpus, 'legacy.txt'), Buffer.from('The caf\xe9 on the corner opens at seven, s\xe9ance or not.\n', 'latin1'));
    writeFileSync(join(corpus, 'blob.md'), Buffer.from([0x23, 0x20, 0x00, 0x01, 0x02]));
    const run = await runAgentProcess(AGENT, { corpus, question: 'When does the café open?' });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.json.answer).toMatchObject({ found: true, text: 'The café on the corner opens at seven, séance or not.' });
    expect(run.json.index).toMatchObject({ files: 1, skipped: 1 });
  });

  it('indexes a file cut inside a code fence, blank lines to its end (a window of a longer text), and answers from the others', async () => {
    const corpus = tempDir('rag-open-fence-');
    writeFileSync(join(corpus, 'cut.md'), `# Setup\n\n\`\`\`sh\nnpm install\n\`\`\`\n\n\`\`\`\n${'\n'.repeat(100)}`);
    writeFileSync(join(corpus, 'pool.md'), '# Pool\n\nThe connection pool holds ten connections unless its size is set.\n');
    const run = await runAgentProcess(AGENT, { corpus, question: 'How many connections does the pool hold?' });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.json.answer).toMatchObject({ found: true });
    expect(run.json.index).toMatchObject({ files: 2 });
  });

  it('reads FTS5 operators in the question as plain words', async () => {
    const corpus = makeCorpus();
    for (const question of ['"*', 'NEAR(', 'restore NEAR(snapshot', 'body: restore OR "* ) AND NOT (', "restore' --", 'snap*']) {
      const run = await runAgentProcess(AGENT, { corpus, question });
      if (question === '"*') {
        expect(run.exitCode).toBe(2);
        expect(run.stderr).toContain('question: has no words to search for');
        expect(run.stdout).toBe('');
        continue;
      }
      expect(run.exitCode, `${question}: ${run.stderr}`).toBe(0);
      expect(run.json.question).toBe(question.trim());
    }
    // A prefix query would find "snapshots"; the star is not one.
    const star = await runAgentProcess(AGENT, { corpus, question: 'snap*' });
    expect(star.json.answer.found).toBe(false);
  });

  it('refuses a missing corpus or question with exit 2 and nothing on stdout', async () => {
    const missing = join(tempDir('rag-none-'), 'nope');
    for (const [input, message] of [
      [{ corpus: missing, question: 'anything' }, `corpus: no directory at ${missing}`],
      [{ corpus: 'docs', question: 'anything' }, 'corpus: must be an absolute path'],
      [{ corpus: makeCorpus() }, 'question: must be a non-empty string'],
      [{ corpus: makeCorpus(), question: 'x', top: 3 }, 'unknown field "top"'],
      [{ corpus: tempDir('rag-empty-'), question: 'anything' }, 'holds no Markdown or text file this agent reads'],
    ] as const) {
      const run = await runAgentProcess(AGENT, input);
      expect(run.exitCode).toBe(2);
      expect(run.stderr).toContain(message);
      expect(run.stdout).toBe('');
    }
  });

  it('has an input_schema that takes the documented inputs and refuses others', () => {
    const valid = inputSchemaValidator(AGENT);
    expect(valid({ corpus: '/srv/docs', question: 'How do I restore?' })).toBe(true);
    expect(valid({ corpus: '/srv/docs' })).toBe(false);
    expect(valid({ question: 'How?' })).toBe(false);
    expect(valid({ corpus: 'docs', question: 'How?' })).toBe(false);
    expect(valid({ corpus: '/srv/docs', question: '' })).toBe(false);
    expect(valid({ corpus: '/srv/docs', question: 'x'.repeat(1001) })).toBe(false);
    expect(valid({ corpus: '/srv/docs', question: 'How?', top: 3 })).toBe(false);
  });
});
