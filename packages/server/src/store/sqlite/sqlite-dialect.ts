/**
 * SQLite's side of the store's statements. One writer at a time: a write transaction holds the
 * whole database, so rows need no locks and a claim is plain steps inside that transaction.
 */
import type { AnySelect, StoreDialect } from '../dialect.ts';
import { claimOnSqlite } from './sqlite-claim.ts';
import { recordAttemptOnSqlite } from './sqlite-record-attempt.ts';

export const sqliteDialect: StoreDialect = {
  name: 'sqlite',
  sharedByProcesses: false,
  claimsAlone: false,
  closesCircuitsInRecord: false,
  skipLocked<QB extends AnySelect>(query: QB): QB {
    return query;
  },
  forUpdate<QB extends AnySelect>(query: QB): QB {
    return query;
  },
  claimCallbacks: claimOnSqlite,
  recordAttempt: recordAttemptOnSqlite,
};
