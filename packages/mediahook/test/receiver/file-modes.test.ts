/**
 * What another local user can read of what a receiver stores: by default nothing (files 0600,
 * directories 0700), or what `fileMode` / `dirMode` widen, whatever the umask.
 */
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createReceiver, parseMode } from '../../src/receiver/index.ts';
import { nodeAdapter, startReceiver } from './adapters.ts';
import { send, tempDir, wire } from './helpers.ts';

async function modeOf(path: string): Promise<number> {
  return (await stat(path)).mode & 0o777;
}

/** Runs the rest of the test under `mask`, as a user's shell may set it. */
function withUmask(mask: number): void {
  const before = process.umask(mask);
  onTestFinished(() => void process.umask(before));
}

describe("a receiver's files and directories", () => {
  it("are the owner's alone by default: files 0600, the directories it makes 0700", async () => {
    withUmask(0o022);
    const out = join(await tempDir(), 'deep', 'callbacks');
    const harness = await startReceiver(nodeAdapter(), { out });
    const callback = await wire();
    expect((await send(harness.url, callback)).status).toBe(200);
    expect(await modeOf(join(out, `${callback.id}.jpg`))).toBe(0o600);
    expect(await modeOf(out)).toBe(0o700);
    expect(await modeOf(join(out, '..'))).toBe(0o700);
  });

  it('are widened by fileMode and dirMode past a umask that would take it back', async () => {
    withUmask(0o077);
    const out = join(await tempDir(), 'shared', 'callbacks');
    const harness = await startReceiver(nodeAdapter(), { out, fileMode: 0o640, dirMode: 0o750 });
    const callback = await wire({ mediaType: 'video/mp4' });
    expect((await send(harness.url, callback)).status).toBe(200);
    expect(await modeOf(join(out, `${callback.id}.mp4`))).toBe(0o640);
    expect(await modeOf(out)).toBe(0o750);
    expect(await modeOf(join(out, '..'))).toBe(0o750);
  });

  it('leave a directory that already exists as it is', async () => {
    const out = join(await tempDir(), 'existing');
    await mkdir(out, { mode: 0o755 });
    withUmask(0o022);
    const harness = await startReceiver(nodeAdapter(), { out });
    const callback = await wire();
    expect((await send(harness.url, callback)).status).toBe(200);
    expect(await modeOf(out)).toBe(0o755);
    expect(await modeOf(join(out, `${callback.id}.jpg`))).toBe(0o600);
  });

  it("refuses at start-up a mode that is none or takes the owner's access away", async () => {
    const out = await tempDir();
    expect(() => createReceiver({ out, fileMode: 0o400 })).toThrow(/fileMode 0400 takes away/);
    expect(() => createReceiver({ out, dirMode: 0o600 })).toThrow(/dirMode 0600 takes away/);
    expect(() => createReceiver({ out, fileMode: 0o4755 })).toThrow(/from 0 to 0o777/);
    expect(() => createReceiver({ out, fileMode: 1.5 })).toThrow(TypeError);
  });
});

describe('parseMode', () => {
  it('reads octal as the command line writes it, and nothing else', () => {
    expect(['640', '0640', '0o640', '0O750', '0600'].map(parseMode)).toEqual([
      0o640, 0o640, 0o640, 0o750, 0o600,
    ]);
    for (const text of ['', '64', '06400', '0x1a0', '0888', 'rw-r-----', '416']) {
      expect(parseMode(text), text).toBe(text === '416' ? 0o416 : null);
    }
  });
});
