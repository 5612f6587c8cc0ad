/**
 * PostgreSQL's side of the store's statements, for several processes sharing one queue: row
 * locks (`FOR UPDATE`, `SKIP LOCKED`), and the claim, an attempt's record and a finish each one
 * statement, atomic alone, so none needs the round trips of a transaction around it.
 */
import type { AnySelect, StoreDialect } from '../dialect.ts';
import { claimOnPostgres } from './postgres-claim.ts';
import { finishOperationOnPostgres } from './postgres-finish.ts';
import { recordAttemptOnPostgres } from './postgres-record-attempt.ts';

/** The statements of a store whose wake-ups are NOTIFY'd on `channel`. */
export function postgresDialect(channel: string): StoreDialect {
  return {
    name: 'postgres',
    sharedByProcesses: true,
    claimsAlone: true,
    closesCircuitsInRecord: true,
    skipLocked<QB extends AnySelect>(query: QB): QB {
      return query.forUpdate().skipLocked() as QB;
    },
    forUpdate<QB extends AnySelect>(query: QB): QB {
      return query.forUpdate() as QB;
    },
    claimCallbacks: claimOnPostgres,
    recordAttempt: recordAttemptOnPostgres,
    finishOperation: (db, idGen, outcome, now) => finishOperationOnPostgres(db, idGen, outcome, now, channel),
  };
}
