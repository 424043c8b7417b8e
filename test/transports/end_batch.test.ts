/**
 * transports/http/end_batch.ts: answers queued in one turn of the event loop
 * are ended together after it, each whole and in its connection's order; a
 * client gone before its answer is written costs the others nothing. Real
 * servers on loopback, with keep-alive agents and raw sockets.
 */
import { Agent, createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect } from 'node:net';
import test from 'ava';
import fc from 'fast-check';
import { endInBatch } from '../../transports/index.ts';

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ server: Server; port: number }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as { port: number }).port };
}

function get(port: number, path: string, agent: Agent): Promise<string> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    })
      .on('error', reject)
      .end();
  });
}

test('answers queued in one turn are ended after it, together', async (t) => {
  const { server, port } = await listen((_req, res) => res.end());
  t.teardown(() => server.close());
  const made: ServerResponse[] = [];
  // Two responses of a real server, held while the test queues their answers in one synchronous run.
  const held = new Promise<void>((resolve) => {
    server.removeAllListeners('request');
    server.on('request', (_req: IncomingMessage, res: ServerResponse) => {
      made.push(res);
      if (made.length === 2) resolve();
    });
  });
  const agent = new Agent({ keepAlive: true, maxSockets: 2 });
  t.teardown(() => agent.destroy());
  const answers = Promise.all([get(port, '/a', agent), get(port, '/b', agent)]);
  await held;
  const [a, b] = made as [ServerResponse, ServerResponse];
  a.writeHead(200, { 'content-length': 1 });
  endInBatch(a, 'A');
  b.writeHead(200, { 'content-length': 1 });
  endInBatch(b, 'B');
  t.false(a.writableEnded, 'the first answer waits for the turn to end');
  t.false(b.writableEnded);
  await new Promise<void>((resolve) => setImmediate(resolve));
  t.true(a.writableEnded && b.writableEnded, 'both are ended once the turn has ended');
  t.deepEqual((await answers).sort(), ['A', 'B']);
});

test('every answer arrives whole, on its own request, over keep-alive connections (property)', async (t) => {
  const { server, port } = await listen((req, res) => {
    const body = JSON.stringify({ path: req.url });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    // Some answers are ready at once, others a tick or a timer later: both kinds share batches.
    const n = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('n'));
    if (n % 3 === 0) endInBatch(res, body);
    else if (n % 3 === 1) process.nextTick(() => endInBatch(res, body));
    else setTimeout(() => endInBatch(res, body), n % 5);
  });
  t.teardown(() => server.close());
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 1, max: 8 }), fc.array(fc.string({ maxLength: 20 }), { minLength: 1, maxLength: 60 }), async (sockets, words) => {
      const agent = new Agent({ keepAlive: true, maxSockets: sockets });
      try {
        const paths = words.map((w, i) => `/x?n=${i}&w=${encodeURIComponent(w)}`);
        const got = await Promise.all(paths.map((p) => get(port, p, agent)));
        t.deepEqual(
          got.map((g) => (JSON.parse(g) as { path: string }).path),
          paths,
        );
      } finally {
        agent.destroy();
      }
    }),
    { numRuns: 40 },
  );
});

test('a client gone before its answer is written: the others are answered, and nothing throws', async (t) => {
  let gone: (() => void) | undefined;
  const { server, port } = await listen((req, res) => {
    res.writeHead(200, { 'content-length': 2 });
    if (req.url === '/gone') {
      // The client has closed its socket by the time this answer is queued.
      req.socket.once('close', () => {
        endInBatch(res, 'no');
        gone?.();
      });
      return;
    }
    endInBatch(res, 'ok');
  });
  t.teardown(() => server.close());
  const closed = new Promise<void>((resolve) => (gone = resolve));
  const raw = connect(port, '127.0.0.1', () => raw.end('GET /gone HTTP/1.1\r\nHost: x\r\n\r\n'));
  raw.on('data', () => t.fail('the closed client got an answer'));
  raw.on('error', () => {});
  setTimeout(() => raw.destroy(), 50);
  await closed;
  const agent = new Agent({ keepAlive: false });
  t.teardown(() => agent.destroy());
  t.deepEqual(await Promise.all([get(port, '/a', agent), get(port, '/b', agent)]), ['ok', 'ok']);
});
