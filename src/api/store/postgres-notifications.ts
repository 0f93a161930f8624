// Wake-ups between instances on one PostgreSQL database (docs/operations.md "Several instances on PostgreSQL"): a
// run queued or finished on one instance wakes the long polls and waiting executes of every other at once, through
// LISTEN/NOTIFY, instead of at their next look at the database (run-events.ts, every 500 ms). Only a hint: a
// notification lost while the listening connection is down costs that wait, never a run, so the listener reconnects
// on its own and nothing waits for it. An instance alone on its database sends none (docs/api.md "Storage"): it
// looks every second whether another instance listens (by the name its listening connection carries), and a new one
// is told from then on; until then its waiters see what changed at their recheck.
import { randomUUID } from 'node:crypto';
import pg from 'pg';

export interface Notifications {
  /** Tells the other instances that `topic` changed (after the commit that changed it). */
  publish(topic: string): void;
  /** `handler` gets every topic another instance publishes; resolves once listening (or, failing, retrying). */
  listen(handler: (topic: string) => void): Promise<void>;
  /** Listening, and no other instance listens: nothing another instance changes goes unheard, since there is none. */
  alone(): boolean;
  close(): Promise<void>;
}

const CHANNEL = 'svc_run_events';
/**
 * The topics published in one turn of the event loop go in one notification, a line each, up to this many bytes
 * (PostgreSQL's limit is 8000): under load a run's queued and finished wake-ups are each a round trip otherwise.
 */
const MAX_PAYLOAD_BYTES = 7_000;
const RECONNECT_MIN_MS = 500;
/** How often an instance looks whether another one listens. */
const LISTENERS_CHECK_MS = 1_000;
/** What a listening connection is named, with its instance after it (pg_stat_activity.application_name). */
const LISTENER_NAME = 'svc-api events';
const RECONNECT_MAX_MS = 30_000;

export function createPostgresNotifications(url: string, pool: pg.Pool, onError: (error: Error) => void): Notifications {
  // Each instance knows its own notifications by this prefix and skips them: it woke its own waiters already.
  const instance = randomUUID();
  const handlers: ((topic: string) => void)[] = [];
  let client: pg.Client | undefined;
  let closed = false;
  let retryMs = RECONNECT_MIN_MS;
  let retry: NodeJS.Timeout | undefined;
  /** The topics published in this turn of the event loop, sent at its end. */
  let pending: Set<string> | undefined;
  /** Whether another instance listens; true until known otherwise (or when it cannot be known). */
  let othersListen = true;
  let checking: NodeJS.Timeout | undefined;
  const checkListeners = async (): Promise<void> => {
    const { rows } = await pool.query<{ others: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE $1 AND application_name <> $2) AS others`,
      [`${LISTENER_NAME} %`, `${LISTENER_NAME} ${instance}`],
    );
    othersListen = rows[0]?.others !== false;
  };

  const connect = async (): Promise<void> => {
    const next = new pg.Client({ connectionString: url, application_name: `${LISTENER_NAME} ${instance}` });
    next.on('notification', (message) => {
      const payload = message.payload ?? '';
      const space = payload.indexOf(' ');
      if (space < 0 || payload.slice(0, space) === instance) return;
      for (const topic of payload.slice(space + 1).split('\n')) for (const handler of handlers) handler(topic);
    });
    // A connection lost (PostgreSQL restarted, the network cut) is replaced after a backoff.
    const lost = (error?: Error): void => {
      if (client !== next) return;
      client = undefined;
      if (error !== undefined) onError(error);
      scheduleReconnect();
    };
    next.on('error', lost);
    next.on('end', () => lost());
    try {
      await next.connect();
      await next.query(`LISTEN ${CHANNEL}`);
    } catch (error) {
      await next.end().catch(() => undefined);
      throw error;
    }
    if (closed) {
      await next.end();
      return;
    }
    client = next;
    retryMs = RECONNECT_MIN_MS;
  };
  const scheduleReconnect = (): void => {
    if (closed || retry !== undefined) return;
    retry = setTimeout(() => {
      retry = undefined;
      connect().catch((error: Error) => {
        onError(error);
        scheduleReconnect();
      });
    }, retryMs);
    retry.unref();
    retryMs = Math.min(RECONNECT_MAX_MS, retryMs * 2);
  };

  return {
    publish(topic) {
      if (!othersListen) return;
      if (pending !== undefined) {
        pending.add(topic);
        return;
      }
      pending = new Set([topic]);
      setImmediate(() => {
        const topics = [...pending!];
        pending = undefined;
        for (const payload of payloadsOf(instance, topics)) pool.query('SELECT pg_notify($1, $2)', [CHANNEL, payload]).catch(onError);
      });
    },
    async listen(handler) {
      handlers.push(handler);
      if (handlers.length > 1) return;
      await connect().catch((error: Error) => {
        onError(error);
        scheduleReconnect();
      });
      const check = (): Promise<void> =>
        checkListeners().catch((error: Error) => {
          othersListen = true;
          onError(error);
        });
      await check();
      checking = setInterval(() => void check(), LISTENERS_CHECK_MS);
      checking.unref();
    },
    alone: () => client !== undefined && !othersListen,
    async close() {
      closed = true;
      clearTimeout(retry);
      clearInterval(checking);
      const current = client;
      client = undefined;
      await current?.end().catch(() => undefined);
    },
  };
}

/** `instance topic\ntopic…`, as few as fit under MAX_PAYLOAD_BYTES each. */
function payloadsOf(instance: string, topics: readonly string[]): string[] {
  const payloads: string[] = [];
  let lines: string[] = [];
  let bytes = 0;
  for (const topic of topics) {
    const size = Buffer.byteLength(topic) + 1;
    if (lines.length > 0 && bytes + size > MAX_PAYLOAD_BYTES) {
      payloads.push(`${instance} ${lines.join('\n')}`);
      lines = [];
      bytes = 0;
    }
    lines.push(topic);
    bytes += size;
  }
  if (lines.length > 0) payloads.push(`${instance} ${lines.join('\n')}`);
  return payloads;
}
