/**
 * Kept requests sent again: `mediahook replay` byte-exact (original headers, or fresh
 * signatures), `--keep-requests` / `--keep-bytes` eviction, and the inspector's replay route,
 * which only the inspector's own page may use and which sends only to `--forward-to`.
 */
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { SignatureVerifier } from '../../src/protocol/index.ts';
import {
  forwardingPerTest,
  jpegCallback,
  type Sent,
  sendCallback,
  WEBHOOK_HEADERS,
} from './forward-helpers.ts';
import { runCli } from './helpers.ts';
import { startListen } from './listen-helpers.ts';

const SENDER_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const APP_SECRET = 'whsec_QXBwU2VjcmV0Rm9yVGhlTG9jYWxBcHAx';

const keptIds = async (out: string) =>
  (await readdir(join(out, '.requests'))).filter((name) => name.endsWith('.json')).length;

describe('replay', () => {
  const t = forwardingPerTest('mediahook-replay-');

  async function receive(args: string[], ids: string[]): Promise<Sent[]> {
    t.listener = await startListen(['--out', t.out, '--json', ...args]);
    const sent: Sent[] = [];
    for (const id of ids)
      sent.push(await sendCallback(t.listener.url, jpegCallback(id), { secret: SENDER_SECRET }));
    await t.listener.waitForLines(ids.length);
    return sent;
  }

  it('mediahook replay sends every kept callback again, oldest first, byte-exact', async () => {
    const sent = await receive([], ['op-1', 'op-2']);
    const replayed = await runCli(['replay', t.out, t.app.url]);
    expect(replayed.code).toBe(0);
    expect(t.app.requests.map((r) => r.headers['webhook-id'])).toEqual(['op-1', 'op-2']);
    t.app.requests.forEach((got, index) => {
      expect(got.sha256).toBe(sent[index]!.sha256);
      expect(got.headers['content-type']).toBe(sent[index]!.headers['content-type']);
      for (const name of WEBHOOK_HEADERS) expect(got.headers[name]).toBe(sent[index]!.headers[name]);
    });
    expect(replayed.stdout.trim().split('\n')).toHaveLength(2);
  });

  it('signs afresh with --secret, and sends one with --id', async () => {
    const sent = await receive([], ['op-1', 'op-2']);
    const listed = await runCli(['replay', t.out, t.app.url, '--json']);
    const kept = listed.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(kept.map((k) => k.id_gen)).toEqual(['op-1', 'op-2']);
    t.app.requests.length = 0;
    const replayed = await runCli(['replay', t.out, '--id', kept[1].id, t.app.url, '--secret', APP_SECRET]);
    expect(replayed.code).toBe(0);
    expect(t.app.requests).toHaveLength(1);
    const got = t.app.requests[0]!;
    expect(got.sha256).toBe(sent[1]!.sha256);
    expect(got.headers['webhook-id']).toBe('op-2');
    const verifier = new SignatureVerifier([APP_SECRET], (name) => got.headers[name] as string | undefined);
    verifier.update(got.body!);
    expect(() => verifier.verify()).not.toThrow();
  });

  it('exits 1 when the URL answers otherwise than 2xx, or nothing was kept', async () => {
    await receive([], ['op-1']);
    t.app.answer = { status: 500, body: 'down', type: 'text/plain' };
    expect((await runCli(['replay', t.out, t.app.url])).code).toBe(1);
    expect((await runCli(['replay', t.out, '--id', 'nope', t.app.url])).code).toBe(1);
    const empty = await runCli(['replay', join(t.out, 'nothing'), t.app.url]);
    expect(empty.code).toBe(1);
    expect(empty.stderr).toMatch(/no callback was kept/);
  });

  it('keeps the last --keep-requests callbacks within --keep-bytes, evicting the oldest', async () => {
    await receive(['--keep-requests', '2'], ['op-1', 'op-2', 'op-3']);
    expect(await keptIds(t.out)).toBe(2);
    expect((await runCli(['replay', t.out, t.app.url])).code).toBe(0);
    expect(t.app.requests.map((r) => r.headers['webhook-id'])).toEqual(['op-2', 'op-3']);
    await t.listener!.stop();
    t.listener = undefined;
    // Each request is about 3.6 KB: 5 KiB holds one.
    await receive(['--keep-bytes', '5KiB'], ['op-4']);
    expect(await keptIds(t.out)).toBe(1);
  });

  it("keeps the raw requests as the owner's alone, or with the modes asked for", async () => {
    const modes = async () => {
      const folder = join(t.out, '.requests');
      const files = await readdir(folder);
      const fileModes = await Promise.all(
        files.map(async (name) => (await stat(join(folder, name))).mode & 0o777),
      );
      return { folder: (await stat(folder)).mode & 0o777, files: [...new Set(fileModes)] };
    };
    await receive([], ['op-1']);
    expect(await modes()).toEqual({ folder: 0o700, files: [0o600] });
    await t.listener!.stop();
    await rm(join(t.out, '.requests'), { recursive: true });
    await receive(['--file-mode', '0640', '--dir-mode', '0750'], ['op-2']);
    expect(await modes()).toEqual({ folder: 0o750, files: [0o640] });
  });

  describe("the inspector's replay route", () => {
    async function replayPath(): Promise<string> {
      const list = (await (await request(`${t.listener!.url}requests.json`)).body.json()) as {
        replay: string;
      }[];
      return list[0]!.replay;
    }
    const post = (path: string, headers: Record<string, string> = {}) =>
      request(`${t.listener!.url}${path.slice(1)}`, { method: 'POST', headers });

    it('sends the kept request to --forward-to again when the page itself asks', async () => {
      const [sent] = await receive(['--forward-to', t.app.url], ['op-1']);
      const path = await replayPath();
      const origin = t.listener!.url.replace(/\/$/, '');
      const response = await post(path, { origin, 'sec-fetch-site': 'same-origin' });
      expect(response.statusCode).toBe(200);
      expect(await response.body.json()).toMatchObject({ forward: { status: 200 } });
      expect(t.app.requests).toHaveLength(2);
      expect(t.app.requests[1]!.sha256).toBe(sent!.sha256);
      for (const name of WEBHOOK_HEADERS) expect(t.app.requests[1]!.headers[name]).toBe(sent!.headers[name]);
    });

    it.each([
      ['another site', { 'sec-fetch-site': 'cross-site' }, 403, 'cross_site_request'],
      ['a sibling site', { 'sec-fetch-site': 'same-site' }, 403, 'cross_site_request'],
      ['another origin', { origin: 'http://evil.example' }, 403, 'cross_site_request'],
      ['another Host', { host: 'evil.example' }, 421, 'host_not_allowed'],
    ])('refuses a request from %s, and sends nothing', async (_why, headers, status, code) => {
      await receive(['--forward-to', t.app.url], ['op-1']);
      const response = await post(await replayPath(), headers);
      expect(response.statusCode).toBe(status);
      expect(((await response.body.json()) as any).error.code).toBe(code);
      expect(t.app.requests).toHaveLength(1);
    });

    it('answers 404 for a request no longer kept, 409 without --forward-to', async () => {
      await receive(['--forward-to', t.app.url], ['op-1']);
      const missing = await post('/.mediahook/replay/01a2226c-9c7e-76f5-91e6-d4c2f42bba3d');
      expect(missing.statusCode).toBe(404);
      await missing.body.dump();
      // Its folder is listen's own: no callback is taken there.
      const elsewhere = await post('/.mediahook/hook');
      expect(elsewhere.statusCode).toBe(404);
      expect(((await elsewhere.body.json()) as any).error.code).toBe('not_found');
      await t.listener!.stop();
      t.listener = undefined;
      await receive([], ['op-2']);
      const list = (await (await request(`${t.listener!.url}requests.json`)).body.json()) as {
        replay: unknown;
      }[];
      expect(list[0]!.replay).toBeNull();
      const none = await post('/.mediahook/replay/01a2226c-9c7e-76f5-91e6-d4c2f42bba3d');
      expect(none.statusCode).toBe(409);
      expect(((await none.body.json()) as any).error.code).toBe('no_forward_target');
    });
  });
});
