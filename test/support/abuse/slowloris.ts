/**
 * Slowloris: many connections that send a request one byte at a time (half of them trickle
 * headers, half a body), held open while valid callbacks keep arriving on other connections.
 * The valid ones must all be accepted; the slow ones must cost the receiver nothing else.
 */
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { Agent, request } from 'undici';
import { encodeCallback } from '../../../packages/mediahook/src/protocol/index.ts';
import { sleep } from '../processes.ts';
import { BOUNDARY } from './cases.ts';
import type { ListenProcess } from './listen-process.ts';

export interface SlowlorisFigures {
  connections: number;
  /** The receiver's limit on open files (`ulimit -n`). */
  fileLimit: number;
  /** The receiver's open descriptors while every slow connection was held. */
  receiverFdsHeld: number;
  /** Slow connections the receiver had closed by the end of the hold. */
  closedByReceiver: number;
  validSent: number;
  accepted: number;
  /** Of those, success callbacks: each stored one file. */
  filesStored: number;
  failures: string[];
}

function fileLimit(pid: number): number {
  const limits = readFileSync(`/proc/${pid}/limits`, 'utf8');
  return Number(/Max open files\s+(\d+)/.exec(limits)?.[1] ?? 0);
}

export async function runSlowloris(
  listen: ListenProcess,
  options: { connections: number; holdMs: number; valid: number },
): Promise<SlowlorisFigures> {
  const failures: string[] = [];
  const limit = fileLimit(listen.cli.child.pid!);
  if (limit < options.connections + 200) {
    failures.push(`ulimit -n is ${limit}: too low to hold ${options.connections} connections; raise it`);
  }
  const sockets: Socket[] = [];
  let closedByReceiver = 0;
  let ending = false;
  // Opened in batches: a burst of a thousand connects would only measure the listen backlog.
  for (let n = 0; n < options.connections; n++) {
    const socket = connect(listen.port, '127.0.0.1');
    socket.on('error', () => {});
    socket.on('close', () => {
      if (!ending) closedByReceiver++;
    });
    socket.write(
      n % 2 === 0
        ? 'POST /hook HTTP/1.1\r\nHost: 127.0.0.1\r\n'
        : `POST /hook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\n` +
            `Content-Length: 10000000\r\n\r\n--${BOUNDARY}\r\n`,
    );
    sockets.push(socket);
    if (n % 50 === 49) await sleep(20);
  }
  // One more byte on every connection each second: never idle, never done.
  const trickle = setInterval(() => {
    for (const [n, socket] of sockets.entries()) if (!socket.destroyed) socket.write(n % 2 === 0 ? 'X' : 'x');
  }, 1_000);
  const agent = new Agent({ connections: 4, headersTimeout: 30_000, bodyTimeout: 30_000 });
  let accepted = 0;
  let filesStored = 0;
  let receiverFdsHeld = 0;
  try {
    await sleep(500);
    receiverFdsHeld = listen.fds();
    const deadline = Date.now() + options.holdMs;
    for (let n = 0; n < options.valid; n++) {
      const id = `slowloris-${process.pid}-${Date.now()}-${n}`;
      const encoded = await encodeCallback(
        n % 2 === 0
          ? {
              family: 'B',
              event: 'error',
              status: 'error',
              id_gen: id,
              time_gen: new Date().toISOString(),
              message: 'no',
            }
          : {
              family: 'A',
              event: 'success',
              status: 'success',
              id_gen: id,
              time_gen: new Date().toISOString(),
              file: Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(50_000, 1)]),
              mediaType: 'image/jpeg',
            },
      );
      const chunks: Buffer[] = [];
      for await (const chunk of encoded.body()) chunks.push(chunk);
      try {
        const response = await request(`${listen.url}/hook`, {
          method: 'POST',
          dispatcher: agent,
          headers: { 'content-type': encoded.contentType },
          body: Buffer.concat(chunks),
        });
        await response.body.dump();
        if (response.statusCode === 200) {
          accepted++;
          filesStored += n % 2;
        } else failures.push(`a valid callback got ${response.statusCode} during slowloris`);
      } catch (error) {
        failures.push(`a valid callback failed during slowloris: ${(error as Error).message}`);
      }
      // Spread over the hold, so callbacks arrive all the while the slow connections are open.
      await sleep(Math.max(0, (deadline - Date.now()) / (options.valid - n)));
    }
    if (!(await listen.alive())) failures.push('the receiver died under slowloris');
  } finally {
    clearInterval(trickle);
    ending = true;
    for (const socket of sockets) socket.destroy();
    await agent.close();
  }
  return {
    connections: options.connections,
    fileLimit: limit,
    receiverFdsHeld,
    closedByReceiver,
    validSent: options.valid,
    accepted,
    filesStored,
    failures,
  };
}
