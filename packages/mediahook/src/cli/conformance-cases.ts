import { randomBytes } from 'node:crypto';
import { uuidv7 } from '../protocol/uuidv7.ts';
import {
  BodySigner,
  encodeCallback,
  FAMILIES,
  FAMILY_PARTS,
  type Family,
  familiesCarrying,
  type MediaType,
  type OutgoingCallback,
} from '../protocol/index.ts';
import { SAMPLE_JPEG, SAMPLE_MP4 } from './sample-media.ts';

/** One request of the conformance check and the answer a conforming receiver gives. */
export interface ConformanceCase {
  name: string;
  /** 200 for a callback the receiver must accept, 500 for one it must refuse. */
  expect: 200 | 500;
  /**
   * What the row is about: a callback to accept, one to refuse for its content, or one to
   * refuse for its signature. With secrets, a content row is signed correctly, so a
   * `bad_signature` refusal of it means the content was never judged.
   */
  kind: 'valid' | 'content' | 'signature';
  body: Buffer;
  contentType: string;
  /**
   * The signature headers (none when unsigned), made when called: check calls it just before
   * sending, so a receiver that answers slowly does not leave the later rows stale.
   */
  sign(): Record<string, string>;
}

// Real, decodable files: a receiver that decodes what it accepts must not refuse the valid rows.
const JPEG = SAMPLE_JPEG;
const MP4 = SAMPLE_MP4;

async function bytesOf(callback: OutgoingCallback): Promise<{ body: Buffer; contentType: string }> {
  const encoded = await encodeCallback(callback);
  const chunks: Buffer[] = [];
  for await (const chunk of encoded.body()) chunks.push(chunk);
  return { body: Buffer.concat(chunks), contentType: encoded.contentType };
}

type RawPart = { name: string; value: string | Buffer; filename?: string; type?: string };

/** A body written part by part, for shapes the encoder refuses to make. */
function rawBody(parts: RawPart[], boundary = `check-${randomBytes(8).toString('hex')}`) {
  const pieces: Buffer[] = [];
  for (const part of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"`;
    if (part.filename !== undefined) head += `; filename="${part.filename}"`;
    if (part.type) head += `\r\nContent-Type: ${part.type}`;
    pieces.push(Buffer.from(`${head}\r\n\r\n`, 'utf8'), Buffer.from(part.value), Buffer.from('\r\n'));
  }
  pieces.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(pieces), contentType: `multipart/form-data; boundary=${boundary}` };
}

/**
 * The check's battery: the four shapes and MP4 in family A, a repeat (idempotency), opaque
 * status, id_gen and time_gen, malformed callbacks of every kind, and, with secrets, badly
 * signed ones. Each run uses new `id_gen`s, so it can be repeated against the same receiver.
 * With secrets, every case but the badly signed ones is signed as the service signs: its
 * `webhook-id` is the body's `id_gen` (protocol.md's decisions), so a receiver that compares the two still
 * gets to judge the content of the malformed ones.
 */
export async function conformanceCases(secrets: readonly string[]): Promise<ConformanceCase[]> {
  const now = () => new Date().toISOString();
  const common = (status: string) => ({ status, id_gen: uuidv7(), time_gen: now() });
  const cases: ConformanceCase[] = [];

  /** Signs `body` as `id` when called; `at` gives the timestamp then (default: that moment). */
  const signer = (keys: string | readonly string[], id: string, body: Buffer, at?: () => number) => () => {
    const signing = new BodySigner(keys, id, at?.());
    signing.update(body);
    return signing.headers();
  };
  const unsigned = () => ({});

  function add(name: string, expect: 200 | 500, made: { body: Buffer; contentType: string }, id: string) {
    const kind = expect === 200 ? 'valid' : 'content';
    const sign = secrets.length > 0 ? signer(secrets, id, made.body) : unsigned;
    cases.push({ name, expect, kind, ...made, sign });
  }
  async function valid(name: string, callback: OutgoingCallback) {
    add(name, 200, await bytesOf(callback), callback.id_gen);
  }

  const success = (family: Family, file = JPEG, mediaType: MediaType = 'image/jpeg'): OutgoingCallback => ({
    ...common('success'),
    family,
    event: 'success',
    file,
    mediaType,
  });
  const failure = (family: Family, message: string): OutgoingCallback => ({
    ...common('error'),
    family,
    event: 'error',
    message,
  });
  const aImage = success('A');
  for (const family of FAMILIES) {
    await valid(`${family} success, JPEG`, family === 'A' ? aImage : success(family));
    if (familiesCarrying('video/mp4').includes(family)) {
      await valid(`${family} success, MP4`, success(family, MP4, 'video/mp4'));
    }
    await valid(`${family} error`, failure(family, 'the model failed'));
  }
  await valid('A success repeated (same id_gen): answered 200 again', aImage);
  // protocol.md's decisions: status, id_gen (up to 256 bytes) and time_gen are opaque text.
  await valid('status other than success/error (done)', { ...success('B'), status: 'done' });
  await valid('id_gen that is not a UUID', {
    ...failure('A', 'x'),
    id_gen: `op-${randomBytes(6).toString('hex')}.x`,
  });
  await valid('time_gen in Unix seconds', {
    ...failure('B', 'x'),
    time_gen: String(Math.floor(Date.now() / 1000)),
  });
  // RFC 2046 lets a sender quote any boundary: the service's need no quotes, other senders' may.
  const quoted = failure('A', 'x');
  const unquoted = await bytesOf(quoted);
  add(
    'boundary quoted in the Content-Type',
    200,
    { body: unquoted.body, contentType: unquoted.contentType.replace(/boundary=(.+)$/, 'boundary="$1"') },
    quoted.id_gen,
  );

  const text = (status = 'success') => {
    const c = common(status);
    return [
      { name: 'status', value: c.status },
      { name: 'id_gen', value: c.id_gen },
      { name: 'time_gen', value: c.time_gen },
    ];
  };
  const [A, B] = [FAMILY_PARTS.A, FAMILY_PARTS.B];
  const jpegPart = (name = A.result): RawPart => ({
    name,
    value: JPEG,
    filename: 'r.jpg',
    type: 'image/jpeg',
  });
  /** The id_gen a malformed body carries: each has one, so it can be signed as its own. */
  const idOf = (parts: RawPart[]): string => {
    const id = parts.find((part) => part.name === 'id_gen')?.value;
    if (typeof id !== 'string') throw new Error('a malformed case without an id_gen part');
    return id;
  };
  const malformed: [string, RawPart[]][] = [
    ['missing part (no time_gen)', [...text().slice(0, 2), jpegPart()]],
    ['neither a result nor an error part', text()],
    ['an extra part', [...text(), jpegPart(), { name: 'extra', value: 'x' }]],
    ['a repeated part', [...text(), { name: 'status', value: 'again' }, jpegPart()]],
    ['a misnamed part (Status)', [{ name: 'Status', value: 'success' }, ...text().slice(1), jpegPart()]],
    ['a file in an error callback', [...text('error'), { name: A.error, value: 'failed' }, jpegPart()]],
    ['a text where the file belongs', [...text(), { name: A.result, value: 'not a file' }]],
    [
      'a file where a text belongs',
      [...text('error'), { name: A.error, value: 'x', filename: 'm.txt', type: 'text/plain' }],
    ],
    ['parts of both families', [...text(), jpegPart(), { name: B.error, value: 'x' }]],
    ...FAMILIES.filter((family) => !familiesCarrying('video/mp4').includes(family)).map(
      (family): [string, RawPart[]] => [
        `an MP4 in family ${family}`,
        [...text(), { name: FAMILY_PARTS[family].result, value: MP4, filename: 'r.mp4', type: 'video/mp4' }],
      ],
    ),
    [
      'a file that is neither JPEG nor MP4',
      [...text(), { name: A.result, value: Buffer.from('GIF89a...'), filename: 'r.jpg', type: 'image/jpeg' }],
    ],
  ];
  for (const [name, parts] of malformed) add(name, 500, rawBody(parts), idOf(parts));

  const wholeParts = [...text(), jpegPart()];
  const whole = rawBody(wholeParts);
  // Signed as cut: the signature is right, only the body is not a whole multipart body.
  add(
    'a body cut before the closing boundary',
    500,
    { body: whole.body.subarray(0, whole.body.length - 12), contentType: whole.contentType },
    idOf(wholeParts),
  );
  // A callback's fields, as JSON: its id_gen is there for a receiver that looks for one.
  const json = common('success');
  add(
    'not multipart/form-data',
    500,
    { body: Buffer.from(JSON.stringify(json)), contentType: 'application/json' },
    json.id_gen,
  );

  if (secrets.length > 0) {
    // Each an error callback of its own, signed wrongly in one way only.
    const badlySigned = async (
      name: string,
      signing: (id: string, body: Buffer) => () => Record<string, string>,
      change = (body: Buffer) => body,
    ) => {
      const callback: OutgoingCallback = {
        ...common('error'),
        family: 'A',
        event: 'error',
        message: 'original',
      };
      const made = await bytesOf(callback);
      const sign = signing(callback.id_gen, made.body);
      const body = change(made.body);
      cases.push({
        name,
        expect: 500,
        kind: 'signature',
        body,
        contentType: made.contentType,
        sign,
      });
    };
    const otherSecret = `whsec_${randomBytes(24).toString('base64')}`;
    await badlySigned('unsigned', () => unsigned);
    await badlySigned('signed with another secret', (id, body) => signer(otherSecret, id, body));
    // An hour before or after it is sent, whenever that is: far outside Standard Webhooks' ±5
    // minutes, which bound a timestamp from the future as from the past.
    const hourAgo = () => Math.floor(Date.now() / 1000) - 3600;
    await badlySigned('signed an hour ago', (id, body) => signer(secrets, id, body, hourAgo));
    const hourAhead = () => Math.floor(Date.now() / 1000) + 3600;
    await badlySigned('signed an hour ahead', (id, body) => signer(secrets, id, body, hourAhead));
    await badlySigned(
      'body changed after signing',
      (id, body) => signer(secrets, id, body),
      (body) => Buffer.from(body.toString('latin1').replace('original', 'tampered'), 'latin1'),
    );
  }
  return cases;
}
