/**
 * The project's own receiver (the `mediahook listen` server, in process) with counters around
 * it: every request that arrives, and what the receiver made of each, per `id_gen`.
 */
import { once } from 'node:events';
import { readdir } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { createListenServer, type ListenServer } from '../../packages/mediahook/src/web/listen-server.ts';

interface CountingReceiver {
  url: string;
  listen: ListenServer;
  /** POST requests that reached the server, whole or not. */
  arrivals(): number;
  /** Handler calls per `id_gen`: the receiver's "once" is exactly one here. */
  handled: Map<string, number>;
  /** Accepted again, recognised as a repeat, per `id_gen`. */
  duplicates: Map<string, number>;
  /** Refusals by code. */
  rejected: Map<string, number>;
  /** Result files stored, and leftover temporary files (there must be none at rest). */
  files(): Promise<{ stored: string[]; partial: string[] }>;
  close(): Promise<void>;
}

export async function startCountingReceiver(out: string): Promise<CountingReceiver> {
  const handled = new Map<string, number>();
  const duplicates = new Map<string, number>();
  const rejected = new Map<string, number>();
  const bump = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
  const listen = createListenServer({
    out,
    onSuccess: (callback) => void bump(handled, callback.id_gen),
    onError: (callback) => void bump(handled, callback.id_gen),
    onOutcome(outcome) {
      if (outcome.verdict === 'duplicate') bump(duplicates, outcome.callback!.id_gen);
      if (outcome.verdict === 'rejected') bump(rejected, outcome.error?.code ?? 'unknown');
    },
  });
  let arrivals = 0;
  listen.server.on('request', (req) => {
    if (req.method === 'POST') arrivals++;
  });
  listen.server.listen(0, '127.0.0.1');
  await once(listen.server, 'listening');
  const { port } = listen.server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    listen,
    arrivals: () => arrivals,
    handled,
    duplicates,
    rejected,
    async files() {
      const names = await readdir(out);
      return {
        stored: names.filter((n) => /\.(jpg|mp4)$/.test(n)),
        partial: names.filter((n) => n.endsWith('.part')),
      };
    },
    async close() {
      listen.server.closeAllConnections();
      await listen.close();
    },
  };
}
