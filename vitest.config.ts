import { delimiter } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * swarm-node and svc-api on the tests' PATH, as on a host where the package is installed: the programs then name
 * themselves bare in what they print (src/cli/program-word.ts). A test of a checkout's own words runs without it.
 */
const ON_PATH = fileURLToPath(new URL('test/helpers/on-path', import.meta.url));

/**
 * The API tests that run on PostgreSQL too (docs/operations.md "Running the tests on PostgreSQL"): those that go
 * through every store (money, runs, keys, payments, the pay gate, nodes, uploads, the wallet page) and the ones
 * only PostgreSQL has (test/api-postgres: several instances on one database, the database going away). Left on
 * SQLite alone: what is about SQLite's file (storage), the process and its flags (durability, shutdown, the CLIs),
 * and what never reaches the store (client errors, docs, rate limits). The two projects share the two workers.
 */
const ON_POSTGRES = [
  'test/api/agent-upload.test.ts',
  'test/api/artifacts.test.ts',
  'test/api/auth.test.ts',
  'test/api/compiled-once.test.ts',
  'test/api/counted-limits.test.ts',
  'test/api/enroll.test.ts',
  'test/api/execute.test.ts',
  'test/api/own-agents.test.ts',
  'test/api/http-limits.test.ts',
  'test/api/idempotency.test.ts',
  'test/api/jobs.test.ts',
  'test/api/scopes.test.ts',
  'test/api/sign-in-codes.test.ts',
  'test/api/revocation.test.ts',
  'test/api/step-up.test.ts',
  'test/api/input-schema-safety.test.ts',
  'test/api/paygate.test.ts',
  'test/api/runs.test.ts',
  'test/api/run-logs.test.ts',
  'test/api/run-stream.test.ts',
  'test/api/execute-stream.test.ts',
  'test/api/sandbox.test.ts',
  'test/api/upload-quota.test.ts',
  'test/api/wallet-page.test.ts',
  'test/api/wallet.test.ts',
  'test/api/webhook.test.ts',
  'test/api/secrets.test.ts',
  'test/api/budgets.test.ts',
  'test/api/usage.test.ts',
  'test/api/run-webhooks.test.ts',
  'test/api/console.test.ts',
  'test/api/poll-memory.test.ts',
  'test/api/nul-input.test.ts',
  'test/api/node-health.test.ts',
  'test/api/schedules.test.ts',
  'test/api/schedule-overlap.test.ts',
  'test/api/schedule-migration.test.ts',
  'test/cli/kit-runs.test.ts',
  'test/api-postgres/**/*.test.ts',
];

/** The tests that build releases (src/release): they need the runtime a release ships (release-runtime-setup.ts). */
const RELEASE_TESTS = 'test/install/release-*.test.ts';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    env: { PATH: `${ON_PATH}${delimiter}${process.env.PATH ?? '/usr/bin:/bin'}` },
    hookTimeout: 30_000,
    pool: 'forks',
    // Two cores: more workers only add contention between real servers and subprocesses. Each worker runs file after
    // file in one process: a fresh process per file spent 283 s of a 1,209 s run starting Node and importing the same
    // helpers again. No test changes process-wide state (its env, cwd, umask) or mocks a module, so files stay apart.
    poolOptions: { forks: { maxForks: 2, minForks: 1, isolate: false } },
    // One SMTP server for the run: every service a test starts mails its sign-in codes to it (test/helpers/mailbox.ts).
    globalSetup: ['test/helpers/smtp-global-setup.ts'],
    projects: [
      {
        extends: true,
        test: { name: 'sqlite', include: ['test/**/*.test.ts'], exclude: ['test/api-postgres/**', RELEASE_TESTS, '**/node_modules/**'] },
      },
      // The release tests build releases with the Node.js a release ships: fetched and built for once per run.
      { extends: true, test: { name: 'release', include: [RELEASE_TESTS], globalSetup: ['test/helpers/release-runtime-setup.ts'] } },
      {
        extends: true,
        test: {
          name: 'postgres',
          include: ON_POSTGRES,
          env: { SVC_TEST_ENGINE: 'postgres' },
          globalSetup: ['test/helpers/smtp-global-setup.ts', 'test/helpers/postgres-global-setup.ts'],
        },
      },
    ],
  },
});
