/** At most N generations run at once; the others wait in order, and may be aborted while waiting. */
import { describe, expect, it } from 'vitest';
import {
  GenerationError,
  type GenerationRequest,
  type Generator,
  limitConcurrency,
  Semaphore,
} from '../../../src/service/generators/index.ts';

const request = (id: string): GenerationRequest => ({ id_gen: id, kind: 'image', family: 'A', prompt: id });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A generator that takes a while and records how many of its generations overlap. */
function slowFake(ms: number) {
  const stats = { running: 0, maxRunning: 0, started: [] as string[] };
  const generator: Generator = {
    async generate(r) {
      stats.started.push(r.id_gen);
      stats.running++;
      stats.maxRunning = Math.max(stats.maxRunning, stats.running);
      try {
        await sleep(ms);
        if (r.prompt === 'fail') throw new GenerationError('generation_failed', 'fake failure');
        return { path: `/tmp/${r.id_gen}.jpg`, mediaType: 'image/jpeg', bytes: 1 };
      } finally {
        stats.running--;
      }
    },
  };
  return { generator, stats };
}

describe('limitConcurrency', () => {
  it.each([1, 2, 3])('runs at most %i generations at once, in arrival order', async (limit) => {
    const { generator, stats } = slowFake(30);
    const limited = limitConcurrency(generator, limit);
    const ids = Array.from({ length: 8 }, (_, i) => `op-${i}`);
    const pending = ids.map((id) => limited.generate(request(id), { workDir: '/tmp' }));
    expect(limited.running).toBe(limit);
    expect(limited.waiting).toBe(8 - limit);
    const results = await Promise.all(pending);
    expect(results.map((r) => r.path)).toEqual(ids.map((id) => `/tmp/${id}.jpg`));
    expect(stats.maxRunning).toBe(limit);
    expect(stats.started).toEqual(ids);
    expect([limited.running, limited.waiting]).toEqual([0, 0]);
  });

  it('gives the slot back when a generation fails', async () => {
    const { generator } = slowFake(5);
    const limited = limitConcurrency(generator, 1);
    const failed = limited.generate({ ...request('a'), prompt: 'fail' }, { workDir: '/tmp' });
    const next = limited.generate(request('b'), { workDir: '/tmp' });
    await expect(failed).rejects.toMatchObject({ code: 'generation_failed' });
    await expect(next).resolves.toMatchObject({ path: '/tmp/b.jpg' });
  });

  it('drops a waiting generation that is aborted, without starting it', async () => {
    const { generator, stats } = slowFake(50);
    const limited = limitConcurrency(generator, 1);
    const controller = new AbortController();
    const first = limited.generate(request('first'), { workDir: '/tmp' });
    const aborted = limited.generate(request('aborted'), { workDir: '/tmp', signal: controller.signal });
    const last = limited.generate(request('last'), { workDir: '/tmp' });
    controller.abort(new Error('stopping'));
    await expect(aborted).rejects.toMatchObject({ name: 'GenerationError', code: 'aborted' });
    expect(limited.waiting).toBe(1);
    await Promise.all([first, last]);
    expect(stats.started).toEqual(['first', 'last']);
  });

  it('uses a positive integer limit', () => {
    const { generator } = slowFake(1);
    for (const bad of [0, -1, 1.5, Number.NaN])
      expect(() => limitConcurrency(generator, bad)).toThrow(RangeError);
  });
});

describe('Semaphore', () => {
  it('hands a released slot to the next waiter; releasing twice is harmless', async () => {
    const slots = new Semaphore(1);
    const release = await slots.acquire();
    let granted = false;
    const waiter = slots.acquire().then((r) => {
      granted = true;
      return r;
    });
    await sleep(5);
    expect(granted).toBe(false);
    release();
    release();
    const releaseNext = await waiter;
    expect(slots.running).toBe(1);
    releaseNext();
    expect(slots.running).toBe(0);
  });

  it('rejects at once when the signal is already aborted', async () => {
    const slots = new Semaphore(1);
    await expect(slots.acquire(AbortSignal.abort(new Error('gone')))).rejects.toThrow('gone');
    expect(slots.running).toBe(0);
  });
});
