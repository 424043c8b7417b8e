/**
 * The gRPC fast path (transports/grpc/unary_fast.ts): unary calls served from
 * the HTTP/2 stream answer exactly as grpc-js does.
 *
 * The oracle is grpc-js itself, on the same server: a request that declares
 * `grpc-encoding: gzip` goes to grpc-js (the fast path takes only uncompressed
 * calls), and an uncompressed message (flag 0) reads the same under any
 * declared encoding. So each request below is sent twice with the same bytes,
 * once down each path, and the status, details, error metadata, answer and
 * response header names must match; the fast path's counter must move for
 * the one and not for the other.
 */
import test from 'ava';
import http2 from 'node:http2';
import { defineServedOperation, generateProto, loadPackageDefinition, OPERATIONS, s } from '../../cmd/index.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const pkgDef = loadPackageDefinition(generateProto(OPERATIONS));
const latchkey = pkgDef['latchkey.v1.Latchkey'] as unknown as Record<string, { path: string; requestSerialize(m: unknown): Buffer; responseDeserialize(b: Buffer): unknown }>;

const frame = (message: Buffer, declaredLength = message.length): Buffer => {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt32BE(declaredLength, 1);
  message.copy(out, 5);
  return out;
};

interface RawAnswer {
  headers: Record<string, unknown>;
  trailers: Record<string, unknown>;
  body: Buffer;
}

/** One raw gRPC request over HTTP/2: the body chunks as given, then the half-close. */
function raw(address: string, path: string, body: Buffer[], headers: Record<string, string> = {}): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://${address}`);
    session.on('error', reject);
    const stream = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', ...headers });
    let head: Record<string, unknown> = {};
    let trailers: Record<string, unknown> = {};
    const chunks: Buffer[] = [];
    stream.on('response', (h) => (head = { ...h }));
    stream.on('trailers', (h) => (trailers = { ...h }));
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('error', reject);
    stream.on('close', () => {
      session.close();
      resolve({ headers: head, trailers, body: Buffer.concat(chunks) });
    });
    for (const b of body) stream.write(b);
    stream.end();
  });
}

/** What must be equal down both paths: the status, its details and metadata, the answer, the header names. */
function outcome(a: RawAnswer, decode: (b: Buffer) => unknown): Record<string, unknown> {
  // A trailers-only response carries the status in its headers.
  const status = a.trailers['grpc-status'] ?? a.headers['grpc-status'];
  const pick = (k: string): unknown => a.trailers[k] ?? a.headers[k];
  const names = Object.keys(a.headers).filter((k) => k !== 'date').sort();
  return {
    status: String(status),
    message: pick('grpc-message'),
    code: pick('x-error-code'),
    reason: pick('x-error-reason'),
    header_names: names,
    answer: a.body.length > 5 ? decode(a.body.subarray(5)) : null,
    answer_bytes: a.body.length,
  };
}

async function fastServed(server: TestServer): Promise<number> {
  const text = await (await fetch(`${server.metricsUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('latchkey_grpc_fast_path_calls_total'));
  if (line === undefined) throw new Error('latchkey_grpc_fast_path_calls_total is not in /metrics');
  return Number(line.split(' ').at(-1));
}

/** Sends the request down the fast path and down grpc-js, checks which path took each, and returns both outcomes. */
async function bothPaths(t: { is(a: unknown, b: unknown, m?: string): void }, server: TestServer, method: string, body: Buffer[], headers: Record<string, string> = {}) {
  const m = latchkey[method]!;
  const decode = (b: Buffer): unknown => m.responseDeserialize(b);
  const before = await fastServed(server);
  const fast = await raw(server.grpcAddress, m.path, body, headers);
  const afterFast = await fastServed(server);
  const slow = await raw(server.grpcAddress, m.path, body, { ...headers, 'grpc-encoding': 'gzip' });
  const afterSlow = await fastServed(server);
  t.is(afterFast - before, 1, `${method}: the uncompressed call took the fast path`);
  t.is(afterSlow - afterFast, 0, `${method}: the call declaring gzip went to grpc-js`);
  return { fast: outcome(fast, decode), slow: outcome(slow, decode), rawFast: fast, rawSlow: slow };
}

let server: TestServer;
test.before(async () => {
  server = await startTestServer();
});
test.after.always(async () => {
  await server?.close();
});

test.serial('the services are added before a fresh server routes its first stream, whichever path that stream takes', async (t) => {
  // The table's services are added when the first stream arrives (transports/grpc/server.ts): a first call from the
  // stream and a first call through grpc-js must both find them.
  const meta = latchkey['Meta']!;
  for (const headers of [{}, { 'grpc-encoding': 'gzip' }]) {
    const fresh = await startTestServer();
    try {
      const first = await raw(fresh.grpcAddress, meta.path, [frame(meta.requestSerialize({}))], headers);
      t.is(String(first.trailers['grpc-status'] ?? first.headers['grpc-status']), '0', `first call ${JSON.stringify(headers)}`);
      t.is(await fastServed(fresh), 'grpc-encoding' in headers ? 0 : 1);
    } finally {
      await fresh.close();
    }
  }
});

test.serial('a server whose gRPC services cannot be set up answers every gRPC call INTERNAL, logs why, and keeps serving REST', async (t) => {
  // A row whose answer has no protobuf form (a list of lists): reading the table's .proto fails on the first stream.
  const unencodable = defineServedOperation({
    name: 'test_no_protobuf_form',
    kind: 'query',
    auth: 'public',
    admin: false,
    input: s.object('NoProtobufFormRequest', {}),
    output: s.object('NoProtobufFormResponse', { grid: s.list(s.list(s.string())) }),
    rest: { method: 'POST', path: '/v1/test/no_protobuf_form' },
    grpc: { method: 'TestNoProtobufForm' },
    protocols: ['rest', 'grpc'],
    doc: 'Test: an answer with no protobuf form.',
    handler: async () => ({ grid: [['a']] }),
  });
  const logs: string[] = [];
  const broken = await startTestServer({ 'log-level': 'error' }, { extraOperations: [unencodable], logSink: (l) => logs.push(l) });
  try {
    const meta = latchkey['Meta']!;
    for (let i = 0; i < 2; i++) {
      const answer = await raw(broken.grpcAddress, meta.path, [frame(meta.requestSerialize({}))]);
      t.is(String(answer.headers['grpc-status']), '13', `call ${i + 1}`);
      t.is(answer.headers['grpc-message'], 'the gRPC services could not be set up');
    }
    t.is(logs.filter((l) => l.includes('the gRPC services could not be set up')).length, 1, logs.join('\n'));
    const rest = await fetch(`${broken.httpUrl}/v1/meta`);
    t.is(rest.status, 200);
  } finally {
    await broken.close();
  }
});

test.serial('a unary call answers the same from the stream as through grpc-js: success, refusal, undecodable message', async (t) => {
  const meta = latchkey['Meta']!;
  const ok = await bothPaths(t, server, 'Meta', [frame(meta.requestSerialize({}))], { 'x-request-id': 'fast-path-1' });
  t.deepEqual(ok.fast, ok.slow);
  t.is(ok.fast['status'], '0');
  t.is(ok.rawFast.headers['x-request-id'], 'fast-path-1');
  t.is(ok.rawSlow.headers['x-request-id'], 'fast-path-1');
  t.truthy((ok.fast['answer'] as Record<string, unknown>)['client_id'] ?? (ok.fast['answer'] as Record<string, unknown>)['clientId']);

  // A row that needs a credential, called without one: a trailers-only refusal with the exact code.
  const check = latchkey['CheckPermissions']!;
  const denied = await bothPaths(t, server, 'CheckPermissions', [frame(check.requestSerialize({ checks: [{ relation: 'viewer', object: 'doc:1' }] }))]);
  t.deepEqual(denied.fast, denied.slow);
  t.is(denied.fast['status'], '16');
  t.is(denied.fast['code'], 'unauthenticated');

  // Bytes that are no protobuf message: 3 INVALID_ARGUMENT, reason undecodable_message, on both.
  const garbage = await bothPaths(t, server, 'CheckPermissions', [frame(Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f]))]);
  t.deepEqual(garbage.fast, garbage.slow);
  t.is(garbage.fast['status'], '3');
  t.is(garbage.fast['reason'], 'undecodable_message');
});

test.serial('framing faults answer as grpc-js does: no message, two messages, a length over the limit, a message split across writes', async (t) => {
  const meta = latchkey['Meta']!;
  const one = frame(meta.requestSerialize({}));

  const none = await bothPaths(t, server, 'Meta', []);
  t.deepEqual(none.fast, none.slow);
  t.is(none.fast['status'], '12');

  const two = await bothPaths(t, server, 'Meta', [Buffer.concat([one, one])]);
  t.deepEqual(two.fast, two.slow);
  t.is(two.fast['status'], '12');

  // A prefix declaring far more than the server accepts: refused on the length alone.
  const huge = await bothPaths(t, server, 'Meta', [frame(Buffer.alloc(0), 0x7fffffff)]);
  t.deepEqual(huge.fast, huge.slow);
  t.is(huge.fast['status'], '8');
  t.regex(String(huge.fast['message']), /larger%20than%20max/);

  // A message written a byte at a time is one message.
  const check = latchkey['CheckPermissions']!;
  const whole = frame(check.requestSerialize({ checks: [{ relation: 'viewer', object: 'doc:1' }] }));
  const split = await bothPaths(t, server, 'CheckPermissions', [...whole].map((b) => Buffer.from([b])));
  t.deepEqual(split.fast, split.slow);
  t.is(split.fast['code'], 'unauthenticated');

  // A whole message followed by a partial one: the call runs on the whole one.
  const trailing = await bothPaths(t, server, 'Meta', [Buffer.concat([one, Buffer.from([0, 0, 0, 0, 9, 1])])]);
  t.deepEqual(trailing.fast, trailing.slow);
  t.is(trailing.fast['status'], '0');
});

test.serial('cookies and credentials from metadata: sign-up sets the session cookie and the cookie signs the next call in, on both paths', async (t) => {
  const signup = latchkey['Signup']!;
  const profile = latchkey['Profile']!;
  const password = 'correct horse battery staple';
  const cookies: string[] = [];
  for (const [i, gzip] of [[0, false], [1, true]] as const) {
    const email = `fast-path-${i}@example.com`;
    const a = await raw(server.grpcAddress, signup.path, [frame(signup.requestSerialize({ email, password, confirm_password: password }))], gzip ? { 'grpc-encoding': 'gzip' } : {});
    t.is(String(a.trailers['grpc-status']), '0', `sign-up ${gzip ? 'through grpc-js' : 'from the stream'}`);
    const set = a.headers['set-cookie'] as string[] | undefined;
    t.true(Array.isArray(set) && set.length > 0, 'the session cookie is in the response headers');
    const cookie = (set ?? []).map((c) => c.split(';')[0]).join('; ');
    cookies.push(cookie);
    const p = await raw(server.grpcAddress, profile.path, [frame(profile.requestSerialize({}))], { cookie, ...(gzip ? { 'grpc-encoding': 'gzip' } : {}) });
    t.is(String(p.trailers['grpc-status']), '0');
    t.is((profile.responseDeserialize(p.body.subarray(5)) as Record<string, unknown>)['email'], email);
  }
  t.is(cookies.length, 2);
  // A session cookie of one path is accepted by the other (the same session store, the same reading of the metadata).
  const cross = await bothPaths(t, server, 'Profile', [frame(profile.requestSerialize({}))], { cookie: cookies[1]! });
  t.deepEqual(cross.fast, cross.slow);
  t.is((cross.fast['answer'] as Record<string, unknown>)['email'], 'fast-path-1@example.com');
});

test.serial('calls with a deadline are served from the stream, and a grpc-js client sees every answer as before', async (t) => {
  const before = await fastServed(server);
  // The test client sets a 10 s deadline on each call (grpc-timeout), and its own framing.
  const meta = await server.call('meta', {}, { protocol: 'grpc' });
  t.is(meta.status, 0);
  const refused = await server.call('check_permissions', { checks: [{ relation: 'viewer', object: 'doc:1' }] }, { protocol: 'grpc' });
  t.is(refused.error?.code, 'unauthenticated');
  t.is((await fastServed(server)) - before, 2);
  // A timeout grpc-js cannot read goes to grpc-js, which refuses it.
  const m = latchkey['Meta']!;
  const bad = await raw(server.grpcAddress, m.path, [frame(m.requestSerialize({}))], { 'grpc-timeout': 'soon' });
  t.is(String(bad.trailers['grpc-status'] ?? bad.headers['grpc-status']), '13');
  t.is((await fastServed(server)) - before, 2);
});

test.serial('a deadline that passes before the answer ends the call with 4 DEADLINE_EXCEEDED, as grpc-js does', async (t) => {
  const signup = latchkey['Signup']!;
  const password = 'correct horse battery staple';
  const decode = (b: Buffer): unknown => signup.responseDeserialize(b);
  // A sign-up hashes its password (tens of milliseconds): a 1 ms deadline passes first.
  const call = (email: string, gzip: boolean): Promise<RawAnswer> =>
    raw(server.grpcAddress, signup.path, [frame(signup.requestSerialize({ email, password, confirm_password: password }))], { 'grpc-timeout': '1m', ...(gzip ? { 'grpc-encoding': 'gzip' } : {}) });
  const before = await fastServed(server);
  const fast = outcome(await call('deadline-fast@example.com', false), decode);
  t.is((await fastServed(server)) - before, 1);
  const slow = outcome(await call('deadline-slow@example.com', true), decode);
  t.deepEqual(fast, slow);
  t.is(fast['status'], '4');
  t.is(fast['message'], 'Deadline%20exceeded');
});

test.serial('a client that cancels its call before the answer leaves the server serving: the calls finish without writing to their closed streams, the next call is answered', async (t) => {
  const signup = latchkey['Signup']!;
  const meta = latchkey['Meta']!;
  const password = 'correct horse battery staple';
  const signups = async (): Promise<number> => {
    const text = await (await fetch(`${server.metricsUrl}/metrics`)).text();
    return text
      .split('\n')
      .filter((l) => l.startsWith('latchkey_transport_requests_total{') && l.includes('"signup"') && l.includes('"grpc"'))
      .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
  };
  // Sign-ups of the tests before (a deadline does not stop one) are counted first: the count must hold still.
  let finishedBefore = await signups();
  for (let still = 0; still < 6; ) {
    await new Promise((r) => setTimeout(r, 50));
    const now = await signups();
    still = now === finishedBefore ? still + 1 : 0;
    finishedBefore = now;
  }
  const before = await fastServed(server);
  const session = http2.connect(`http://${server.grpcAddress}`);
  // Each sign-up is reset right behind its message: the server has the whole request, then the reset, while the
  // password is still being hashed, so every answer comes after its stream has closed.
  await Promise.all(
    Array.from({ length: 5 }, (_, i) =>
      new Promise<void>((resolve) => {
        const stream = session.request({ ':method': 'POST', ':path': signup.path, 'content-type': 'application/grpc', te: 'trailers' });
        stream.on('error', () => undefined);
        stream.on('close', () => resolve());
        stream.end(frame(signup.requestSerialize({ email: `cancelled-${i}@example.com`, password, confirm_password: password })));
        stream.close(http2.constants.NGHTTP2_CANCEL);
      }),
    ),
  );
  session.close();
  // The five calls ran to their end (the pipeline counted them) in a process that is still serving.
  const until = Date.now() + 20_000;
  while ((await signups()) - finishedBefore < 5 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  t.is((await signups()) - finishedBefore, 5);
  t.is((await fastServed(server)) - before, 5);
  const after = await raw(server.grpcAddress, meta.path, [frame(meta.requestSerialize({}))]);
  t.is(String(after.trailers['grpc-status']), '0');
});

test.serial('a large message arriving in many frames is read whole once, as grpc-js reads it', async (t) => {
  // Meta's request with a 200 KB field it does not know (field 15, bytes): skipped by the decoder on both paths.
  const payload = Buffer.alloc(200_000, 0x61);
  const varint = (n: number): number[] => {
    const out: number[] = [];
    for (; n > 0x7f; n >>>= 7) out.push((n & 0x7f) | 0x80);
    out.push(n);
    return out;
  };
  const message = Buffer.concat([Buffer.from([(15 << 3) | 2, ...varint(payload.length)]), payload]);
  const whole = frame(message);
  const pieces: Buffer[] = [];
  for (let i = 0; i < whole.length; i += 1000) pieces.push(whole.subarray(i, i + 1000));
  const big = await bothPaths(t, server, 'Meta', pieces);
  t.deepEqual(big.fast, big.slow);
  t.is(big.fast['status'], '0');
});
