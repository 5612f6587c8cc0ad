/**
 * Queries built and compiled once, then only bound. Kysely builds and compiles a query from
 * scratch on every call; for the large queries a delivery worker runs for every callback (the
 * claim, `nextDueAt`) that costs several times what the database spends running them.
 */
import { type Compilable, CompiledQuery } from 'kysely';
import type { StoreDb } from './schema.ts';

interface Compiled {
  sql: string;
  /** The compiled parameters: constants of the query, or the marker of a value. */
  parameters: readonly unknown[];
  /** For each parameter, the name of the value it takes, or undefined for a constant. */
  slots: readonly (string | undefined)[];
}

/** Per SQL dialect (its adapter's class), per shape: one process may use both databases. */
const compiled = new Map<unknown, Map<string, Compiled>>();

/**
 * A name for each compiled SQL text, for a database that keeps statements prepared per
 * connection (PostgreSQL): the compiled texts are few and fixed, so those are bounded.
 */
const statementNames = new Map<string, string>();

/**
 * The prepared-statement name of a SQL text that `runCompiled` made, or undefined for any
 * other text (built per call, possibly with a list of any length: not worth keeping prepared).
 */
export function statementNameOf(sql: string): string | undefined {
  return statementNames.get(sql);
}

/** A prefix no constant of the store's queries starts with (PostgreSQL text cannot even hold NUL). */
const MARKER = '\u0000value:';

/**
 * Runs the query `build(values)` makes, compiling it only the first time for `shape` on the
 * connection's SQL dialect. `shape` names everything else that changes the SQL text (which
 * clauses are present); every entry of `values` must reach the query as a bound parameter,
 * unchanged (a value computed on, left out, or inlined into the text is refused on first
 * compilation rather than bound wrongly later), so `values` holds exactly what that shape uses.
 *
 * @example
 * const rows = await runCompiled(trx, `claim:${dialect}`, (v) => trx.selectFrom('t').where('x', '<=', v.now), { now });
 */
export async function runCompiled<V extends Record<string, string | number | null | undefined>, R>(
  db: StoreDb,
  shape: string,
  build: (values: V) => Compilable<R>,
  values: V,
): Promise<R[]> {
  const dialect = db.getExecutor().adapter.constructor;
  let byShape = compiled.get(dialect);
  if (byShape === undefined) {
    byShape = new Map();
    compiled.set(dialect, byShape);
  }
  let query = byShape.get(shape);
  if (query === undefined) {
    const names = Object.keys(values);
    const markers = Object.fromEntries(names.map((name) => [name, `${MARKER}${name}`])) as unknown as V;
    const { sql, parameters } = build(markers).compile();
    const slots = parameters.map((p) =>
      typeof p === 'string' && p.startsWith(MARKER) ? p.slice(MARKER.length) : undefined,
    );
    const unbound = names.filter((name) => !slots.includes(name));
    if (unbound.length > 0 || sql.includes(MARKER)) {
      throw new Error(`query ${shape}: ${unbound.join(', ') || 'a value'} is not a plain bound parameter`);
    }
    query = { sql, parameters, slots };
    byShape.set(shape, query);
    if (!statementNames.has(sql)) statementNames.set(sql, `mediahook_${statementNames.size + 1}`);
  }
  const { sql, parameters, slots } = query;
  const bound = parameters.map((p, i) => (slots[i] === undefined ? p : values[slots[i]!]));
  const result = await db.executeQuery(CompiledQuery.raw(sql, bound) as CompiledQuery<R>);
  return result.rows;
}
