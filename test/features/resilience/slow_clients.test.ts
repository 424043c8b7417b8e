/**
 * Security matrix F4 (slow clients) and the refusals Node and grpc-js make
 * before a request reaches an operation:
 *
 * - 200 sockets each sending one header byte a second are closed at the
 *   configured `--http-headers-timeout` of 10 s, the matrix's figure (not at
 *   Node's 30 s sweep), with a 408 carrying the JSON envelope, while normal
 *   requests keep being served all along, their p95 within 50% of before;
 * - an over-long header gets 431 with the JSON envelope;
 * - garbage bytes where a protobuf message should be answer 3 INVALID_ARGUMENT.
 */
import test from 'ava';
import { connect, type Socket } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { startTestServer, type TestServer } from '../../helpers/server.ts';

/** Security matrix F4: sockets closed at a headers timeout of about 10 s. */
const HEADERS_TIMEOUT_MS = 10_000;
let server: TestServer;

test.before(async () => {
  server = await startTestServer({ 'http-headers-timeout': `${HEADERS_TIMEOUT_MS}ms`, 'http-request-timeout': '20s' });
});
test.after.always(async () => {
  await server?.close();
});

function hostPort(): { host: string; port: number } {
  const u = new URL(server.httpUrl);
  return { host: u.hostname, port: Number(u.port) };
}

async function p95(samples: number, until?: () => boolean): Promise<{ p95: number; statuses: number[] }> {
  const times: number[] = [];
  const statuses: number[] = [];
  for (let i = 0; i < samples || (until !== undefined && !until()); i++) {
    const started = performance.now();
    const r = await fetch(`${server.httpUrl}/v1/meta`);
    await r.arrayBuffer();
    statuses.push(r.status);
    times.push(performance.now() - started);
    // Sampling for as long as the slow sockets last: a request every few milliseconds, not a flood.
    if (until !== undefined) await new Promise((res) => setTimeout(res, 5));
  }
  times.sort((a, b) => a - b);
  return { p95: times[Math.floor(times.length * 0.95)]!, statuses };
}

test('F4 slowloris: 200 sockets dribbling headers are closed at --http-headers-timeout with a 408 envelope; normal requests still served', async (t) => {
  await p95(10);
  const baseline = await p95(40);
  const { host, port } = hostPort();
  const request = 'GET /v1/meta HTTP/1.1\r\nHost: x\r\nX-Slow: ' + 'a'.repeat(200);
  const closing = new Promise<{ closedAfterMs: number; answer: string }[]>((resolve) => {
    const out: { closedAfterMs: number; answer: string }[] = [];
    const sockets: Socket[] = [];
    for (let i = 0; i < 200; i++) {
      const started = performance.now();
      const sock = connect({ host, port });
      sockets.push(sock);
      let answer = '';
      let sent = 0;
      const timer = setInterval(() => {
        if (sock.writable && sent < request.length) sock.write(request[sent++]!);
      }, 1000);
      sock.on('data', (d: Buffer) => void (answer += d.toString()));
      sock.on('error', () => undefined);
      sock.on('close', () => {
        clearInterval(timer);
        out.push({ closedAfterMs: performance.now() - started, answer });
        if (out.length === 200) resolve(out);
      });
      sock.write(request[sent++]!);
    }
  });
  // While the 200 sockets dribble, until they are closed, normal requests are served, as fast as before.
  let closed = false;
  void closing.then(() => (closed = true));
  await new Promise((r) => setTimeout(r, 500));
  const during = await p95(40, () => closed);
  const results = await closing;

  const times = results.map((r) => r.closedAfterMs).sort((a, b) => a - b);
  t.true(times[0]! >= HEADERS_TIMEOUT_MS - 50, `first closed after ${Math.round(times[0]!)} ms`);
  // Closed at the configured timeout plus the sweep (a tenth of the shorter timeout, at most 1 s) and scheduling.
  t.true(times.at(-1)! <= HEADERS_TIMEOUT_MS + 2000, `last closed after ${Math.round(times.at(-1)!)} ms`);
  for (const r of results) {
    t.regex(r.answer, /^HTTP\/1\.1 408 /);
    const body = JSON.parse(r.answer.slice(r.answer.indexOf('\r\n\r\n') + 4)) as { code: string; reason: string };
    t.is(body.code, 'deadline_exceeded');
    t.is(body.reason, 'request_timeout');
  }
  t.deepEqual(new Set([...baseline.statuses, ...during.statuses]), new Set([200]));
  // ±50% of a 2 ms p95 is below the noise of a shared CI machine: 50 ms absolute slack on top.
  t.true(during.p95 <= Math.max(baseline.p95 * 1.5, baseline.p95 + 50), `p95 ${during.p95.toFixed(1)} ms under slow sockets vs ${baseline.p95.toFixed(1)} ms`);
  t.log(`closed after ${Math.round(times[0]!)}–${Math.round(times.at(-1)!)} ms; p95 ${baseline.p95.toFixed(1)} → ${during.p95.toFixed(1)} ms (${during.statuses.length} requests during)`);
});

test('an over-long header gets 431 with the JSON envelope', async (t) => {
  const r = await fetch(`${server.httpUrl}/v1/meta`, { headers: { 'x-big': 'b'.repeat(20_000) } });
  t.is(r.status, 431);
  t.regex(r.headers.get('content-type') ?? '', /application\/json/);
  const body = (await r.json()) as { code: string; reason: string; message: string };
  t.is(body.code, 'payload_too_large');
  t.is(body.reason, 'headers_too_large');
  t.is(typeof body.message, 'string');
});

test('garbage bytes as a gRPC message answer 3 INVALID_ARGUMENT, and the server keeps serving', async (t) => {
  const client = new grpc.Client(server.grpcAddress, grpc.credentials.createInsecure());
  t.teardown(() => client.close());
  const call = (bytes: Buffer): Promise<grpc.ServiceError | undefined> =>
    new Promise((resolve) => {
      client.makeUnaryRequest(
        '/latchkey.v1.Latchkey/Login',
        () => bytes,
        (b: Buffer) => b,
        {},
        (err) => resolve(err ?? undefined),
      );
    });
  // A tag with no value, a truncated length varint, a group start cut off: protobuf cannot decode them.
  for (const bytes of [Buffer.from([0x08]), Buffer.from([0x0a, 0xff]), Buffer.from([0x12, 0x80]), Buffer.from([0x0b])]) {
    const err = await call(bytes);
    t.is(err?.code, grpc.status.INVALID_ARGUMENT, bytes.toString('hex'));
    t.is(err?.metadata.get('x-error-reason')[0], 'undecodable_message', bytes.toString('hex'));
  }
  // What protobuf decodes leniently (a length past the end, a control character) is refused by the shape layer.
  for (const bytes of [Buffer.from([0xff, 0xff, 0xff, 0xff]), Buffer.from([0x0a, 0x7f, 0x01])]) {
    const err = await call(bytes);
    t.is(err?.code, grpc.status.INVALID_ARGUMENT, bytes.toString('hex'));
  }
  t.is((await server.call('meta', {}, { protocol: 'grpc' })).error, undefined);
});
