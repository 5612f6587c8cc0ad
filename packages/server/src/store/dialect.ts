/**
 * What one database does its own way, behind one interface: the store's core (sql-store.ts and
 * the query modules) calls these and never asks which database it is on. A database is one
 * folder (sqlite/, postgres/) implementing this and a `SqlStore` subclass for its connection.
 */
import type { SelectQueryBuilder } from 'kysely';
import type { RecordValues } from './attempt-values.ts';
import type { CallbackRow } from './records.ts';
import type { StoreDb } from './schema.ts';
import type { ClaimedCallback, FinishResult, OperationOutcome } from './store.ts';

/** A select over any tables, to add a locking clause to. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any select over any tables can be locked.
export type AnySelect = SelectQueryBuilder<any, any, any>;

/** Row locks: what a database with one writer (SQLite) leaves as it is. */
export interface RowLocking {
  /** Passes over rows another transaction holds instead of waiting (`FOR UPDATE SKIP LOCKED`). */
  skipLocked<QB extends AnySelect>(query: QB): QB;
  /** Holds the rows read until the transaction ends, for a read that is then written (`FOR UPDATE`). */
  forUpdate<QB extends AnySelect>(query: QB): QB;
}

/** One claim of due callbacks, as `claimCallbackRows` sized it. */
export interface ClaimValues {
  now: number;
  /** When the leases taken run out. */
  expires: number;
  workerId: string;
  /** Callbacks of one receiver in flight at most, or undefined for no cap. */
  cap: number | undefined;
  /** How many of the oldest due callbacks the fair choice looks at. */
  scan: number;
  /** How many of the oldest due callbacks a claim may read to find its window among unlocked rows. */
  depth: number;
  limit: number;
}

/** Recording one attempt: its values, the store's now, and whether to close the receiver's circuit. */
export type AttemptValues = RecordValues & { now: number; closeCircuit: boolean };

export interface StoreDialect extends RowLocking {
  /** The database's name, for logs and error messages (`sqlite`, `postgres`). */
  readonly name: string;
  /**
   * Whether several processes use the store at once (and the data directory beside it, which
   * may then be on a network file system). A process of a store that is not shared may take
   * back every lease when it starts: none can belong to another live process.
   */
  readonly sharedByProcesses: boolean;
  /**
   * Whether a claim is atomic alone (one statement), so it needs no transaction around it.
   * Otherwise it runs in a write transaction of its own, or in the caller's.
   */
  readonly claimsAlone: boolean;
  /**
   * Whether recording an attempt can close its receiver's circuit in the same statement
   * (`closeCircuit`), which lets a lone settlement with no failure skip the transaction.
   */
  readonly closesCircuitsInRecord: boolean;
  /**
   * Leases the claim's chosen callbacks and returns them with their operations (in any order):
   * the fair choice described at `claimCallbackRows`, and circuits whose pause is over, among
   * their receivers, half-opened.
   */
  claimCallbacks(db: StoreDb, claim: ClaimValues): Promise<ClaimedCallback[]>;
  /**
   * Moves the callback on and appends the attempt, provided `v.workerId` holds its lease: the
   * moved callback's row, or undefined (nothing written) when it does not.
   */
  recordAttempt(db: StoreDb, v: AttemptValues): Promise<CallbackRow | undefined>;
  /**
   * A finish on its own, with its wake-up, when the database does it in one statement; absent,
   * the core runs `finishOperationRows` in a write transaction.
   */
  finishOperation?(db: StoreDb, idGen: string, outcome: OperationOutcome, now: number): Promise<FinishResult>;
}
