// What every reference agent of agents/ shares: a manifest the node can read, a bundle that stands alone, and
// the run protocol's failure path (nothing on stdout, a reason on stderr, a non-zero exit).
import { afterAll, describe, expect, it } from 'vitest';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import { AGENT_IDS } from '../../src/contract/agents.js';
import { schemaProblems } from '../../src/contract/input-schema.js';
import { readPackageSource } from '../../src/node/install/package-source.js';
import { REPO_ROOT } from '../helpers/svc-api.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';
import { stagedPackage } from '../install/support.js';
import { AGENTS_DIR, readManifest, runAgentProcess } from './agent-process.js';

afterAll(() => removeTempDirs());

/** Packages an agent may import besides Node's own modules: the RAG agent's SQLite, which the release ships. */
const ALLOWED_PACKAGES: Record<string, string[]> = { agent_research_rag_015: ['better-sqlite3'] };
/** The agents that call out (a model, a mail server) and so need the network (docs/sections/starter-agents.md). */
const EGRESS = ['agent_dev_review_012', 'agent_research_rag_015', 'agent_svc_skills_005', 'agent_sales_outreach_008'];
const MODEL_SECRETS = ['OPENAI_BASE_URL', 'OPENAI_API_KEY', 'OPENAI_MODEL'];

interface DeclaredManifest {
  timeout_seconds?: number;
  network?: string;
  secrets?: string[];
  retry_safe?: boolean;
}

describe('the reference agents', () => {
  it('are exactly the catalog agents, one directory each', () => {
    expect(readdirSync(AGENTS_DIR).sort()).toEqual([...AGENT_IDS].sort());
  });

  it('each has a manifest of the agreed shape whose input_schema is strict JSON Schema 2020-12', () => {
    for (const agentId of AGENT_IDS) {
      const manifest = readManifest(agentId) as ReturnType<typeof readManifest> & DeclaredManifest;
      expect(Object.keys(manifest).filter((key) => key !== 'secrets' && key !== 'retry_safe').sort(), agentId).toEqual(['agent_id', 'description', 'entry', 'input_schema', 'network', 'timeout_seconds', 'version']);
      // Its own time limit, what it calls out to, and the secrets it reads (none is ever an input).
      expect(Number.isInteger(manifest.timeout_seconds) && manifest.timeout_seconds! >= 30 && manifest.timeout_seconds! <= 3600, agentId).toBe(true);
      expect(manifest.network, agentId).toBe(EGRESS.includes(agentId) ? 'egress' : 'none');
      for (const name of manifest.secrets ?? []) expect(name).toMatch(/^[A-Z][A-Z0-9_]{0,63}$/);
      if (existsSync(join(AGENTS_DIR, agentId, 'model.mjs'))) expect(manifest.secrets, agentId).toEqual(expect.arrayContaining(MODEL_SECRETS));
      for (const name of manifest.secrets ?? []) expect(JSON.stringify(manifest.input_schema), agentId).not.toContain(name.toLowerCase());
      // Safe to run again from the start when a node is lost: all but the outreach agent, whose drafts go out as mail.
      expect(manifest.retry_safe ?? false, agentId).toBe(agentId !== 'agent_sales_outreach_008');
      expect(manifest.agent_id).toBe(agentId);
      expect(manifest.version).toMatch(/^\d+\.\d+\.\d+$/);
      expect(manifest.entry).toEqual(['node', 'main.mjs']);
      expect(existsSync(join(AGENTS_DIR, agentId, 'main.mjs'))).toBe(true);
      expect(manifest.description).toMatch(/^[A-Z][^\n]{20,200}\.$/);
      expect(manifest.input_schema).toMatchObject({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', additionalProperties: false });
      expect(() => new Ajv2020({ strict: true }).compile(manifest.input_schema), agentId).not.toThrow();
      // The service checks a run's input against it before the charge: every keyword must be one it enforces.
      expect(schemaProblems(manifest.input_schema), agentId).toEqual([]);
    }
  });

  it('stand alone: the shared run protocol and model client are the same files in each bundle, and only Node built-ins and vendor/ are imported', () => {
    // vendor/ is made by npm run build (scripts/agent-vendor.mjs), as dist/ is.
    const protocol = readFileSync(join(AGENTS_DIR, AGENT_IDS[0], 'agent-io.mjs'), 'utf8');
    const modelClient = readFileSync(join(AGENTS_DIR, 'agent_dev_review_012', 'model.mjs'), 'utf8');
    const builtins = new Set(builtinModules);
    for (const agentId of AGENT_IDS) {
      expect(readFileSync(join(AGENTS_DIR, agentId, 'agent-io.mjs'), 'utf8'), agentId).toBe(protocol);
      if (EGRESS.includes(agentId)) expect(readFileSync(join(AGENTS_DIR, agentId, 'model.mjs'), 'utf8'), agentId).toBe(modelClient);
      for (const file of readdirSync(join(AGENTS_DIR, agentId)).filter((name) => name.endsWith('.mjs'))) {
        const source = readFileSync(join(AGENTS_DIR, agentId, file), 'utf8');
        expect(source.split('\n').length, `${agentId}/${file}`).toBeLessThanOrEqual(300);
        for (const [, specifier] of [...source.matchAll(/^import .* from '([^']+)';$|import\('([^']+)'\)/gm)].map((match) => [match[0], match[1] ?? match[2]])) {
          if (specifier!.startsWith('./')) expect(existsSync(join(AGENTS_DIR, agentId, specifier!)), `${agentId}/${file}: ${specifier}`).toBe(true);
          else if (specifier!.startsWith('node:')) expect(builtins.has(specifier!.slice(5)), specifier).toBe(true);
          else expect(ALLOWED_PACKAGES[agentId] ?? [], `${agentId}/${file} imports ${specifier}`).toContain(specifier);
        }
      }
    }
  });

  it('ship in the npm package', () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { files: string[]; dependencies: Record<string, string> };
    expect(pkg.files).toContain('agents');
    for (const packages of Object.values(ALLOWED_PACKAGES)) for (const name of packages) expect(pkg.dependencies).toHaveProperty(name);
  });

  it("run from an installed release's copy: the RAG agent loads better-sqlite3 from the release's own node_modules", async () => {
    // The release is what install copies (src/node/install/package-source.ts): package.json `files` and the
    // runtime modules, nothing of this checkout. Needs dist/ (npm run build), like every test of the package.
    const release = join(tempDir('agents-release-'), 'release');
    for (const file of readPackageSource(stagedPackage()).files) {
      const target = join(release, file.path);
      mkdirSync(dirname(target), { recursive: true });
      if (file.link) symlinkSync(file.link, target);
      else copyFileSync(file.source, target);
    }
    expect(existsSync(join(release, 'node_modules', 'better-sqlite3', 'package.json'))).toBe(true);
    const corpus = tempDir('release-corpus-');
    writeFileSync(join(corpus, 'a.md'), '# Keys\n\nThe spare key hangs in the shed.\n');
    const run = await runAgentProcess('agent_research_rag_015', { corpus, question: 'where is the spare key' }, { agentsDir: join(release, 'agents') });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.json.passages[0].citation).toBe('a.md:1-3');
  });

  it('each answers a run document that is not one JSON object with exit 2, a reason on stderr and nothing on stdout', async () => {
    for (const agentId of AGENT_IDS) {
      for (const [stdin, reason] of [
        ['{"run_id": "r1", "input": ', 'stdin: expected one JSON document describing the run'],
        ['[1, 2]', 'stdin: the run must be a JSON object'],
        ['{"run_id": "r1", "input": "repo=/srv"}', 'input: must be a JSON object'],
      ] as const) {
        const run = await runAgentProcess(agentId, null, { stdin });
        expect(run.exitCode, `${agentId} ${stdin}`).toBe(2);
        expect(run.stderr).toBe(`${agentId}: ${reason}`);
        expect(run.stdout).toBe('');
      }
    }
  });
});
