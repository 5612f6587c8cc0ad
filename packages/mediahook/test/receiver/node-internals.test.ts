/**
 * The `node:http` internals mediahook relies on, one test per behaviour: should a Node release
 * move one, these fail here rather than the adapters misbehaving quietly.
 */
import { createServer, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  allowHalfOpen,
  answerOwedOn,
  beforeFirstRead,
  serverOf,
} from '../../src/receiver/adapters/node-internals.ts';

async function serve(handler: RequestListener, halfOpen = false) {
  const server = createServer(handler);
  if (halfOpen) allowHalfOpen(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { server, port: (server.address() as AddressInfo).port };
}

/** Sends `text` on a fresh connection, half-closes when told to, and reads all it gets. */
function exchange(port: number, text: string, halfClose: boolean): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.setEncoding('latin1').on('data', (chunk: string) => (answer += chunk));
    socket.on('error', () => {});
    socket.on('close', () => resolve(answer));
    socket.write(text);
    if (halfClose) socket.end();
    else socket.setTimeout(2000, () => socket.end());
  });
}

const POST = 'POST /hook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello';

/** Answers a while after the body is read, as a receiver storing a file does. */
const answerLater: RequestListener = (req, res) => {
  req.resume();
  // Long enough for the sender's FIN to arrive first; nothing is asserted about the time.
  req.on('end', () => setTimeout(() => res.end('stored'), 100));
};

describe('node:http internals', () => {
  it('allowHalfOpen: a sender that half-closes after its request still gets the answer', async () => {
    const allowed = await serve(answerLater, true);
    expect(await exchange(allowed.port, POST, true)).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*stored$/);
  });

  it('allowHalfOpen: without it, Node drops that answer (what the switch exists for)', async () => {
    const { server, port } = await serve(answerLater);
    expect((server as { httpAllowHalfOpen?: boolean }).httpAllowHalfOpen).toBe(false);
    expect(await exchange(port, POST, true)).toBe('');
  });

  it('answerOwedOn: true while a response is being written, false once it is done', async () => {
    const seen: boolean[] = [];
    let socketOf: IncomingMessage['socket'] | undefined;
    const { port } = await serve((req, res: ServerResponse) => {
      socketOf = req.socket;
      seen.push(answerOwedOn(req.socket));
      res.on('finish', () => setImmediate(() => seen.push(answerOwedOn(socketOf!))));
      req.resume();
      req.on('end', () => res.end('ok'));
    });
    await exchange(port, POST, false);
    expect(seen).toEqual([true, false]);
  });

  it('serverOf: the server a request came through', async () => {
    let found: object | undefined;
    const { server, port } = await serve((req, res) => {
      found = serverOf(req);
      req.resume();
      res.end();
    });
    await exchange(port, POST, false);
    expect(found).toBe(server);
  });

  it('beforeFirstRead: runs once when a reader first pulls a body that has not arrived', async () => {
    // The sender waits for 100 Continue, which only the hook sends: the read pulls it out.
    let calls = 0;
    const server = createServer();
    server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
      beforeFirstRead(req, () => {
        calls++;
        res.writeContinue();
      });
      setImmediate(() => {
        let body = '';
        req.setEncoding('latin1').on('data', (chunk: string) => (body += chunk));
        req.on('end', () => res.end(`read ${body}`));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const answer = await new Promise<string>((resolve) => {
      const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
      let text = '';
      socket.setEncoding('latin1').on('data', (chunk: string) => {
        text += chunk;
        if (chunk.startsWith('HTTP/1.1 100 Continue')) socket.write('hello');
      });
      socket.on('close', () => resolve(text));
      socket.write(POST.replace('\r\n\r\nhello', '\r\nExpect: 100-continue\r\n\r\n'));
    });
    expect(answer).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK\r\n[\s\S]*read hello$/);
    expect(calls).toBe(1);
  });
});
