/**
 * Evens out the time of two answers an attacker must not tell apart (security
 * matrix A6): a refusal that does less work than a success (a sign-up of a
 * taken address, refused before the user, its audit row and its session are
 * written) is held until the usual time of a success, an exponentially
 * weighted average of the recent ones in this process.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/** The longest a refusal is held, whatever the average says (a stalled backend must not hold refusals longer). */
const MAX_HOLD_MS = 2_000;

export class ResponsePadding {
  #averageMs = 0;
  #seen = 0;

  /** Records a success that took `ms`. */
  observe(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) return;
    this.#seen++;
    // The first successes set the average; later ones move it by a fifth.
    const weight = this.#seen < 5 ? 1 / this.#seen : 0.2;
    this.#averageMs += (ms - this.#averageMs) * weight;
  }

  /** Resolves once the usual time of a success has passed since `startedAt` (a `performance.now()` reading). */
  async hold(startedAt: number): Promise<void> {
    const until = startedAt + Math.min(MAX_HOLD_MS, this.#averageMs);
    // A timer may fire a little early (the event loop's clock is read once per turn): wait again for the rest.
    for (let wait = until - performance.now(); wait > 1; wait = until - performance.now()) await sleep(wait);
  }
}
