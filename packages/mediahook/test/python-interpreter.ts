/**
 * The Python that the interoperability tests run: `python3` on PATH when it has the module they
 * need, else Debian's `/usr/bin/python3` (where `apt-get install python3-werkzeug
 * python3-requests` puts them, beside a Python of another origin first on PATH), else none.
 */
import { spawnSync } from 'node:child_process';

/** A Python interpreter that can import `module`, or null when none can. */
export function pythonWith(module: string): string | null {
  for (const python of ['python3', '/usr/bin/python3']) {
    if (spawnSync(python, ['-c', `import ${module}`], { stdio: 'ignore' }).status === 0) return python;
  }
  return null;
}
