/**
 * transports/http/body_capture.ts: a request body taken straight from node's
 * HTTP parser on a server whose request class is `CapturingRequest`, and read
 * by events on one built with the plain class. Real servers on loopback,
 * requests written byte by byte on raw sockets where the test needs to choose
 * where a body is split, and the answers read back.
 */
import { createServer, IncomingMessage, request, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import test from 'ava';
import fc from 'fast-check';
import { CapturingRequest, collectBody } from '../../transports/index.ts';
import { createHttpServer } from '../../cmd/server.ts';

interface Seen {
  /** Bodies handed over, in order. */
  bodies: string[];
  /** Requests whose body was armed and never handed over, by path. */
  armed: Set<string>;
}

/** A server answering `POST /echo` with the body `collectBody` hands over, and `POST /stream` by reading the stream itself. */
async function echoServer(capturing: boolean, seen: Seen, delayMs = 0): Promise<{ server: Server; port: number }> {
  const handler = (req: IncomingMessage, res: import('node:http').ServerResponse): void => {
    if (req.url === '/stream') {
      // Not armed: the stream gets the body, as in any IncomingMessage.
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => res.end(`stream:${Buffer.concat(chunks).toString('utf8')}`));
      return;
    }
    const body = collectBody(req);
    seen.armed.add(req.url ?? '');
    const answer = (): void =>
      body.whenComplete((bytes) => {
        seen.armed.delete(req.url ?? '');
        seen.bodies.push(bytes.toString('utf8'));
        res.end(`echo:${bytes.toString('utf8')}`);
      });
    // Asked for after a delay too: the body has then arrived already (as after a rate limiter's promise).
    if (delayMs > 0) setTimeout(answer, delayMs);
    else answer();
  };
  const server = capturing ? createServer({ IncomingMessage: CapturingRequest }, handler) : createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as { port: number }).port };
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/**
 * Sends `parts` on one raw connection, `gapMs` apart, and returns what the
 * server answered once `expected` answers have arrived (or the server closed
 * the connection); fails after 20 s. With `expected` 0 the connection is
 * closed right after the last part.
 */
async function raw(port: number, parts: readonly (string | Buffer)[], gapMs: number, expected: number): Promise<Buffer> {
  const socket: Socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const got: Buffer[] = [];
  const done = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${answers(Buffer.concat(got)).length} of ${expected} answers after 20 s`)), 20_000);
    const check = (): void => {
      if (answers(Buffer.concat(got)).length >= expected) {
        clearTimeout(timer);
        resolve();
      }
    };
    socket.on('data', (b: Buffer) => {
      got.push(b);
      check();
    });
    socket.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  for (const p of parts) {
    socket.write(p);
    if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
  }
  if (expected > 0) await done;
  socket.destroy();
  return Buffer.concat(got);
}

const post = (path: string, body: string): string => `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

/** Answer bodies of a raw HTTP/1.1 exchange (Content-Length framed), in order. */
function answers(exchange: Buffer): string[] {
  const out: string[] = [];
  let rest = exchange;
  for (;;) {
    const head = rest.indexOf('\r\n\r\n');
    if (head < 0) return out;
    const length = Number(/content-length: (\d+)/i.exec(rest.subarray(0, head).toString('latin1'))?.[1] ?? NaN);
    if (!Number.isFinite(length)) return out;
    out.push(rest.subarray(head + 4, head + 4 + length).toString('utf8'));
    rest = rest.subarray(head + 4 + length);
  }
}

for (const capturing of [true, false]) {
  const kind = capturing ? 'CapturingRequest' : 'plain IncomingMessage';

  test(`${kind}: a body split anywhere, sent in pieces, is handed over whole and once, and the connection serves the next request`, async (t) => {
    const seen: Seen = { bodies: [], armed: new Set() };
    const { server, port } = await echoServer(capturing, seen);
    try {
      await fc.assert(
        fc.asyncProperty(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 200 }), fc.array(fc.nat(), { maxLength: 3 }), async (text, cuts) => {
          const body = JSON.stringify({ text });
          const first = Buffer.from(post('/echo', body), 'utf8');
          // Cut the request (headers and body alike) at up to three places, by byte: inside a character's UTF-8 bytes too.
          const at = [...new Set(cuts.map((c) => c % first.length))].sort((a, b) => a - b);
          const parts: Buffer[] = [];
          let from = 0;
          for (const c of at) {
            if (c > from) parts.push(first.subarray(from, c));
            from = Math.max(from, c);
          }
          parts.push(first.subarray(from));
          seen.bodies.length = 0;
          const got = answers(await raw(port, [...parts, post('/echo', '{"second":true}')], 5, 2));
          t.deepEqual(got, [`echo:${body}`, 'echo:{"second":true}']);
          t.deepEqual(seen.bodies, [body, '{"second":true}']);
        }),
        { numRuns: 25 },
      );
    } finally {
      await close(server);
    }
  });

  test(`${kind}: two requests pipelined in one write get their own bodies, answered in order; asked for after it arrived, a body is still handed over`, async (t) => {
    for (const delayMs of [0, 30]) {
      const seen: Seen = { bodies: [], armed: new Set() };
      const { server, port } = await echoServer(capturing, seen, delayMs);
      try {
        const got = answers(await raw(port, [post('/echo', '{"a":1}') + post('/echo', '{"b":"two"}')], 0, 2));
        t.deepEqual(got, ['echo:{"a":1}', 'echo:{"b":"two"}'], `delay ${delayMs} ms`);
      } finally {
        await close(server);
      }
    }
  });

  test(`${kind}: a client gone mid-body is never handed a body, and the server goes on serving`, async (t) => {
    const seen: Seen = { bodies: [], armed: new Set() };
    const { server, port } = await echoServer(capturing, seen);
    try {
      const full = post('/gone', '{"text":"this body never arrives whole"}');
      // The headers and all but the last ten bytes of the body, then the connection closes.
      await raw(port, [full.slice(0, full.length - 10)], 0, 0);
      for (let waited = 0; !seen.armed.has('/gone') && waited < 20_000; waited += 20) await new Promise((r) => setTimeout(r, 20));
      t.true(seen.armed.has('/gone'), 'the request reached the handler');
      // Long enough for a body that had been handed over to be seen (none should be).
      await new Promise((r) => setTimeout(r, 200));
      t.deepEqual(seen.bodies, []);
      const answer = await new Promise<string>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path: '/echo', method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
          let s = '';
          res.on('data', (b: Buffer) => (s += b.toString('utf8')));
          res.on('end', () => resolve(s));
        });
        req.on('error', reject);
        req.end('{"after":true}');
      });
      t.is(answer, 'echo:{"after":true}');
    } finally {
      await close(server);
    }
  });
}

test('CapturingRequest: a request nobody arms reads its body from the stream, as a plain IncomingMessage', async (t) => {
  const seen: Seen = { bodies: [], armed: new Set() };
  const { server, port } = await echoServer(true, seen);
  try {
    const body = JSON.stringify({ text: 'é'.repeat(3000) });
    const request = Buffer.from(post('/stream', body), 'utf8');
    const got = answers(await raw(port, [request.subarray(0, 101), request.subarray(101)], 10, 1));
    t.deepEqual(got, [`stream:${body}`]);
    t.deepEqual(seen.bodies, []);
  } finally {
    await close(server);
  }
});

test('CapturingRequest is an IncomingMessage, so anything that reads requests by the stream API keeps working', (t) => {
  t.true(CapturingRequest.prototype instanceof IncomingMessage);
});

test('the server\'s HTTP server builds every request as a CapturingRequest, whose body the fast paths take from the parser', async (t) => {
  const seen: { capturing: boolean[]; bodies: string[] } = { capturing: [], bodies: [] };
  const server = createHttpServer({ httpRequestTimeout: 5000, httpHeadersTimeout: 5000, httpKeepAliveTimeout: 5000 }, (req, res) => {
    seen.capturing.push(req instanceof CapturingRequest);
    collectBody(req).whenComplete((bytes) => {
      seen.bodies.push(bytes.toString('utf8'));
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const port = (server.address() as { port: number }).port;
    for (const body of ['{"a":1}', '', 'é'.repeat(3000)]) {
      const res = await fetch(`http://127.0.0.1:${port}/v1/check_permissions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      t.is(await res.text(), 'ok');
    }
    t.deepEqual(seen.capturing, [true, true, true]);
    t.deepEqual(seen.bodies, ['{"a":1}', '', 'é'.repeat(3000)]);
  } finally {
    await close(server);
  }
});
