// Kysely builds a query's tree and compiles it to SQL at every call. For the dozen statements a run makes (its
// execute, the claim that hands it out, its result) that was over a third of svc-api's CPU per run (bench:execute,
// docs/api.md "Storage"). Those are built and compiled once per store instead, with a placeholder for each value that
// changes, and run with the values bound in place; the rest are built at each call, as before.
import type { Compilable, CompiledQuery, Kysely, QueryResult, RawBuilder } from 'kysely';
import { nameStatement } from './named-statements.js';
import type { Tables } from './tables.js';

/** Stands for one named value while the query is compiled; Kysely binds it as a parameter like any other value. */
class Placeholder {
  constructor(readonly name: string) {}
}

/** Runs the compiled query on `db` (the store's `db`: inside a transaction, that transaction) with these values. */
export type CompiledOnce<V extends object, R> = (db: Kysely<Tables>, values: V) => Promise<QueryResult<R>>;

/**
 * `build` is called once, on the first run, with placeholders for `values`: it may pass them where Kysely takes a
 * value (a comparison, a column's value, an `sql` template), but not look at them (no branch, no spread of a value
 * that is an object or an array), since the SQL must be the same for every call. A LIMIT goes in an expression, not
 * as a bare parameter, which SQLite would prepare again at each call (run-store.ts).
 */
export function compiledOnce<V extends object, R>(build: (db: Kysely<Tables>, values: V) => Compilable<R>): CompiledOnce<V, R> {
  let template: { compiled: CompiledQuery<R>; names: (string | undefined)[] } | undefined;
  return async (db, values) => {
    template ??= compileTemplate(db, build);
    const { compiled, names } = template;
    const parameters = compiled.parameters.map((fixed, index) => {
      const name = names[index];
      if (name === undefined) return fixed;
      const value = (values as Record<string, unknown>)[name];
      // Kysely leaves an undefined value out of the query; here the query is fixed, so a missing value is a bug.
      if (value === undefined) throw new Error(`compiledOnce: no value for "${name}" in ${compiled.sql}`);
      return value;
    });
    return db.executeQuery<R>({ ...compiled, parameters });
  };
}

function compileTemplate<V extends object, R>(db: Kysely<Tables>, build: (db: Kysely<Tables>, values: V) => Compilable<R>) {
  const asked = new Set<string>();
  const placeholders = new Proxy({} as V, {
    get(_target, name) {
      if (typeof name !== 'string') return undefined;
      asked.add(name);
      return new Placeholder(name);
    },
  });
  const compiled = build(db, placeholders).compile();
  // PostgreSQL prepares it once per connection under a name (named-statements.ts).
  nameStatement(compiled.sql);
  const names = compiled.parameters.map((parameter) => (parameter instanceof Placeholder ? parameter.name : undefined));
  // A placeholder that is not a parameter was looked at or taken apart rather than bound: the SQL would not follow
  // the values.
  const unbound = [...asked].filter((name) => !names.includes(name));
  if (unbound.length > 0) throw new Error(`compiledOnce: ${unbound.join(', ')} not bound as a parameter in ${compiled.sql}`);
  return { compiled, names };
}

/** A statement written in SQL (`sql` of Kysely) as compiledOnce takes it: compiled by `db`'s dialect. */
export function rawStatement<R>(db: Kysely<Tables>, statement: RawBuilder<R>): Compilable<R> {
  return { compile: () => statement.compile(db) };
}
