/** The framing layer alone: what a handler sees for a body, however the body is chunked. */
import { describe, expect, it } from 'vitest';
import { MultipartParser, ProtocolError } from '../../src/protocol/index.ts';
import { feedingPlans, nearMisses, rawBody } from './bodies.ts';

type Event = ['begin', Record<string, string>] | ['data', string] | ['end'];

/** Parses `chunks` and returns the handler's events, with adjacent data events merged. */
function events(boundary: string, chunks: Buffer[]): { events: Event[]; done: boolean } {
  const seen: Event[] = [];
  const parser = new MultipartParser(boundary, {
    onPartBegin: (headers) => seen.push(['begin', Object.fromEntries(headers)]),
    onPartData: (data) => {
      expect(data.length).toBeGreaterThan(0);
      const last = seen.at(-1);
      if (last?.[0] === 'data') last[1] += data.toString('latin1');
      else seen.push(['data', data.toString('latin1')]);
    },
    onPartEnd: () => seen.push(['end']),
  });
  for (const chunk of chunks) parser.write(chunk);
  const done = parser.done;
  parser.end();
  return { events: seen, done };
}

describe('MultipartParser', () => {
  const boundary = 'frame';
  const tricky = Buffer.concat(nearMisses(boundary)).toString('latin1');
  const body = rawBody(
    boundary,
    [
      {
        headers: ['Content-Disposition: form-data; name="a"', 'X-Folded: one', '  two'],
        body: `first${tricky}`,
      },
      { headers: ['CONTENT-TYPE:   text/plain  '], body: '' },
      { headers: [], body: 'no headers' },
    ],
    { preamble: 'preamble', epilogue: 'epilogue' },
  );

  it.each(feedingPlans(body))('reports headers, data and ends the same when fed $label', ({ chunks }) => {
    expect(events(boundary, chunks)).toEqual({
      done: true,
      events: [
        ['begin', { 'content-disposition': 'form-data; name="a"', 'x-folded': 'one two' }],
        ['data', `first${tricky}`],
        ['end'],
        ['begin', { 'content-type': 'text/plain' }],
        ['end'],
        ['begin', {}],
        ['data', 'no headers'],
        ['end'],
      ],
    });
  });

  it('ignores everything after the close delimiter line', () => {
    const closed = Buffer.from('--frame--\r\n\r\n--frame\r\nbroken\x00\r\n');
    expect(events(boundary, [closed])).toEqual({ done: true, events: [] });
  });

  it('lets a handler stop the parse by throwing', () => {
    const parser = new MultipartParser(boundary, {
      onPartBegin: () => {
        throw new ProtocolError('unexpected_part', 'stop');
      },
      onPartData: () => {},
      onPartEnd: () => {},
    });
    expect(() => parser.write(body)).toThrow(expect.objectContaining({ code: 'unexpected_part' }));
  });

  it('is not done before the close delimiter', () => {
    const parser = new MultipartParser(boundary, { onPartBegin() {}, onPartData() {}, onPartEnd() {} });
    parser.write(body.subarray(0, body.indexOf('--frame--')));
    expect(parser.done).toBe(false);
    expect(() => parser.end()).toThrow(expect.objectContaining({ code: 'malformed_multipart' }));
  });
});
