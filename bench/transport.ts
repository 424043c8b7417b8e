/**
 * Transport benchmark: `meta` over REST, GraphQL and gRPC on loopback, 50
 * connections, every guard on (CORS, CSRF, per-IP rate limit with its limit
 * raised by flag, body limit, metrics). The server runs in its own process
 * (the real bin); the load generator shares the machine's cores with it.
 *
 * HTTP load: autocannon. gRPC load: raw gRPC over node:http2, 50 streams in
 * flight on 5 connections. A bare express and a bare grpc-js server answering
 * a constant are measured alongside: the machine is shared, so the figures
 * are best read against what the libraries alone do in the same run. After a warm-up, 3 rounds of 5 s interleave the
 * protocols; each protocol reports its best round and every round's rate.
 * Answers are checked before timing. Standalone: `node bench/transport.ts [--quick]`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import autocannon, { type Options, type Result } from 'autocannon';
import http2 from 'node:http2';
import express from 'express';
import * as grpc from '@grpc/grpc-js';
import { OPERATIONS, generateProto, graphqlDocument, loadPackageDefinition } from '../cmd/index.ts';

const CONNECTIONS = 50;

export interface Figures {
  requests_per_second: number;
  p50_ms: number;
  p90_ms: number;
  /** From every response's time (autocannon's own percentiles skip p95); absent on the gRPC rows. */
  p95_ms?: number;
  p99_ms: number;
  max_ms: number;
  errors: number;
  non_2xx: number;
  total: number;
  /** CPU time of the serving process per request, µs (when the suite measures it). */
  server_cpu_us_per_request?: number;
  /** The part of it spent in the kernel (system time). */
  server_cpu_system_us_per_request?: number;
  /** CPU time of the serving process over the round divided by the round's length (1 = one core busy). */
  server_cpu_busy?: number;
}

/**
 * Starts the real bin in its own process (SQLite in `dir`, HS256, every guard
 * on, the rate limit raised by flag). `extraArgs` are appended to the server's
 * flags; `nodeArgs` go to node itself (e.g. `--cpu-prof`).
 */
export async function startServerProcess(dir: string, extraArgs: readonly string[] = [], nodeArgs: readonly string[] = []): Promise<{ child: ChildProcess; http: string; grpc: string }> {
  const bin = resolve(import.meta.dirname, '..', 'bin', 'latchkey.js');
  const child = spawn(
    process.execPath,
    [
      ...nodeArgs,
      bin,
      'serve',
      '--database-type=sqlite',
      `--database-url=sqlite:${join(dir, 'bench.sqlite')}`,
      '--admin-secret=bench-admin-secret',
      '--client-id=bench',
      '--client-secret=bench-secret',
      '--jwt-type=HS256',
      '--jwt-secret=bench-jwt-secret',
      '--host=127.0.0.1',
      '--http-port=0',
      '--grpc-port=0',
      '--metrics-port=0',
      '--rate-limit-rps=1000000',
      '--rate-limit-burst=1000000',
      ...extraArgs,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return new Promise((resolvePromise, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('server did not start'));
    }, 30_000);
    child.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n').find((l) => l.includes('"latchkey started"'));
      if (line) {
        clearTimeout(timer);
        const { http, grpc: g } = JSON.parse(line) as { http: string; grpc: string };
        child.stdout?.removeAllListeners('data');
        child.stdout?.resume();
        resolvePromise({ child, http, grpc: g });
      }
    });
  });
}

/** An autocannon result with the 95th percentile of its response times, which autocannon does not report. */
export type TimedResult = Result & {
  p95_ms: number;
  /**
   * Seconds from the start to the last response. autocannon's own `duration`
   * ends at its next once-a-second tick after the last response, so a run
   * bounded by a number of requests (`amount`) that lasts a fraction of a
   * second reads as 1.01 s, one of 1.2 s as 2.01 s.
   */
  answered_s: number;
};

/**
 * Runs autocannon with `options` and records every response's time beside
 * it, for the p95 (the figure benchmark pages quote); the load is
 * autocannon's own.
 */
export function autocannonRun(options: Options): Promise<TimedResult> {
  const times: number[] = [];
  const started = performance.now();
  let last = started;
  return new Promise((done, fail) => {
    const instance = autocannon(options, (err: unknown, result: Result) => {
      if (err) return fail(err instanceof Error ? err : new Error(String(err)));
      const sorted = Float64Array.from(times).sort();
      done({ ...result, p95_ms: Math.round(percentile(sorted, 95) * 100) / 100, answered_s: (last - started) / 1000 });
    });
    instance.on('response', (_client: unknown, _status: number, _bytes: number, ms: number) => {
      times.push(ms);
      last = performance.now();
    });
  });
}

export function fromAutocannon(r: Result | TimedResult): Figures {
  return {
    requests_per_second: Math.round(r.requests.average),
    p50_ms: r.latency.p50,
    p90_ms: r.latency.p90,
    ...('p95_ms' in r ? { p95_ms: r.p95_ms } : {}),
    p99_ms: r.latency.p99,
    max_ms: r.latency.max,
    errors: r.errors + r.timeouts,
    non_2xx: r.non2xx,
    total: r.requests.total,
  };
}

export async function http(options: Options, seconds: number, warmup: number): Promise<Figures> {
  if (warmup > 0) await autocannon({ ...options, connections: CONNECTIONS, duration: warmup });
  return fromAutocannon(await autocannonRun({ ...options, connections: CONNECTIONS, duration: seconds }));
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** One unary gRPC call as the raw load generator sends it. */
export interface GrpcCall {
  /** `/package.Service/Method`. */
  path: string;
  /** The serialized request message (without the 5-byte gRPC frame header). */
  message: Buffer;
  /** Extra request headers (gRPC metadata), e.g. `authorization`. */
  headers?: Record<string, string>;
}

const META_CALL: GrpcCall = { path: '/latchkey.v1.Latchkey/Meta', message: Buffer.alloc(0) };

/**
 * gRPC load: unary calls (by default `Meta`) as raw gRPC-over-HTTP/2 requests
 * from node:http2 (the h2load/ghz approach): 5 connections carrying 50
 * concurrent streams. A grpc-js client costs about as much CPU per call as the
 * server, so with both on the same two cores it, not the server, would be
 * measured. A call counts as an error unless it ends with `grpc-status: 0`
 * and a non-empty response. The answers are verified with a real grpc-js
 * client before timing.
 */
export async function grpcLoad(address: string, seconds: number, warmup: number, call: GrpcCall = META_CALL): Promise<Figures> {
  const sessions = Array.from({ length: 5 }, () => http2.connect(`http://${address}`));
  await Promise.all(sessions.map((s) => new Promise((r, j) => s.once('connect', r).once('error', j))));
  // gRPC frame: a 0 byte (not compressed), the message length (big-endian), the message.
  const frame = Buffer.alloc(5 + call.message.length);
  frame.writeUInt32BE(call.message.length, 1);
  call.message.copy(frame, 5);
  const requestHeaders = { ':method': 'POST', ':path': call.path, 'content-type': 'application/grpc', te: 'trailers', ...call.headers };
  const phase = (durationS: number): Promise<{ latencies: number[]; errors: number; elapsed: number }> =>
    new Promise((resolvePromise) => {
      const latencies: number[] = [];
      let errors = 0;
      let active = 0;
      const started = performance.now();
      const deadline = started + durationS * 1000;
      const one = (session: http2.ClientHttp2Session): void => {
        if (performance.now() >= deadline) {
          if (--active === 0) resolvePromise({ latencies, errors, elapsed: (performance.now() - started) / 1000 });
          return;
        }
        const t0 = performance.now();
        let status: string | undefined;
        let bytes = 0;
        const stream = session.request(requestHeaders);
        stream.on('trailers', (trailers) => {
          status = String(trailers['grpc-status']);
        });
        stream.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
        });
        stream.on('close', () => {
          latencies.push(performance.now() - t0);
          if (status !== '0' || bytes <= 5) errors++;
          one(session);
        });
        stream.end(frame);
      };
      for (let i = 0; i < CONNECTIONS; i++) {
        active++;
        one(sessions[i % sessions.length] as http2.ClientHttp2Session);
      }
    });
  if (warmup > 0) await phase(warmup);
  const { latencies, errors, elapsed } = await phase(seconds);
  for (const s of sessions) s.close();
  const sorted = Float64Array.from(latencies).sort();
  const r2 = (x: number): number => Math.round(x * 100) / 100;
  return {
    requests_per_second: Math.round(latencies.length / elapsed),
    p50_ms: r2(percentile(sorted, 50)),
    p90_ms: r2(percentile(sorted, 90)),
    p99_ms: r2(percentile(sorted, 99)),
    max_ms: r2(sorted[sorted.length - 1] ?? 0),
    errors,
    non_2xx: 0,
    total: latencies.length,
  };
}

/** One real grpc-js call, to verify the answer before timing. */
async function grpcCheck(address: string): Promise<string | undefined> {
  const pkg = grpc.loadPackageDefinition(loadPackageDefinition(generateProto(OPERATIONS))) as unknown as {
    latchkey: { v1: { Latchkey: new (a: string, c: grpc.ChannelCredentials) => grpc.Client } };
  };
  const client = new pkg.latchkey.v1.Latchkey(address, grpc.credentials.createInsecure());
  try {
    return await new Promise((resolvePromise, reject) =>
      (client as unknown as { Meta(req: object, cb: (e: Error | null, r: { client_id?: string }) => void): void }).Meta({}, (e, r) =>
        e ? reject(e) : resolvePromise(r.client_id),
      ),
    );
  } finally {
    client.close();
  }
}

/**
 * Reference servers in their own process, answering `meta` with a constant
 * and nothing else: bare express (REST) and bare grpc-js (gRPC). They show
 * what the libraries alone allow on the machine at the time of the run.
 */
async function serveBaselines(): Promise<void> {
  const pkg = grpc.loadPackageDefinition(loadPackageDefinition(generateProto(OPERATIONS))) as unknown as {
    latchkey: { v1: { Latchkey: { service: grpc.ServiceDefinition } } };
  };
  const meta = { version: 'baseline', client_id: 'bench' };
  const server = new grpc.Server();
  server.addService(pkg.latchkey.v1.Latchkey.service, { Meta: (_call: unknown, cb: (e: null, r: unknown) => void) => cb(null, meta) });
  const grpcPort = await new Promise<number>((r, j) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? j(e) : r(p))));
  const app = express();
  const body = JSON.stringify(meta);
  app.get('/v1/meta', (_req, res) => {
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.end(body);
  });
  const http = app.listen(0, '127.0.0.1', () => {
    process.stdout.write(`${JSON.stringify({ grpc: `127.0.0.1:${grpcPort}`, http: `http://127.0.0.1:${(http.address() as { port: number }).port}` })}\n`);
  });
}

async function startBaselines(): Promise<{ grpc: string; http: string; stop(): void }> {
  const child = spawn(process.execPath, [new URL(import.meta.url).pathname, '--baseline-servers'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const addresses = await new Promise<{ grpc: string; http: string }>((resolvePromise) =>
    child.stdout?.once('data', (d: Buffer) => resolvePromise(JSON.parse(d.toString()) as { grpc: string; http: string })),
  );
  return { ...addresses, stop: () => child.kill() };
}

/** The round with the most requests per second, plus every round's rate. */
/** A row and its reference timed in alternating short slices (see {@link paired}). */
export interface Paired {
  /** The row's requests per second over all its slices. */
  row_rps: number;
  /** The reference's requests per second over all its slices. */
  reference_rps: number;
  /** `row_rps / reference_rps`. */
  ratio: number;
  /** Slices of each side, and the seconds of each. */
  slices: number;
  slice_seconds: number;
}

/**
 * The ratio of a row to its reference measured in alternating slices of
 * `sliceSeconds`, in the order row, reference, reference, row, repeated
 * `groups` times: a drift of the machine's speed over the run (seen here to
 * move a round's rate by 2x within a minute) falls on both sides alike, where
 * rounds of several seconds each compare rates taken at different moments.
 * Each side's rate is its requests over its slices' wall time together.
 */
export async function paired(row: (seconds: number) => Promise<{ total: number }>, reference: (seconds: number) => Promise<{ total: number }>, groups = 4, sliceSeconds = 1): Promise<Paired> {
  const sum = { row: { n: 0, s: 0 }, reference: { n: 0, s: 0 } };
  const slice = async (side: 'row' | 'reference'): Promise<void> => {
    const t0 = performance.now();
    const f = await (side === 'row' ? row : reference)(sliceSeconds);
    sum[side].s += (performance.now() - t0) / 1000;
    sum[side].n += f.total;
  };
  for (let g = 0; g < groups; g++) {
    await slice('row');
    await slice('reference');
    await slice('reference');
    await slice('row');
  }
  const rowRps = sum.row.n / sum.row.s;
  const refRps = sum.reference.n / sum.reference.s;
  return { row_rps: Math.round(rowRps), reference_rps: Math.round(refRps), ratio: Math.round((rowRps / refRps) * 100) / 100, slices: 2 * groups, slice_seconds: sliceSeconds };
}

export function best(rounds: Figures[]): Figures & { rounds_rps: number[] } {
  const top = rounds.reduce((a, b) => (b.requests_per_second > a.requests_per_second ? b : a));
  return { ...top, rounds_rps: rounds.map((r) => r.requests_per_second) };
}

export async function run(options: { quick?: boolean } = {}): Promise<Record<string, unknown>> {
  const seconds = options.quick ? 3 : 5;
  const rounds = options.quick ? 1 : 3;
  const warmup = options.quick ? 1 : 2;
  const loadBefore = loadavg().map((x) => Math.round(x * 100) / 100);
  const dir = await mkdtemp(join(tmpdir(), 'latchkey-bench-'));
  const { child, http: base, grpc: grpcAddress } = await startServerProcess(dir);
  try {
    const meta = OPERATIONS.find((op) => op.name === 'meta');
    if (!meta) throw new Error('meta operation missing');
    const graphqlBody = JSON.stringify({ query: graphqlDocument(meta) });
    const headers = { origin: base, 'content-type': 'application/json' };
    // Verify the answers before timing.
    const restCheck = (await (await fetch(`${base}/v1/meta`)).json()) as { client_id?: string };
    if (restCheck.client_id !== 'bench') throw new Error('REST meta answered wrongly');
    const gqlCheck = (await (await fetch(`${base}/graphql`, { method: 'POST', headers, body: graphqlBody })).json()) as { data?: { meta?: { client_id?: string } } };
    if (gqlCheck.data?.meta?.client_id !== 'bench') throw new Error('GraphQL meta answered wrongly');
    if ((await grpcCheck(grpcAddress)) !== 'bench') throw new Error('gRPC meta answered wrongly');

    // The machine is shared: rounds interleave the protocols so that a burst of
    // outside load does not fall on one protocol only; the best round is reported.
    const restOptions: Options = { url: `${base}/v1/meta` };
    const graphqlOptions: Options = { url: `${base}/graphql`, method: 'POST', headers, body: graphqlBody };
    const baseline = await startBaselines();
    const baselineRest: Options = { url: `${baseline.http}/v1/meta` };
    const results: Record<'rest' | 'graphql' | 'grpc' | 'express_alone' | 'grpc_js_alone', Figures[]> = {
      rest: [],
      graphql: [],
      grpc: [],
      express_alone: [],
      grpc_js_alone: [],
    };
    try {
      await http(restOptions, warmup, 0);
      await http(graphqlOptions, warmup, 0);
      await grpcLoad(grpcAddress, warmup, 0);
      await http(baselineRest, warmup, 0);
      await grpcLoad(baseline.grpc, warmup, 0);
      for (let round = 0; round < rounds; round++) {
        results.rest.push(await http(restOptions, seconds, 0));
        results.graphql.push(await http(graphqlOptions, seconds, 0));
        results.grpc.push(await grpcLoad(grpcAddress, seconds, 0));
        results.express_alone.push(await http(baselineRest, seconds, 0));
        results.grpc_js_alone.push(await grpcLoad(baseline.grpc, seconds, 0));
      }
    } finally {
      baseline.stop();
    }
    return {
      connections: CONNECTIONS,
      seconds_per_round: seconds,
      rounds,
      guards: 'cors, csrf, rate limit (raised), body limit, metrics',
      // The machine may be shared: how busy it was says how far the absolute figures can be trusted.
      load_average_before: loadBefore,
      load_average_after: loadavg().map((x) => Math.round(x * 100) / 100),
      rest: best(results.rest),
      graphql: best(results.graphql),
      grpc: best(results.grpc),
      express_alone: best(results.express_alone),
      grpc_js_alone: best(results.grpc_js_alone),
      targets: { rest_rps: 8000, graphql_rps: 4000, grpc_rps: 5000, p99_ms: 20 },
    };
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.main && process.argv.includes('--baseline-servers')) {
  await serveBaselines();
} else if (import.meta.main) {
  const figures = await run({ quick: process.argv.includes('--quick') });
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
}
