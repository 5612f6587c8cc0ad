/**
 * The pause between a worker's looks at its queue: a timer that a wake-up (new work announced,
 * a slot freed) cuts short.
 */

/**
 * Waits `ms`, or until the function handed to `onWake` is called, whichever comes first; the
 * timer is cleared either way.
 *
 * @example
 * await wakeableDelay(1_000, (wake) => (this.#wake = wake));
 * this.#wake = null;
 */
export function wakeableDelay(ms: number, onWake: (wake: () => void) => void): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      resolve();
    }
    onWake(done);
  });
}
