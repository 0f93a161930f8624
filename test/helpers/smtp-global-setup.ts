// One SMTP server for the whole test run (vitest's global set-up): the services the tests start send their mail to
// it over SMTP, and it writes each message to a directory the tests read (smtp-sink.mjs). vitest runs a global set-up
// once for the root and once for each project that extends it, all in its main process: the first start is shared.
import { execa, type ResultPromise } from 'execa';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** smtp://127.0.0.1:PORT of the run's SMTP server. */
    smtpUrl: string;
    /** Where that server writes each message it accepts, one JSON file each (test/helpers/mailbox.ts reads them). */
    mailDir: string;
  }
}

interface SharedSink {
  url: string;
  dir: string;
  users: number;
  process: ResultPromise;
}

const KEY = Symbol.for('svc.test.smtp-sink');
const SINK = fileURLToPath(new URL('./smtp-sink.mjs', import.meta.url));

async function startSink(): Promise<SharedSink> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-test-mail-'));
  const child = execa('node', [SINK, '--dir', dir], { reject: false, buffer: false, stdout: 'pipe', stderr: 'inherit' });
  const port = await new Promise<number>((resolve, reject) => {
    let seen = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      const match = /smtp-sink listening on (\d+)/.exec(seen);
      if (match) resolve(Number(match[1]));
    });
    void child.then((result) => reject(new Error(`the test SMTP server exited ${result.exitCode} before it listened`)));
  });
  return { url: `smtp://127.0.0.1:${port}`, dir, users: 0, process: child };
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const shared = globalThis as unknown as Record<symbol, Promise<SharedSink> | undefined>;
  shared[KEY] ??= startSink();
  const sink = await shared[KEY]!;
  sink.users += 1;
  project.provide('smtpUrl', sink.url);
  project.provide('mailDir', sink.dir);
  return async () => {
    sink.users -= 1;
    if (sink.users > 0) return;
    shared[KEY] = undefined;
    sink.process.kill('SIGTERM');
    await sink.process;
    rmSync(sink.dir, { recursive: true, force: true });
  };
}
