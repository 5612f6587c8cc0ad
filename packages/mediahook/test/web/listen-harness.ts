/**
 * A `listen` server in-process on 127.0.0.1, recording every outcome, for tests that need a
 * real receiver to deliver to or to look at.
 */
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ReceiverOutcome } from '../../src/receiver/index.ts';
import { createListenServer, type ListenServer } from '../../src/web/listen-server.ts';

export async function listen(server: Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

export interface Receiving {
  url: string;
  outcomes: ReceiverOutcome[];
  listen: ListenServer;
  /** Resolves once a callback for each id was accepted (or the timeout passes: then throws). */
  waitFor(ids: readonly string[], timeoutMs?: number): Promise<void>;
}

export async function startReceiving(out: string, secret?: string): Promise<Receiving> {
  const outcomes: ReceiverOutcome[] = [];
  const listenServer = createListenServer({ out, secret, onOutcome: (o) => outcomes.push(o) });
  const url = await listen(listenServer.server);
  return {
    url,
    outcomes,
    listen: listenServer,
    async waitFor(ids, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const accepted = new Set(
          outcomes.filter((o) => o.verdict === 'accepted').map((o) => o.callback!.id_gen),
        );
        if (ids.every((id) => accepted.has(id))) return;
        if (Date.now() > deadline)
          throw new Error(`callbacks did not arrive: ${ids.filter((id) => !accepted.has(id))}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
  };
}

/** A receiver in a directory of its own: `close()` stops it and removes the directory. */
export type TempReceiving = Receiving & { close(): Promise<void> };

/** {@link startReceiving} into a fresh directory. */
export async function startTempReceiving(secret?: string): Promise<TempReceiving> {
  const out = await mkdtemp(join(tmpdir(), 'mediahook-received-'));
  const receiving = await startReceiving(out, secret);
  return {
    ...receiving,
    async close() {
      await receiving.listen.close();
      await rm(out, { recursive: true, force: true });
    },
  };
}
