/**
 * Standard Webhooks signatures through every adapter: accepted when one signature matches one
 * secret over the exact bytes and the timestamp is fresh; `bad_signature` otherwise, with
 * nothing stored and no handler called.
 */
import { describe, expect, it } from 'vitest';
import { signBody } from '../../src/protocol/index.ts';
import { ADAPTERS, type Harness, type HarnessOptions, startReceiver } from './adapters.ts';
import { type Answer, jpegBytes, newSecret, post, send, storedFiles, wire } from './helpers.ts';

function expectRejected(answer: Answer, code: string): void {
  expect(answer.status).toBe(500);
  expect(answer.body.error?.code).toBe(code);
  expect(answer.body.error?.message).toEqual(expect.any(String));
}

async function expectNothingKept(harness: Harness): Promise<void> {
  await harness.settled(1);
  expect(harness.successes).toHaveLength(0);
  expect(harness.errors).toHaveLength(0);
  expect(await storedFiles(harness.out)).toEqual([]);
  expect(await harness.receiver.store.list()).toEqual([]);
}

const now = () => Math.floor(Date.now() / 1000);

/** `body` with the first `from` (latin1, byte for byte) replaced by `to`. */
function replaceOnce(body: Buffer, from: string, to: string): Buffer {
  const at = body.indexOf(Buffer.from(from, 'latin1'));
  expect(at).toBeGreaterThanOrEqual(0);
  return Buffer.concat([body.subarray(0, at), Buffer.from(to, 'latin1'), body.subarray(at + from.length)]);
}

describe.each(ADAPTERS)('$name', (adapter) => {
  async function signed(secret: string | string[], options: HarnessOptions = {}) {
    return startReceiver(adapter, { secret, ...options });
  }

  it('accepts a good signature, success and error', async () => {
    const secret = newSecret();
    const harness = await signed(secret);
    const success = await wire({ family: 'A', event: 'success', mediaType: 'video/mp4', sign: secret });
    expect((await send(harness.url, success)).status).toBe(200);
    const error = await wire({ family: 'B', event: 'error', sign: secret });
    expect((await send(harness.url, error)).status).toBe(200);
    expect(harness.successes).toHaveLength(1);
    expect(harness.errors).toHaveLength(1);
  });

  it('rejects a signature made with another secret', async () => {
    const harness = await signed(newSecret());
    expectRejected(await send(harness.url, await wire({ sign: newSecret() })), 'bad_signature');
    await expectNothingKept(harness);
  });

  it('rejects a timestamp ten minutes old, and one ten minutes ahead', async () => {
    const secret = newSecret();
    const harness = await signed(secret);
    expectRejected(
      await send(harness.url, await wire({ sign: secret, timestamp: now() - 600 })),
      'bad_signature',
    );
    expectRejected(
      await send(harness.url, await wire({ sign: secret, timestamp: now() + 600 })),
      'bad_signature',
    );
    await expectNothingKept(harness);
  });

  it('accepts a timestamp four minutes old, and honours a tighter tolerance', async () => {
    const secret = newSecret();
    const lenient = await signed(secret);
    expect((await send(lenient.url, await wire({ sign: secret, timestamp: now() - 240 }))).status).toBe(200);
    const strict = await signed(secret, { toleranceSeconds: 60 });
    expectRejected(
      await send(strict.url, await wire({ sign: secret, timestamp: now() - 240 })),
      'bad_signature',
    );
  });

  it('accepts the old and the new secret while a rotation is under way', async () => {
    const [before, after] = [newSecret(), newSecret()];
    const harness = await signed([before, after]);
    expect((await send(harness.url, await wire({ sign: before }))).status).toBe(200);
    expect((await send(harness.url, await wire({ sign: after }))).status).toBe(200);
    expectRejected(await send(harness.url, await wire({ sign: newSecret() })), 'bad_signature');
    expect(harness.successes).toHaveLength(2);
  });

  it('accepts a header with two signatures when one of them matches', async () => {
    const [before, after] = [newSecret(), newSecret()];
    const harness = await signed(after);
    const callback = await wire({ sign: [before, after] });
    expect(callback.headers['webhook-signature']?.split(' ')).toHaveLength(2);
    expect((await send(harness.url, callback)).status).toBe(200);
  });

  it('rejects a body changed after signing, and keeps no file', async () => {
    const secret = newSecret();
    const harness = await signed(secret);
    const callback = await wire({ sign: secret });
    const body = Buffer.from(callback.body);
    // A byte inside the JPEG, well past the part headers: the shape stays valid, only the bytes differ.
    const at = body.length - 200;
    body[at] = body[at]! ^ 0xff;
    expectRejected(await post(harness.url, body, callback.headers), 'bad_signature');
    await expectNothingKept(harness);
  });

  it.each([
    ['a part renamed', (body: Buffer) => replaceOnce(body, 'name="status"', 'name="statuz"')],
    ['the file made not a JPEG', (body: Buffer) => replaceOnce(body, '\r\n\r\n\xff\xd8\xff', '\r\n\r\nGIF')],
    ['the close delimiter cut off', (body: Buffer) => body.subarray(0, body.length - 8)],
  ])('answers bad_signature, not what the content breaks, to a signed body with %s', async (_, change) => {
    const secret = newSecret();
    const harness = await signed(secret);
    const callback = await wire({ sign: secret, file: jpegBytes(300_000) });
    const changed = change(callback.body);
    expect(changed.equals(callback.body)).toBe(false);
    expectRejected(await post(harness.url, changed, callback.headers), 'bad_signature');
    await expectNothingKept(harness);
  });

  it('keeps the content’s own code for a malformed body that was signed as it is', async () => {
    const secret = newSecret();
    const harness = await signed(secret);
    const callback = await wire({ file: jpegBytes(300_000) });
    const body = replaceOnce(callback.body, 'name="status"', 'name="statuz"');
    const headers = { ...callback.headers, ...(await signBody(secret, callback.id, body)) };
    expectRejected(await post(harness.url, body, headers), 'unexpected_part');
    await expectNothingKept(harness);
  });

  it.each([
    ['a Content-Type that is not multipart', { 'content-type': 'text/plain' }, 'not_multipart'],
    ['no boundary', { 'content-type': 'multipart/form-data' }, 'malformed_multipart'],
    ['a Content-Encoding', { 'content-encoding': 'gzip' }, 'unsupported_encoding'],
  ])('answers a body refused for %s by its signature first', async (_, changed, code) => {
    const secret = newSecret();
    const harness = await signed(secret);
    const callback = await wire();
    const headers = { ...callback.headers, ...changed };
    // Signed with another secret: the sender learns only that the signature does not hold.
    const wrong = { ...headers, ...(await signBody(newSecret(), callback.id, callback.body)) };
    expectRejected(await post(harness.url, callback.body, wrong), 'bad_signature');
    // Signed as it is: the sender is told what is wrong with its request.
    const right = { ...headers, ...(await signBody(secret, callback.id, callback.body)) };
    expectRejected(await post(harness.url, callback.body, right), code);
    await expectNothingKept(harness);
  });

  it('rejects a valid signature whose webhook-id is not the id_gen', async () => {
    const secret = newSecret();
    const harness = await signed(secret);
    const callback = await wire();
    // The HMAC covers these exact bytes, but names another operation: a replay across ids.
    const headers = await signBody(secret, 'some-other-operation', callback.body);
    expectRejected(
      await post(harness.url, callback.body, { ...callback.headers, ...headers }),
      'bad_signature',
    );
    await expectNothingKept(harness);
  });

  it.each([['webhook-signature'], ['webhook-timestamp'], ['webhook-id']])(
    'rejects a callback without %s',
    async (header) => {
      const secret = newSecret();
      const harness = await signed(secret);
      const callback = await wire({ sign: secret });
      const headers = { ...callback.headers };
      delete headers[header];
      expectRejected(await post(harness.url, callback.body, headers), 'bad_signature');
      await expectNothingKept(harness);
    },
  );

  it('rejects an unsigned callback when a secret is set, and a garbled signature', async () => {
    const secret = newSecret();
    const harness = await signed(secret);
    expectRejected(await send(harness.url, await wire()), 'bad_signature');
    const callback = await wire({ sign: secret });
    const garbled = { ...callback.headers, 'webhook-signature': 'v2,abc v1,not-base64!' };
    expectRejected(await post(harness.url, callback.body, garbled), 'bad_signature');
    expect(harness.successes).toHaveLength(0);
  });

  it('answers an unsigned 3 MB callback without waiting for its body', async () => {
    const harness = await signed(newSecret());
    expectRejected(await send(harness.url, await wire({ file: jpegBytes(3_000_000) })), 'bad_signature');
    await expectNothingKept(harness);
  });

  it('tells an unsigned sender only that it is unsigned, before the size and encoding checks', async () => {
    const harness = await signed(newSecret(), { limits: { fileBytes: 1000 } });
    expectRejected(await send(harness.url, await wire({ file: jpegBytes(5000) })), 'bad_signature');
    const callback = await wire();
    const gzipped = { ...callback.headers, 'content-encoding': 'gzip' };
    expectRejected(await post(harness.url, callback.body, gzipped), 'bad_signature');
    await expectNothingKept(harness);
  });

  it('ignores signature headers when no secret is set', async () => {
    const harness = await startReceiver(adapter);
    expect((await send(harness.url, await wire({ sign: newSecret() }))).status).toBe(200);
  });
});
