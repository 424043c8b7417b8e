/**
 * Streamed rows (`stream`) over REST: a `GET` answered as Server-Sent Events
 * (WHATWG HTML, "Server-sent events"). The input fields come from the query
 * string (an `int` field from its decimal text); a `Last-Event-ID` header (what
 * a reconnecting EventSource sends) is the `start_token` when the row has one.
 *
 * On the wire, each message is one event block:
 * - a message with `kind: 'heartbeat'` is a comment (`: heartbeat <token>`),
 *   which EventSource ignores and proxies see as traffic; the first one also
 *   has an `id:` line, so that a client's last event id is the start position
 *   before any change arrives;
 * - any other message is `id: <token>` (when it has a token) and one `data:`
 *   line of its JSON (the default `message` event type);
 * - a failure after the stream started is an `error` event whose data is the
 *   error's `{code, reason, message}`, and the response ends.
 *
 * A failure before the stream starts (authentication, validation, a bad
 * token) is the ordinary JSON error with its status.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LatchkeyError } from '../../engine/errors.ts';
import type { AnyOperation } from '../../api/index.ts';
import type { CallInfo, Pipeline } from '../../server/index.ts';
import { headersNow, sendError, type HttpLocals } from './guards.ts';

/** The row's input from the query string (and `Last-Event-ID`), before validation. */
export function streamInput(op: AnyOperation, req: IncomingMessage): Record<string, unknown> {
  const url = req.url ?? '';
  const q = url.indexOf('?');
  const params = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
  const input: Record<string, unknown> = {};
  for (const key of new Set(params.keys())) {
    const values = params.getAll(key);
    const field = op.input.fields[key];
    const inner = field?.kind === 'optional' ? field.inner : field;
    // A repeated parameter stays a list: validation refuses it with the field's name.
    const conv = (v: string): unknown => (inner?.kind === 'int' && /^-?[0-9]{1,15}$/.test(v) ? Number(v) : v);
    input[key] = values.length === 1 ? conv(values[0]!) : values.map(conv);
  }
  const last = req.headers['last-event-id'];
  if (typeof last === 'string' && last !== '' && 'start_token' in op.input.fields) input['start_token'] = last;
  return input;
}

function block(message: unknown, first: boolean): string {
  const m = message as { kind?: unknown; token?: unknown };
  const token = typeof m.token === 'string' ? m.token.replace(/[\r\n]/g, '') : undefined;
  if (m.kind === 'heartbeat') return `${first && token !== undefined ? `id: ${token}\n` : ''}: heartbeat${token === undefined ? '' : ` ${token}`}\n\n`;
  return `${token === undefined ? '' : `id: ${token}\n`}data: ${JSON.stringify(message)}\n\n`;
}

/** Serves a streamed row on `res` until its messages end, fail, or the client goes away. */
export function serveStream(pipeline: Pipeline, op: AnyOperation, info: CallInfo, req: IncomingMessage, res: ServerResponse, l: HttpLocals): void {
  const signal = info.signal;
  pipeline.stream(op, info, streamInput(op, req)).then(
    async (messages) => {
      headersNow(res, l);
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        // Reverse proxies that buffer responses (nginx) pass this one through as it is written.
        'x-accel-buffering': 'no',
        // The connection ends with the stream: a shutdown that ends streams is not held by their idle keep-alive sockets.
        connection: 'close',
      });
      res.flushHeaders();
      let first = true;
      try {
        for await (const m of messages) {
          if (res.destroyed) break;
          const ok = res.write(block(m, first));
          first = false;
          if (!ok) {
            await new Promise<void>((resolve) => {
              res.once('drain', resolve);
              signal.addEventListener('abort', () => resolve(), { once: true });
            });
          }
        }
      } catch (err) {
        const pub = err instanceof LatchkeyError ? err : new LatchkeyError('internal', 'internal server error');
        if (!res.destroyed) res.write(`event: error\ndata: ${JSON.stringify(pub.toJSON())}\n\n`);
      }
      if (!res.destroyed) res.end();
    },
    (err: LatchkeyError) => {
      headersNow(res, l);
      sendError(res, err);
    },
  );
}
