/** What another local user can read of the embedded store: nothing, whatever the umask. */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { openStore } from '../../src/store/index.ts';

const modeOf = (path: string) => statSync(path).mode & 0o777;

describe('SqliteStore file modes', () => {
  it('makes its directory 0700 and its database, WAL and shared-memory files 0600', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mediahook-sqlite-modes-'));
    const before = process.umask(0o022);
    onTestFinished(() => {
      process.umask(before);
      rmSync(dir, { recursive: true, force: true });
    });
    const store = openStore(join(dir, 'data', 'mediahook.sqlite'));
    try {
      await store.migrate();
      expect(modeOf(join(dir, 'data'))).toBe(0o700);
      const files = readdirSync(join(dir, 'data'));
      expect(files).toEqual(expect.arrayContaining(['mediahook.sqlite', 'mediahook.sqlite-wal']));
      for (const name of files) expect(modeOf(join(dir, 'data', name)), name).toBe(0o600);
    } finally {
      await store.close();
    }
  });
});
