/** Looking at processes a test started: whether one still runs, and waiting for a condition. */
import { readFileSync } from 'node:fs';

/** Alive and not a zombie waiting to be reaped. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  return readFileSyncSafe(`/proc/${pid}/stat`)?.split(') ')[1]?.startsWith('Z') !== true;
}

function readFileSyncSafe(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** Polls `check` until it holds or `timeoutMs` passes; the last answer is returned. */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 3000,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return check();
}
