/**
 * postCallback over TLS: Node's default certificate checks, the handshake inside the connect
 * timeout, and a failed handshake told by its own code. Receivers on loopback only.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isTlsErrorCode } from '../../src/cli/tls-error.ts';
import { runCli } from './helpers.ts';
import { closeAll, failureOf, post, serveRaw, text } from './post-helpers.ts';

let dir: string;
let cert: string;
let server: Server;
let url: URL;
const seen: string[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mediahook-post-tls-'));
  const key = join(dir, 'key.pem');
  cert = join(dir, 'cert.pem');
  // A certificate for 127.0.0.1 that no default CA signed.
  const subject = ['-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'];
  const curve = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1'];
  execFileSync(
    'openssl',
    ['req', '-x509', ...curve, '-nodes', ...subject, '-days', '1', '-keyout', key, '-out', cert],
    {
      stdio: 'ignore',
    },
  );
  server = createServer({ key: await readFile(key), cert: await readFile(cert) }, (req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      seen.push(body);
      res.end('over tls');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = new URL(`https://127.0.0.1:${(server.address() as AddressInfo).port}/hook`);
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await rm(dir, { recursive: true, force: true });
  await closeAll();
});

describe('postCallback over https', () => {
  it('refuses a certificate no trusted CA signed, with the verify code, sending nothing', async () => {
    const error = await failureOf(post(url, text('secret')));
    expect(error.code).toBe('DEPTH_ZERO_SELF_SIGNED_CERT');
    expect(isTlsErrorCode(error.code)).toBe(true);
    expect(error).toMatchObject({ bytesSent: 0, unreachable: false, timedOut: false });
    expect(seen).toEqual([]);
  });

  it('sends when the certificate is trusted (here through NODE_EXTRA_CA_CERTS)', async () => {
    const run = await runCli(['send', url.href, '--family', 'A', '--message', 'hello tls'], {
      env: { NODE_EXTRA_CA_CERTS: cert },
    });
    expect(run).toMatchObject({ code: 0, stdout: 'HTTP 200 OK\nover tls\n' });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toContain('hello tls');
  });

  it('holds a handshake that never ends to the connect timeout', async () => {
    // Takes the TCP connection and never says a word of TLS.
    const silent = await serveRaw(() => {});
    silent.protocol = 'https:';
    const started = performance.now();
    const error = await failureOf(post(silent, text('x'), { connectTimeoutMs: 300 }));
    expect(error).toMatchObject({ code: 'connect_timeout', unreachable: true, bytesSent: 0 });
    expect(error.message).toBe(`could not connect to ${silent.host} within 300ms`);
    expect(performance.now() - started).toBeLessThan(1000);
  });
});
