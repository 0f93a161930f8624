// The daemon waits for its next tick on its own long-lived signal once a second for as long as it runs (months):
// a wait that left a listener on that signal would keep 86,400 closures a day, and Node's
// MaxListenersExceededWarning would be printed into the daemon's log at its eleventh tick.
import { getEventListeners } from 'node:events';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { systemClock } from '../../src/lib/clock.js';
import { DaemonCore } from '../../src/node/daemon/core.js';
import { DaemonLog } from '../../src/node/daemon/log.js';
import { ServiceClient } from '../../src/node/service/service-client.js';
import { openNodeStore } from '../../src/node/store/database.js';
import { tempDir } from '../helpers/temp.js';

const closers: Array<() => void> = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

function daemonCore(): DaemonCore {
  const home = tempDir('tick-listeners');
  const db = openNodeStore(join(home, 'var', 'swarm-node.db'), 'daemon');
  closers.push(() => db.close());
  const lines: string[] = [];
  return new DaemonCore(
    {
      db,
      // Never called: a tick waits, it sends nothing.
      client: new ServiceClient({ baseUrl: 'http://127.0.0.1:9' }),
      clock: systemClock,
      log: new DaemonLog((line) => lines.push(line), systemClock),
      credentialsFile: join(home, 'etc', 'credentials.json'),
      pid: process.pid,
      version: '0.0.0',
      concurrency: 1,
    },
    400,
  );
}

it('a thousand ticks, woken or timed out, leave the daemon signal with the listeners it had', async () => {
  const core = daemonCore();
  const daemonRunning = new AbortController();
  const before = getEventListeners(daemonRunning.signal, 'abort').length;
  for (let tick = 0; tick < 1000; tick += 1) {
    const waited = core.nextTick(tick % 2 === 0 ? 0 : 60_000, daemonRunning.signal);
    // Half of them end by their timer, half by a wake (a slot freed, the service back).
    if (tick % 2 === 1) core.wake();
    await waited;
  }
  expect(getEventListeners(daemonRunning.signal, 'abort')).toHaveLength(before);
});

it('a wait for a freed slot leaves no listener behind either', async () => {
  const core = daemonCore();
  const daemonRunning = new AbortController();
  for (let wait = 0; wait < 100; wait += 1) await core.slotFreed(0, daemonRunning.signal);
  expect(getEventListeners(daemonRunning.signal, 'abort')).toHaveLength(0);
});
