/**
 * Mutations of valid bodies: structural ones on the parts (duplicate, drop, rename, reorder,
 * headers added, removed or bent, the Content-Type changed, limits overrun) and byte-level ones
 * on the serialized body (bits flipped, bytes inserted, deleted, duplicated, cut). Each is a
 * plain record of integers, so fast-check can draw and shrink them and a loop can replay them.
 */
import { type BodySpec, serialize } from './bodies.ts';

export interface Mutation {
  op: number;
  a: number;
  b: number;
  c: number;
}

export interface Mutated {
  contentType: string | null;
  body: Buffer;
}

const NAMES = [
  'status',
  'id_gen',
  'time_gen',
  'message',
  'img_message',
  'result_pv',
  'res_image',
  '',
  'Status',
  'status ',
  ' status',
  'x',
  'id_gen\0',
  'result_pv"',
  '../../etc/passwd',
];

const HEADERS = [
  'Content-Transfer-Encoding: base64',
  'Content-Transfer-Encoding: quoted-printable',
  'Content-Type: text/html',
  'Content-Type: image/jpeg',
  'Content-Type: text/plain; charset=iso-8859-1',
  'Content-Type: text/plain; charset=utf-8; charset=us-ascii',
  'Content-Disposition: form-data; name="status"',
  'Content-Disposition: attachment; name="status"',
  'X-Extra: value',
  ' folded continuation',
  '\tfolded continuation',
  'No-Colon-Here',
  ': empty name',
  'Bad Name: value',
  'X-Nul: a\0b',
  'X-Cr: a\rb',
  `X-Long: ${'v'.repeat(17 * 1024)}`,
  'Content-Length: 5',
];

/** Ways to spoil (or merely restyle) the request's Content-Type. */
function contentTypes(boundary: string, pick: number): string | null {
  const other = boundary.slice(0, -1) + (boundary.endsWith('x') ? 'y' : 'x');
  const list: (string | null)[] = [
    null,
    '',
    `multipart/form-data; boundary=${other}`,
    'multipart/form-data',
    `multipart/mixed; boundary="${boundary}"`,
    `text/plain; boundary="${boundary}"`,
    `multipart/form-data; boundary="${boundary}"; boundary="${boundary}"`,
    `multipart/form-data; boundary="${boundary}`,
    `multipart/form-data; boundary="${'b'.repeat(71)}"`,
    `multipart/form-data; boundary=""`,
    `multipart/form-data;boundary="${boundary}";`,
    `MULTIPART/FORM-DATA; BOUNDARY="${boundary}"`,
    `multipart/form-data; boundary="${boundary} "`,
    `multipart/form-data; boundary="${boundary}"x`,
    `multipart/form-data , boundary="${boundary}"`,
  ];
  return list[pick % list.length]!;
}

const TOKENS = (b: string) => [
  '\r',
  '\n',
  '\r\n',
  '\r\n\r\n',
  '--',
  `--${b}`,
  `\r\n--${b}`,
  `\r\n--${b}--`,
  `\r\n--${b}\r\n`,
  `--${b}--`,
  ' ',
  '\t',
  '"',
  ';',
  ':',
  '=',
  '\0',
  '\xff',
  'é',
  'Content-Disposition: form-data; name="x"\r\n',
  '\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n',
];

const INTERESTING = [0x00, 0x09, 0x0a, 0x0d, 0x20, 0x22, 0x2d, 0x3a, 0x3b, 0x3d, 0x5c, 0x7f, 0x80, 0xff];

function clone(spec: BodySpec): BodySpec {
  return { ...spec, parts: spec.parts.map((p) => ({ headers: [...p.headers], body: p.body })) };
}

/**
 * A position in `body`: two times in three on a byte that matters to framing (CR, LF, `-`,
 * `"`, `;`, `:`), so mutations land where parsers make decisions rather than in file bytes.
 */
function position(body: Buffer, a: number): number {
  if (body.length === 0) return 0;
  if (a % 3 === 0) return (a >>> 2) % (body.length + 1);
  let count = 0;
  for (const byte of body)
    if (byte === 13 || byte === 10 || byte === 45 || byte === 34 || byte === 59 || byte === 58) count++;
  if (count === 0) return (a >>> 2) % body.length;
  let target = (a >>> 2) % count;
  for (let i = 0; i < body.length; i++) {
    const byte = body[i]!;
    if (byte === 13 || byte === 10 || byte === 45 || byte === 34 || byte === 59 || byte === 58) {
      if (target-- === 0) return i;
    }
  }
  return 0;
}

const STRUCTURAL = 19;
/** How many kinds of mutation there are; `op` is taken modulo this. */
export const MUTATION_KINDS = STRUCTURAL + 10;

/** Applies `mutations` to a valid body: structural ones first, then byte-level ones. */
export function mutate(base: BodySpec, mutations: readonly Mutation[]): Mutated {
  const spec = clone(base);
  let contentType = spec.contentType;
  const lineBreaks = new Map<number, string>();
  const ops = mutations.map((m) => ({ ...m, op: m.op % MUTATION_KINDS }));
  for (const { op, a, b, c } of ops.filter((m) => m.op < STRUCTURAL)) {
    const n = spec.parts.length;
    const i = n === 0 ? 0 : a % n;
    const part = spec.parts[i];
    switch (op) {
      case 0: // a part twice
        if (part) spec.parts.splice(b % (n + 1), 0, { headers: [...part.headers], body: part.body });
        break;
      case 1: // a part missing
        spec.parts.splice(i, 1);
        break;
      case 2: // a part renamed
        if (part) {
          const name = NAMES[b % NAMES.length]!;
          part.headers = part.headers.map((h) => h.replace(/(name=)("[^"]*"|[^;\s"]*)/i, `$1"${name}"`));
        }
        break;
      case 3: // two parts swapped: still valid
        if (n > 1) [spec.parts[i], spec.parts[b % n]] = [spec.parts[b % n]!, spec.parts[i]!];
        break;
      case 4: // a header added
        part?.headers.splice(c % (part.headers.length + 1), 0, HEADERS[b % HEADERS.length]!);
        break;
      case 5: // a header removed
        part?.headers.splice(b % Math.max(1, part.headers.length), 1);
        break;
      case 6:
        contentType = contentTypes(spec.boundary, b);
        break;
      case 7: // a filename added to a text, or taken from a file
        if (part) {
          const cd = part.headers.findIndex((h) => /^content-disposition/i.test(h));
          if (cd >= 0) {
            const line = part.headers[cd]!;
            part.headers[cd] = /filename/i.test(line)
              ? line.replace(/;\s*filename\*?=("[^"]*"|[^;\s]*)/gi, '')
              : `${line}; filename="f${b % 10}.jpg"`;
          }
        }
        break;
      case 8: // the file's first bytes changed: PNG, MP4 in family B, empty, one byte
        if (part) {
          const heads = [
            Buffer.from('\x89PNG\r\n\x1a\n', 'latin1'),
            Buffer.from('\0\0\0\x18ftypisom', 'latin1'),
            Buffer.alloc(0),
            Buffer.from([0xff]),
          ];
          const head = heads[b % heads.length]!;
          part.body =
            head.length === 0 || b % 8 >= 4 ? head : Buffer.concat([head, part.body.subarray(head.length)]);
        }
        break;
      case 9: // a text one byte over its limit (64 KiB; 256 for id_gen)
        if (part)
          part.body = Buffer.concat([part.body, Buffer.alloc(b % 2 === 0 ? 257 : 64 * 1024 + 1, 0x61)]);
        break;
      case 10: // a preamble that looks like a delimiter, or holds one
        spec.preamble = Buffer.from(
          [`--${spec.boundary}x`, `x--${spec.boundary}`, `--${spec.boundary}`, '\r\n\r\n', 'plain words'][
            b % 5
          ]!,
          'latin1',
        );
        break;
      case 11:
        spec.epilogue = Buffer.from(
          [
            `--${spec.boundary}\r\nContent-Disposition: form-data; name="status"\r\n\r\nx\r\n`,
            '\0\xff',
            `\r\n--${spec.boundary}--`,
          ][b % 3]!,
          'latin1',
        );
        break;
      case 12: // padding that is or is not transport padding
        spec.padding = [' ', '\t', 'x', ' x', '-', '\r', ' \r'][b % 7]!;
        break;
      case 13: // the close delimiter bent
        spec.closePadding = ['-', ' x', '\r', '--', ''][b % 5]!;
        spec.finalCrlf = c % 2 === 0;
        break;
      case 14: // a header line bent: leading space, space before the colon, no colon
        if (part && part.headers.length > 0) {
          const h = b % part.headers.length;
          const line = part.headers[h]!;
          part.headers[h] = [
            ` ${line}`,
            line.replace(':', ' :'),
            line.replace(':', ''),
            line.toUpperCase(),
            `${line}\t`,
          ][c % 5]!;
        }
        break;
      case 15: // bare LF line ends in one part's header block
        lineBreaks.set(i, ['\n', '\r', '\n\r'][b % 3]!);
        break;
      case 16: // a flood of CRLF where headers belong
        if (part) part.headers.unshift(...Array<string>((b % 4000) + 1).fill(''));
        break;
      case 17: // a header count explosion
        if (part) part.headers.push(...Array.from({ length: (b % 3000) + 1 }, (_, k) => `X-H${k}: ${k}`));
        break;
      case 18: // many parts
        for (let k = 0; k < (b % 200) + 1; k++)
          spec.parts.push({
            headers: [`Content-Disposition: form-data; name="p${k}"`],
            body: Buffer.from('v'),
          });
        break;
    }
  }
  let body = serialize(spec, lineBreaks);
  for (const { op, a, b, c } of ops.filter((m) => m.op >= STRUCTURAL)) {
    const at = position(body, a);
    switch (op - STRUCTURAL) {
      case 0:
        if (body.length > 0) {
          body = Buffer.from(body);
          body[Math.min(at, body.length - 1)]! ^= 1 << (b % 8);
        }
        break;
      case 1:
        if (body.length > 0) {
          body = Buffer.from(body);
          body[Math.min(at, body.length - 1)] = INTERESTING[b % INTERESTING.length]!;
        }
        break;
      case 2: {
        const tokens = TOKENS(spec.boundary);
        body = Buffer.concat([
          body.subarray(0, at),
          Buffer.from(tokens[b % tokens.length]!, 'latin1'),
          body.subarray(at),
        ]);
        break;
      }
      case 3:
        body = Buffer.concat([body.subarray(0, at), body.subarray(at + (b % 16) + 1)]);
        break;
      case 4: // cut
        body = body.subarray(0, at);
        break;
      case 5: {
        // a slice repeated elsewhere
        const slice = body.subarray(at, at + (b % 200) + 1);
        const to = c % (body.length + 1);
        body = Buffer.concat([body.subarray(0, to), slice, body.subarray(to)]);
        break;
      }
      case 6: {
        // one CRLF made a bare LF
        const crlf = body.indexOf('\r\n', at);
        if (crlf >= 0) body = Buffer.concat([body.subarray(0, crlf), body.subarray(crlf + 1)]);
        break;
      }
      case 7: {
        body = Buffer.from(body);
        for (let k = 0; k < (b % 8) + 1 && at + k < body.length; k++) body[at + k] = (c * (k + 7)) & 0xff;
        break;
      }
      case 8: {
        // two slices swapped
        const len = (b % 40) + 1;
        const other = c % Math.max(1, body.length - len);
        if (at + len <= other) {
          body = Buffer.concat([
            body.subarray(0, at),
            body.subarray(other, other + len),
            body.subarray(at + len, other),
            body.subarray(at, at + len),
            body.subarray(other + len),
          ]);
        }
        break;
      }
      case 9: // the start of the body again after its end (a second close delimiter)
        if (body.length > 0) body = Buffer.concat([body, body.subarray(0, (b % body.length) + 1)]);
        break;
    }
  }
  return { contentType, body };
}
