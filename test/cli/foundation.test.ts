import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AGENT_SKUS } from '../../src/contract/agents.js';
import { nodeEnv, swarmNode } from '../helpers/cli.js';
import { SWARM_NODE_BIN, useSvcApi } from '../helpers/svc-api.js';

describe('swarm-node foundation', () => {
  const service = useSvcApi();

  it('lists the catalog from the service as one JSON document', async () => {
    const { env } = nodeEnv(service.baseUrl);
    const result = await swarmNode(['agents', '--json'], { env });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.json).toEqual({ source: 'service', agents: AGENT_SKUS });
  });

  it('falls back to the built-in catalog when the service is unreachable, and says so on stderr', async () => {
    const { env } = nodeEnv('http://127.0.0.1:9');
    const result = await swarmNode(['agents'], { env });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('agent_ops_monitor_004');
    expect(result.stdout).toContain('$0.04');
    expect(result.stderr).toMatch(/warning: cannot reach the service at http:\/\/127\.0\.0\.1:9/);
  });

  it('reports a usage error as exit 2, as JSON under --json', async () => {
    const { env } = nodeEnv(service.baseUrl);
    const human = await swarmNode(['agents', '--bogus'], { env });
    expect(human.exitCode).toBe(2);
    expect(human.stderr).toMatch(/error: unknown option '--bogus'/);
    const json = await swarmNode(['--json', 'agents', '--bogus'], { env });
    expect(json.exitCode).toBe(2);
    expect(json.json.error.code).toBe('usage');
  });

  it('layers config: flag over env over file over default, and names each source', async () => {
    const { env, home } = nodeEnv(service.baseUrl);
    const set = await swarmNode(['config', 'set', 'merchant_id', 'merchant_file'], { env });
    expect(set.exitCode, set.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(home, 'etc', 'config.json'), 'utf8')).merchant_id).toBe('merchant_file');
    const got = await swarmNode(['--json', '--base-url', 'http://flag.example:1', 'config', 'get'], {
      env: { ...env, SVC_MERCHANT_ID: '' },
    });
    expect(got.json.config).toMatchObject({ base_url: 'http://flag.example:1', merchant_id: 'merchant_file', timeout_seconds: 15 });
    expect(got.json.sources).toMatchObject({ base_url: 'flag', merchant_id: 'file', timeout_seconds: 'default' });
    const fromEnv = await swarmNode(['--json', 'config', 'get', 'base_url'], { env });
    expect(fromEnv.json).toEqual({ key: 'base_url', value: service.baseUrl, source: 'env' });
    // A duration is shown as written and as the README writes the default: 24h, not 1d.
    expect((await swarmNode(['--json', 'config', 'get', 'auto_update_interval'], { env })).json).toEqual({
      key: 'auto_update_interval',
      value: '24h',
      source: 'default',
    });
    expect((await swarmNode(['config', 'set', 'auto_update_interval', '48h'], { env })).exitCode).toBe(0);
    expect((await swarmNode(['--json', 'config', 'get', 'auto_update_interval'], { env })).json).toMatchObject({
      value: '48h',
      source: 'file',
    });
    const bad = await swarmNode(['config', 'set', 'base_url', 'ftp://x'], { env });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('base_url must be an http(s) URL');
  });

  it('exits 0 without a stack trace when its reader goes away (swarm-node … | head -1)', async () => {
    const { env } = nodeEnv(service.baseUrl);
    // --help and --version alone are answered by bin/swarm-node.js itself, the rest by the program.
    for (const args of [['--help'], ['--version'], ['--no-color', '--help'], ['agents']]) {
      const child = spawn(process.execPath, [SWARM_NODE_BIN, ...args], {
        env: { ...process.env, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout.destroy();
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const [code] = (await once(child, 'exit')) as [number | null];
      expect(stderr, args.join(' ')).not.toMatch(/EPIPE|node:events|at /);
      expect(code, args.join(' ')).toBe(0);
    }
  });

  it('prints help with an example and the exit codes', async () => {
    const result = await swarmNode(['--help']);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('Exit codes:');
    const sub = await swarmNode(['agents', '--help']);
    expect(sub.stdout).toContain('Example:');
  });
});
