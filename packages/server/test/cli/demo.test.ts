/**
 * `mediahook demo` (what `npm start` runs): the service and a receiver in one process, three
 * operations delivered end to end, and a curl line that works against the ports it really got.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../../mediahook/test/cli/helpers.ts';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

describe('mediahook demo', () => {
  it('delivers its three callbacks and prints a curl line and secret that fit the ports it got', async () => {
    const data = await mkdtemp(join(tmpdir(), 'mediahook-demo-test-'));
    dirs.push(data);
    const run = await runCli(['demo', '--exit', '--port', '0', '--receiver-port', '0', '--data', data]);
    expect(run.code, run.stderr).toBe(0);
    const receiver = /receiver inspector {2}(http:\/\/127\.0\.0\.1:\d+)\//.exec(run.stderr)?.[1];
    const service = /service API {9}(http:\/\/127\.0\.0\.1:\d+)\/v1\/operations/.exec(run.stderr)?.[1];
    expect(receiver).toBeDefined();
    expect(service).toBeDefined();
    expect(run.stderr).toContain(`curl -X POST ${service}/v1/operations`);
    expect(run.stderr).toContain(`"webhook_url":"${receiver}/callbacks"`);
    expect(run.stderr).toMatch(/Callbacks are signed with whsec_[A-Za-z0-9+/=]+ /);

    const lines = run.stdout.split('\n').filter((line) => line.startsWith('receiver '));
    expect(lines.map((line) => /accepted {3}(\w) (\w+)/.exec(line)?.slice(1).join(' ')).sort()).toEqual([
      'A success',
      'A success',
      'B error',
    ]);
    const stored = (await readdir(join(data, 'received'))).filter((name) => name !== '.mediahook');
    expect(stored.map((name) => name.slice(name.lastIndexOf('.'))).sort()).toEqual(['.jpg', '.mp4']);
  });
});

describe('mediahook demo flags', () => {
  it('lists --allowed-host and --allow-origin, and refuses a bad one before starting (exit 2)', async () => {
    const help = await runCli(['demo', '--help']);
    expect(help.stdout).toContain('--allowed-host NAME');
    expect(help.stdout).toContain('--allow-origin ORIGIN');
    const data = await mkdtemp(join(tmpdir(), 'mediahook-demo-flags-'));
    dirs.push(data);
    for (const [flag, value] of [
      ['--allowed-host', 'a.example:80'],
      ['--allow-origin', 'a.example'],
    ]) {
      const run = await runCli(['demo', '--exit', '--data', join(data, 'x'), flag!, value!]);
      expect([run.code, run.stderr]).toEqual([2, expect.stringContaining(`${flag}: `)]);
    }
    expect(await readdir(data)).toEqual([]);
  });
});
