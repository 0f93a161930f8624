// Named prepared statements on PostgreSQL for the statements compiled once (compiled-once.ts): the text of each is
// fixed, so each connection parses and plans it once and then only binds its values, where an unnamed statement is
// parsed and planned again at every run (docs/api.md "Storage"). Only those: a statement built at each call (an IN
// list of any length) would leave a prepared statement per shape on every connection. The name is a digest of the
// text, so one text has one name in every process and two texts never share one.
import { createHash } from 'node:crypto';
import pg from 'pg';

const names = new Map<string, string>();

/** Marks a statement's text as one to prepare under its name on every connection that runs it. */
export function nameStatement(text: string): void {
  if (!names.has(text)) names.set(text, `svc_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`);
}

/**
 * pg's Client, preparing the statements named by nameStatement. Kysely runs a query as `query(text, values)`; that
 * call, for a named text, goes out as `query({ name, text, values })`, which pg prepares on the connection's first
 * run and binds on the next ones.
 */
export class NamedStatementClient extends pg.Client {
  override query(...args: unknown[]): never {
    const [text, values] = args;
    const name = typeof text === 'string' && args.length === 2 ? names.get(text) : undefined;
    const call = super.query as (...given: unknown[]) => never;
    return name === undefined ? call.apply(this, args) : call.call(this, { name, text, values });
  }
}
