/**
 * Answers ended together. A JSON answer that is complete is queued here and
 * every queued answer is ended (written to its socket) at once, after the
 * event loop's poll phase has run the handlers of every request it read: the
 * answers of one turn leave in one burst of writes instead of one write
 * between each pair of handlers.
 *
 * Why: under load, each write to a loopback or LAN peer that is waiting wakes
 * it (a scheduler wake-up, on another core an interrupt), and a peer that
 * has just read one answer is waiting again when the next one comes. Writes
 * in a burst find it awake. With 50 connections on the two cores of
 * docs/performance.md, the server's CPU per `check_permissions` request fell
 * by about a third ("Answers ended together"). An answer waits at most for
 * the handlers of the requests read with it; a request alone in its turn is
 * answered as soon as its handler returns, as before.
 *
 * Each answer is still one write of its head and body (its head fields are
 * set, and checked by node, before it is queued), and a connection's answers
 * keep their order. An answer whose client went away meanwhile is dropped by node as any
 * write to a closed socket is.
 */
import type { ServerResponse } from 'node:http';

/** Queued answers: response and body, alternating (two arrays swapped, so a turn allocates nothing). */
let queued: (ServerResponse | string)[] = [];
let spare: (ServerResponse | string)[] = [];
let scheduled = false;

/** Ends `res` with `body` once the current turn's handlers have run. */
export function endInBatch(res: ServerResponse, body: string): void {
  queued.push(res, body);
  if (!scheduled) {
    scheduled = true;
    setImmediate(endQueued);
  }
}

function endQueued(): void {
  scheduled = false;
  // Answers queued while these are ended (none are expected: `end` runs no handler of ours) wait for the next turn.
  const batch = queued;
  queued = spare;
  for (let i = 0; i < batch.length; i += 2) {
    const res = batch[i] as ServerResponse;
    try {
      res.end(batch[i + 1] as string);
    } catch {
      // The head fields were checked when they were set; a failure here is the socket's, and the connection cannot carry an answer.
      res.destroy();
    }
  }
  batch.length = 0;
  spare = batch;
}
