/**
 * `watch_fga`: the engine's watch (engine/watch.ts) as wire messages, with
 * heartbeats. The stream opens with a heartbeat carrying the start token (so
 * a client that sees no change before it disconnects still resumes from the
 * right place), then yields each change with its token, and a heartbeat with
 * the last token whenever `heartbeat_seconds` pass without one.
 */
import type { Engine, WatchEvent } from '../engine/index.ts';
import { wireTuple, type FgaTuple } from './fga_admin.ts';

/** Seconds between heartbeats when the request names none. */
export const WATCH_HEARTBEAT_SECONDS = 15;

/** The request of `watch_fga`. */
export interface FgaWatchInput {
  start_token?: string | undefined;
  object_type?: string | undefined;
  heartbeat_seconds?: number | undefined;
}

/** One message of `watch_fga`. */
export interface FgaWatchEvent {
  token: string;
  kind: 'change' | 'heartbeat';
  operation?: 'write' | 'delete';
  tuple?: FgaTuple;
  revision?: number;
  timestamp?: string;
}

function change(e: WatchEvent): FgaWatchEvent {
  return { token: e.token, kind: 'change', operation: e.operation, tuple: wireTuple(e.tuple), revision: e.revision, timestamp: new Date(e.timestamp).toISOString() };
}

/**
 * Starts the watch: rejects at once on a bad token (`invalid_argument`,
 * reason `invalid_watch_token`); the messages then run until `signal`
 * aborts.
 */
export async function fgaWatch(engine: Engine, input: FgaWatchInput, signal: AbortSignal): Promise<AsyncIterable<FgaWatchEvent>> {
  const watch = await engine.watch({ after: input.start_token, objectType: input.object_type, signal });
  const everyMs = (input.heartbeat_seconds ?? WATCH_HEARTBEAT_SECONDS) * 1000;
  return messages(watch.start, watch[Symbol.asyncIterator](), everyMs, signal);
}

const HEARTBEAT = Symbol('heartbeat');

async function* messages(start: string, changes: AsyncIterator<WatchEvent>, everyMs: number, signal: AbortSignal): AsyncGenerator<FgaWatchEvent> {
  let token = start;
  yield { token, kind: 'heartbeat' };
  // One read of the changes in flight at a time; a heartbeat is due when it has not settled in `everyMs`.
  let pending: Promise<IteratorResult<WatchEvent>> | undefined;
  while (!signal.aborted) {
    pending ??= changes.next();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = new Promise<typeof HEARTBEAT>((resolve) => {
      timer = setTimeout(() => resolve(HEARTBEAT), everyMs);
    });
    const next = await Promise.race([pending, tick]);
    clearTimeout(timer);
    if (next === HEARTBEAT) {
      yield { token, kind: 'heartbeat' };
      continue;
    }
    pending = undefined;
    if (next.done === true) return;
    token = next.value.token;
    yield change(next.value);
  }
}
