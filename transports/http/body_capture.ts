/**
 * A request body read whole without the stream's events, for the fast paths
 * (rest_fast.ts, the OpenFGA API's).
 *
 * Why: node's HTTP parser hands a request's body to its `IncomingMessage` by
 * `push()`, as any readable stream's source does. Reading it back through
 * `'data'` and `'end'` costs the readable stream's machinery on every request:
 * switching to flowing mode, deferred ticks, the `'end'` event and the
 * auto-destroy that follows. A `node:http` server that read a permission
 * check's small JSON body as the fast paths did and answered a fixed JSON used
 * 73 and 68 µs of CPU per request in two interleaved runs, and 67 and 65 µs
 * taking the pushes directly (docs/performance.md, "Request bodies without
 * stream events").
 *
 * How: {@link CapturingRequest} is the server's `IncomingMessage` class (the
 * `IncomingMessage` option of `http.createServer`). A fast path that takes a
 * request with a body calls {@link collectBody} while the request event runs,
 * before the parser has pushed any of the body; from then on the parser's
 * pushes are kept in a list instead of the stream's buffer, and the end of the
 * body (`push(null)`) hands the bytes over on the next tick, after the parser
 * has returned. The stream itself is still ended, so node's server finishes
 * the request as it would any other. A request nobody arms, every request
 * express serves included, is the plain `IncomingMessage` it always was (and
 * once express swaps the request's prototype for its own, this class's
 * methods are not even on its chain). On a server built with the plain class,
 * {@link collectBody} reads by `'data'` and `'end'`, as before.
 *
 * A client that goes away before its body has arrived never gets the bytes
 * handed over (it could not read an answer); the `Content-Length` that the
 * fast paths check against the body limit before arming bounds what is kept.
 */
import type { IncomingMessage as NodeIncomingMessage } from 'node:http';

// The CommonJS module: an ESM import of node:http builds its namespace, which loads node's fetch client (cmd/server.ts).
const { IncomingMessage } = process.getBuiltinModule('node:http');

/** A request body being read: `whenComplete` is called once with its bytes, when all of them have arrived. */
export interface PendingBody {
  whenComplete(then: (bytes: Buffer) => void): void;
}

/** The body's chunks as one buffer (the one chunk itself when there is one, as a small body arrives). */
const joined = (chunks: readonly Buffer[]): Buffer => (chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));

/** The server's request class: a plain `IncomingMessage` whose body a fast path may take straight from the parser. */
export class CapturingRequest extends IncomingMessage implements PendingBody {
  /** The body's chunks once armed (undefined: the stream receives them, as in any `IncomingMessage`). */
  #chunks: Buffer[] | undefined = undefined;
  #complete = false;
  #then: ((bytes: Buffer) => void) | undefined = undefined;

  /** Takes the body from here on (called while the request event runs, before the parser pushes any of it). */
  arm(): void {
    this.#chunks ??= [];
  }

  override push(chunk: unknown, encoding?: BufferEncoding): boolean {
    const chunks = this.#chunks;
    if (chunks === undefined || this.#complete) return super.push(chunk, encoding);
    if (chunk !== null) {
      chunks.push(chunk as Buffer);
      return true;
    }
    this.#complete = true;
    // The stream ends empty: node's server then finishes the request as one whose body was read.
    super.push(null);
    const then = this.#then;
    if (then !== undefined) {
      this.#then = undefined;
      // After the parser has returned: an answer is never written from inside its callback.
      process.nextTick(then, joined(chunks));
    }
    return false;
  }

  whenComplete(then: (bytes: Buffer) => void): void {
    if (this.#complete) then(joined(this.#chunks as Buffer[]));
    else this.#then = then;
  }
}

/**
 * Starts reading `req`'s whole body; call it while the request event runs.
 * On a {@link CapturingRequest} the parser's pushes are taken directly;
 * otherwise by `'data'` and `'end'`. An error on the request (a client gone
 * mid-body) is swallowed: the bytes are then never handed over.
 */
export function collectBody(req: NodeIncomingMessage): PendingBody {
  if (req instanceof CapturingRequest) {
    req.arm();
    return req;
  }
  const chunks: Buffer[] = [];
  let bytes: Buffer | undefined;
  let waiting: ((bytes: Buffer) => void) | undefined;
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.once('end', () => {
    bytes = joined(chunks);
    if (waiting !== undefined) waiting(bytes);
  });
  req.once('error', () => undefined);
  return {
    whenComplete(then) {
      if (bytes !== undefined) then(bytes);
      else waiting = then;
    },
  };
}
