// The daemon's pure parts: the log line format (one line, logfmt, secrets masked) and its backoff.
import { describe, expect, it } from 'vitest';
import { DaemonLog } from '../../src/node/daemon/log.js';
import { MAX_BACKOFF_MS, nextBackoff } from '../../src/node/daemon/timing.js';
import { startOfNextUtcDay } from '../../src/lib/clock.js';
import { parseLogLine } from './support.js';

const clock = { now: () => Date.parse('2026-03-04T05:06:07.089Z') };

function logged(write: (log: DaemonLog) => void): string[] {
  const lines: string[] = [];
  const log = new DaemonLog((line) => lines.push(line), clock);
  write(log);
  return lines;
}

describe('daemon log lines', () => {
  it('writes one logfmt line per event: time, level, event, then the facts; quoted only when needed', () => {
    const [line] = logged((log) =>
      log.warn('run_refused', {
        agent: 'agent_ops_monitor_004',
        code: 'forbidden',
        error: 'user_id is "x"\nnext',
        cents: 4,
        ok: false,
        none: null,
        unset: undefined,
      }),
    );
    expect(line).toBe(
      'ts=2026-03-04T05:06:07.089Z level=warn event=run_refused agent=agent_ops_monitor_004 code=forbidden error="user_id is \\"x\\"\\nnext" cents=4 ok=false\n',
    );
    expect(line!.trimEnd()).not.toContain('\n');
    expect(parseLogLine(line!)).toMatchObject({ event: 'run_refused', error: 'user_id is "x"\nnext', cents: '4' });
    expect(logged((log) => log.info('x', { url: 'http://127.0.0.1:8787/wallet/login', empty: '' }))[0]).toContain(
      'url=http://127.0.0.1:8787/wallet/login empty=""',
    );
  });

  it('writes no control character a terminal would obey (journalctl, tail -f): C1, DEL and bidi controls escaped too', () => {
    // What an agent wrote can reach a line (an error's message); JSON alone leaves U+009B (CSI), DEL and RLO raw.
    const hostile = 'exit 3: \u001b]52;c;cHduZWQ=\u0007 \u009b2J \u007f \u202eevil';
    const [line] = logged((log) => log.warn('run_error', { error: hostile }));
    expect(line!.trimEnd()).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e]/);
    expect(line).toContain('error="exit 3: \\u001b]52;c;cHduZWQ=\\u0007 \\u009b2J \\u007f \\u202eevil"');
    // Still one JSON string: it reads back as what was logged.
    expect(parseLogLine(line!).error).toBe(hostile);
  });

  it('masks a known secret wherever it would appear', () => {
    const token = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl';
    const lines = logged((log) => {
      log.mask(token);
      log.error('oops', { error: `rejected ${token} as given`, again: token });
    });
    expect(lines[0]).not.toContain(token);
    expect(lines[0]).toContain('error="rejected [redacted] as given" again=[redacted]');
  });
});

describe('backoff', () => {
  it('backs off from the first wait, doubling, to ten minutes at most; the next UTC day starts at midnight', () => {
    const waits: number[] = [];
    let wait: number | undefined;
    for (let i = 0; i < 8; i += 1) waits.push((wait = nextBackoff(wait, 30_000)));
    expect(waits).toEqual([30_000, 60_000, 120_000, 240_000, 480_000, MAX_BACKOFF_MS, MAX_BACKOFF_MS, MAX_BACKOFF_MS]);
    expect(nextBackoff(undefined, 400)).toBe(400);
    expect(new Date(startOfNextUtcDay(Date.parse('2026-03-04T23:59:59.999Z'))).toISOString()).toBe('2026-03-05T00:00:00.000Z');
    expect(new Date(startOfNextUtcDay(Date.parse('2026-03-05T00:00:00.000Z'))).toISOString()).toBe('2026-03-06T00:00:00.000Z');
  });
});
