/**
 * Fairness under another receiver's backlog, on the store alone (no HTTP): how long a claim for
 * one receiver takes while another has a large backlog waiting, either down (its circuit opened
 * by failed attempts, through the store's own settle) or at its cap (its callbacks due, no slot
 * free for them), against the same claim with no backlog beside it.
 */
import { uuidv7Generator } from '../packages/mediahook/src/protocol/uuidv7.ts';
import {
  type CircuitPolicy,
  endpointKeyOf,
  type Settlement,
  type Store,
} from '../packages/server/src/store/index.ts';
import { type Backend, execOnOutbox, openOutbox, type Outbox } from './deliver-outbox.ts';
import { median } from './harness.ts';

export type Beside = 'nothing' | 'down' | 'capped';
export const BESIDE: readonly Beside[] = ['nothing', 'down', 'capped'];

/** Milliseconds per claim of the other receiver's callback, one figure per claim. */
export interface FairnessRun {
  claims: number[];
  /** The settle that opened the down receiver's circuit (and parked its backlog), ms. */
  openedMs?: number;
}

const nextId = uuidv7Generator();
const BACKLOG_URL = 'http://127.0.0.1:1/backlog';
const OTHER_URL = 'http://127.0.0.1:2/other';
const CAP = 4;
const LEASE_MS = 60_000;
/** Opens a circuit at the fifth failure in a row, as the default policy does. */
const POLICY: CircuitPolicy = { failureThreshold: 5, openMs: 3_600_000, maxOpenMs: 3_600_000 };

/**
 * Inserts `n` finished operations of the backlog's receiver with their callbacks, all due, with
 * plain SQL on a connection of its own (what finishOperation writes, far faster).
 */
async function loadBacklog(outbox: Outbox, n: number): Promise<void> {
  const key = endpointKeyOf(BACKLOG_URL);
  const at = Date.now() - n - 1_000;
  const operations = (series: string) =>
    `INSERT INTO operations (id_gen, kind, family, state, webhook_url, endpoint_key, prompt, created_at,
       started_at, finished_at, error_message, runs)
     SELECT 'backlog-' || i, 'image', 'A', 'failed', '${BACKLOG_URL}', '${key}', 'bench', ${at} + i,
       ${at} + i, ${at} + i, 'failed', 1 FROM ${series}`;
  const callbacks = `INSERT INTO callbacks (id_gen, state, next_attempt_at, attempt_count, round,
       round_attempt_count, endpoint_key, created_at)
     SELECT id_gen, 'pending', finished_at, 0, 1, 0, endpoint_key, created_at FROM operations`;
  await execOnOutbox(outbox, n, (series) => [operations(series), callbacks, 'ANALYZE']);
}

async function otherReceiversCallbacks(store: Store, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const id = nextId();
    await store.createOperation({
      id_gen: id,
      client: 'default',
      kind: 'image',
      family: 'A',
      webhook_url: OTHER_URL,
      prompt: 'b',
    });
    await store.finishOperation(id, { state: 'failed', message: 'failed' });
  }
}

function failed(id: string, now: number): Settlement {
  return {
    id_gen: id,
    attempt: { at: now, duration_ms: 1, status_code: 503, error: null },
    next: { state: 'retrying', next_attempt_at: now + 5_000 },
    circuit: 'failed',
  };
}

/**
 * `claims` claims of one callback of the other receiver, each timed and then settled delivered,
 * with `backlog` callbacks of the backlog's receiver beside them as `beside` says.
 */
export async function fairnessRun(
  backend: Backend,
  beside: Beside,
  backlog: number,
  claims: number,
): Promise<FairnessRun> {
  const outbox = await openOutbox(backend, Buffer.from([0xff, 0xd8, 0xff, 0xd9]));
  try {
    const { store } = outbox;
    const run: FairnessRun = { claims: [] };
    if (beside !== 'nothing') {
      await loadBacklog(outbox, backlog);
      // Its first callbacks go out: at its cap, or failing until its circuit opens.
      const taken = await store.claimCallbacks('bench', {
        limit: beside === 'down' ? POLICY.failureThreshold : CAP,
        leaseMs: LEASE_MS,
        perEndpointLimit: CAP + POLICY.failureThreshold,
      });
      if (beside === 'down') {
        const now = Date.now();
        const started = performance.now();
        await store.settleCallbacks(
          'bench',
          taken.map((c) => failed(c.callback.id_gen, now)),
          { circuit: POLICY },
        );
        run.openedMs = performance.now() - started;
        const circuit = await store.getEndpoint(endpointKeyOf(BACKLOG_URL));
        if (circuit.circuit_state !== 'open') throw new Error('fairness: the circuit did not open');
      }
    }
    await otherReceiversCallbacks(store, claims);
    const other = endpointKeyOf(OTHER_URL);
    for (let i = 0; i < claims; i++) {
      const started = performance.now();
      const [claimed] = await store.claimCallbacks('bench', {
        limit: 1,
        leaseMs: LEASE_MS,
        perEndpointLimit: CAP,
      });
      run.claims.push(performance.now() - started);
      if (claimed?.callback.endpoint_key !== other) {
        throw new Error(`fairness (${beside}): the claim took ${claimed?.callback.id_gen ?? 'nothing'}`);
      }
      const now = Date.now();
      await store.settleCallbacks(
        'bench',
        [
          {
            id_gen: claimed.callback.id_gen,
            attempt: { at: now, duration_ms: 1, status_code: 200, error: null },
            next: { state: 'delivered' },
            circuit: 'answered',
          },
        ],
        { circuit: POLICY },
      );
    }
    return run;
  } finally {
    await outbox.dispose();
  }
}

/** The median claim of a run, ms. */
export function medianClaim(run: FairnessRun): number {
  return median(run.claims) ?? Number.NaN;
}
