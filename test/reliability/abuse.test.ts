/**
 * The CI-sized abuse run (the long one is `npm run soak -- --only abuse`): hostile bodies,
 * path traversal, slowloris and failing disks against `mediahook listen`; see
 * docs/reliability.md.
 */
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { type AddressInfo, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runAbuse } from '../support/abuse/abuse.ts';
import { createListenServer } from '../../packages/mediahook/src/web/listen-server.ts';

describe('mediahook listen under abuse', () => {
  it('answers every hostile body with its code, writes only where it should, outlasts slowloris and disk errors', async () => {
    const figures = await runAbuse({
      slowlorisConnections: 100,
      slowlorisMs: 3_000,
      validDuringSlowloris: 20,
    });
    expect(figures.failures).toEqual([]);
    expect(figures.cases.length).toBeGreaterThan(30);
    expect(figures.slowloris.accepted).toBe(20);
    expect(figures.slowloris.receiverFdsHeld).toBeGreaterThanOrEqual(100);
    expect(Object.values(figures.disk.answers)).toContain('500 storage_failed');
  }, 180_000);

  it('gets its refusal to a sender that is still uploading and reads the answer late', async () => {
    const out = await mkdtemp(join(tmpdir(), 'mediahook-linger-'));
    const listen = createListenServer({ out });
    listen.server.listen(0, '127.0.0.1');
    await once(listen.server, 'listening');
    const { port } = listen.server.address() as AddressInfo;
    // A header block far over the limit: refused after 16 KiB, with 8 MiB still to come.
    const body = Buffer.concat([
      Buffer.from('--b\r\nContent-Disposition: form-data; name="status"'),
      Buffer.alloc(8 * 1024 * 1024, '\r'),
    ]);
    try {
      for (let round = 0; round < 3; round++) {
        const answer = await new Promise<string>((resolve) => {
          const socket = connect(port, '127.0.0.1');
          const received: Buffer[] = [];
          // Busy writing, this sender reads nothing for a while: the answer must wait for it.
          socket.pause();
          setTimeout(() => socket.on('data', (data: Buffer) => received.push(data)).resume(), 300);
          socket.on('error', () => {});
          socket.on('close', () => resolve(Buffer.concat(received).toString('utf8')));
          socket.write(
            'POST /hook HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n' +
              `Content-Type: multipart/form-data; boundary=b\r\nContent-Length: ${body.length}\r\n\r\n`,
          );
          socket.write(body);
        });
        expect(answer).toMatch(/^HTTP\/1\.1 500/);
        expect(answer).toContain('"code":"headers_too_large"');
      }
    } finally {
      await listen.close();
      await rm(out, { recursive: true, force: true });
    }
  }, 60_000);
});
