/**
 * Test helper: the real server, in-process, on free ports (HTTP, gRPC,
 * metrics), on a fresh database, with one client interface that drives any
 * operation of the table over GraphQL, REST or gRPC.
 *
 *   const server = await startTestServer();
 *   const r = await server.call('meta', {}, { protocol: 'grpc' });
 *   // r.body (success) or r.error {code, message, reason?}; r.setCookies
 *   await server.close();
 */
import * as grpc from '@grpc/grpc-js';
import {
  ERROR_NAMES,
  OPERATIONS,
  fromWire,
  generateProto,
  graphqlDocument,
  graphqlName,
  grpcService,
  loadPackageDefinition,
  parseFlags,
  startServer,
  toWire,
  type AnyOperation,
  type ServedOperation,
  type Clock,
  type Protocol,
  type RunningServer,
} from '../../cmd/index.ts';
import { createTestDatabase } from './databases.ts';
import { onFreePort, PortTaken } from './started.ts';
import { createTestDynamo } from './dynamodb.ts';
import type { MainBackend } from './main_databases.ts';

/** Every protocol, for `for (const protocol of PROTOCOLS)` suites. */
export const PROTOCOLS: readonly Protocol[] = ['graphql', 'rest', 'grpc'];

/** The credentials the test server is started with. */
export const TEST_ADMIN_SECRET = 'test-admin-secret';
export const TEST_CLIENT_ID = 'test-client-id';
export const TEST_CLIENT_SECRET = 'test-client-secret';
export const TEST_JWT_SECRET = 'test-jwt-secret-0123456789abcdef0123456789abcdef';

export interface CallOptions {
  protocol: Protocol;
  /**
   * Extra request headers (gRPC: metadata). `Origin` defaults to the server's
   * own URL so CSRF passes; pass `origin: ''` to send none.
   */
  headers?: Record<string, string>;
  /** Cookies to send (`cookie` header / metadata). */
  cookies?: Record<string, string>;
}

export interface CallResult {
  /** HTTP status (REST, GraphQL), or the numeric gRPC status (0 = OK). */
  status: number;
  /** The response object on success (identical across protocols). */
  body?: Record<string, unknown>;
  /** The error on failure; `code` is the same snake_case code on every protocol. */
  error?: { code: string; message: string; reason?: string };
  /** Response headers (gRPC: initial metadata), lower-case names. */
  headers: Record<string, string>;
  /** `Set-Cookie` values (gRPC: `set-cookie` metadata). */
  setCookies: string[];
}

/** The session cookie's value a call answered with (`Set-Cookie: cookie_session=…`); throws when it set none. */
export function sessionCookieOf(r: CallResult): string {
  for (const c of r.setCookies) {
    const m = /^cookie_session=([^;]+)/.exec(c);
    if (m !== null) return m[1]!;
  }
  throw new Error('no session cookie');
}

/** The main database of a test server: fresh per server, dropped with it. */
export interface ServerDatabase {
  readonly backend: MainBackend;
  /** `--database-url` (DynamoDB: the endpoint). */
  readonly url: string;
  /** The flags that reach this database (`database-type`, `database-url`, and DynamoDB's `cloud-*`): pass them to a second server on it. */
  readonly flags: Readonly<Record<string, string>>;
  drop(): Promise<void>;
}

/** A fresh, empty main database on `backend`. */
export async function createServerDatabase(backend: MainBackend): Promise<ServerDatabase> {
  if (backend === 'dynamodb') {
    const d = await createTestDynamo();
    const flags = Object.fromEntries(d.flags.map((f) => f.slice(2).split(/=(.*)/s, 2) as [string, string]));
    return { backend, url: d.url, flags, drop: () => d.drop() };
  }
  const db = await createTestDatabase(backend);
  return { backend, url: db.url, flags: { 'database-type': backend, 'database-url': db.url }, drop: () => db.drop() };
}

export interface TestServer {
  readonly httpUrl: string;
  readonly grpcAddress: string;
  readonly metricsUrl: string;
  readonly server: RunningServer;
  readonly database: ServerDatabase;
  /** Calls operation `op` (its wire name) with `input` over `options.protocol`. */
  call(op: string, input?: Record<string, unknown>, options?: CallOptions): Promise<CallResult>;
  close(): Promise<void>;
}

export interface TestServerOptions {
  backend?: MainBackend;
  /** An existing main database (`createServerDatabase`) instead of a fresh one; the caller drops it, `close()` does not. */
  database?: ServerDatabase;
  /** Extra rows served besides the table (for plumbing tests). */
  extraOperations?: readonly ServedOperation[];
  /** Collects the server's log lines (default: discarded unless `--log-level` is given). */
  logSink?: (line: string) => void;
  /** The server's clock (default: the system clock); tests move time with it instead of sleeping. */
  clock?: Clock;
  /** DNS TXT lookups of organization domain verification (default: the system resolver). */
  resolveTxt?: (name: string) => Promise<string[][]>;
}

function flagArgs(flags: Record<string, string | boolean | number>): string[] {
  return Object.entries(flags).map(([k, v]) => `--${k}=${String(v)}`);
}

function cookieHeader(cookies: Record<string, string> | undefined): string | undefined {
  if (!cookies || Object.keys(cookies).length === 0) return undefined;
  return Object.entries(cookies)
    .map(([k, v]) => `${k}=${v}`)
    .join('; ');
}

type GrpcClientCtor = new (address: string, creds: grpc.ChannelCredentials) => grpc.Client;

/**
 * {@link startTestServer} for a server whose flags must name its own HTTP port
 * (an issuer or `--url` that holds it, so port 0 cannot do): `flagsFor(port)`
 * on a free port, and on another one when a process took that port between
 * the choice and the bind.
 */
export function startTestServerOnPort(
  flagsFor: (port: number) => Record<string, string | boolean | number>,
  options: TestServerOptions = {},
): Promise<TestServer> {
  return onFreePort(async (port) => {
    try {
      return await startTestServer({ ...flagsFor(port), 'http-port': port }, options);
    } catch (err) {
      if ((err as { code?: unknown }).code === 'EADDRINUSE') throw new PortTaken(`port ${port} was taken before the test server bound it`);
      throw err;
    }
  });
}

/**
 * Starts the server with test defaults (admin secret, client id/secret, HS256,
 * 127.0.0.1, ports 0, log level silent, rate limit effectively off); `flags`
 * override or add (kebab-case names without `--`).
 */
export async function startTestServer(
  flags: Record<string, string | boolean | number> = {},
  options: TestServerOptions = {},
): Promise<TestServer> {
  const shared = options.database;
  const database = shared ?? (await createServerDatabase(options.backend ?? 'sqlite'));
  const drop = (): Promise<void> => (shared === undefined ? database.drop() : Promise.resolve());
  const defaults: Record<string, string | boolean | number> = {
    ...database.flags,
    'admin-secret': TEST_ADMIN_SECRET,
    'client-id': TEST_CLIENT_ID,
    'client-secret': TEST_CLIENT_SECRET,
    'jwt-type': 'HS256',
    'jwt-secret': TEST_JWT_SECRET,
    host: '127.0.0.1',
    'http-port': 0,
    'grpc-port': 0,
    'metrics-port': 0,
    'log-level': 'silent',
    'rate-limit-rps': 100000,
    'rate-limit-burst': 100000,
    'shutdown-timeout': '2s',
  };
  const parsed = parseFlags(flagArgs({ ...defaults, ...flags }));
  if (!parsed.ok) {
    await drop();
    throw new Error(`test server flags refused:\n${parsed.problems.join('\n')}`);
  }
  let server: RunningServer;
  try {
    server = await startServer(parsed.config, {
      ...(options.extraOperations ? { extraOperations: options.extraOperations } : {}),
      ...(options.logSink ? { logSink: options.logSink } : {}),
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.resolveTxt ? { resolveTxt: options.resolveTxt } : {}),
    });
  } catch (err) {
    await drop();
    throw err;
  }
  const operations = options.extraOperations ? [...OPERATIONS, ...options.extraOperations] : [...OPERATIONS];
  const byName = new Map(operations.map((op) => [op.name, op]));

  let clients: Record<string, grpc.Client> | undefined;
  const grpcClient = (op: AnyOperation): grpc.Client => {
    if (!server.grpcAddress) throw new Error('gRPC is disabled on this test server');
    if (!clients) {
      const pkg = grpc.loadPackageDefinition(loadPackageDefinition(generateProto(operations))) as unknown as {
        latchkey: { v1: Record<string, GrpcClientCtor> };
      };
      clients = {};
      for (const name of ['Latchkey', 'LatchkeyAdmin']) {
        const Ctor = pkg.latchkey.v1[name];
        if (Ctor) clients[name] = new Ctor(server.grpcAddress, grpc.credentials.createInsecure());
      }
    }
    const c = clients[grpcService(op)];
    if (!c) throw new Error(`no gRPC client for ${grpcService(op)}`);
    return c;
  };

  const httpHeaders = (o: CallOptions): Record<string, string> => {
    const h: Record<string, string> = {};
    let origin: string | undefined = server.httpUrl;
    for (const [k, v] of Object.entries(o.headers ?? {})) {
      if (k.toLowerCase() === 'origin') origin = v === '' ? undefined : v;
      else h[k.toLowerCase()] = v;
    }
    if (origin !== undefined) h.origin = origin;
    const cookie = cookieHeader(o.cookies);
    if (cookie) h.cookie = h.cookie ? `${h.cookie}; ${cookie}` : cookie;
    return h;
  };

  const fromFetch = async (res: Response): Promise<Pick<CallResult, 'status' | 'headers' | 'setCookies'> & { json: unknown }> => {
    const headers: Record<string, string> = {};
    res.headers.forEach((v, k) => {
      headers[k] = v;
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = text;
    }
    return { status: res.status, headers, setCookies: res.headers.getSetCookie(), json };
  };

  /** A streamed row over SSE: its first message (the body), or its refusal; the stream is then closed. */
  async function streamRest(op: AnyOperation, path: string, input: Record<string, unknown>, o: CallOptions): Promise<CallResult> {
    const query = new URLSearchParams(Object.entries(input).map(([k, v]): [string, string] => [k, String(v)])).toString();
    const ac = new AbortController();
    const res = await fetch(`${server.httpUrl}${path}${query ? `?${query}` : ''}`, { headers: httpHeaders(o), signal: ac.signal });
    if (res.status !== 200) {
      const r = await fromFetch(res);
      const e = (r.json ?? {}) as { code?: string; message?: string; reason?: string };
      return { status: r.status, error: { code: e.code ?? 'unknown', message: e.message ?? '', ...(e.reason ? { reason: e.reason } : {}) }, headers: r.headers, setCookies: r.setCookies };
    }
    const headers: Record<string, string> = {};
    res.headers.forEach((v, k) => {
      headers[k] = v;
    });
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    while (!text.includes('\n\n')) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
    ac.abort();
    await reader.cancel().catch(() => {});
    const block = text.slice(0, text.indexOf('\n\n')).split('\n');
    const data = block.find((l) => l.startsWith('data: '));
    const id = block.find((l) => l.startsWith('id: '))?.slice(4);
    const body = data !== undefined ? (JSON.parse(data.slice(6)) as Record<string, unknown>) : { token: id, kind: 'heartbeat' };
    void op;
    return { status: 200, body, headers, setCookies: res.headers.getSetCookie() };
  }

  async function callRest(op: AnyOperation, input: Record<string, unknown>, o: CallOptions): Promise<CallResult> {
    const route = op.rest;
    if (!route) throw new Error(`${op.name} has no REST route`);
    if (op.stream === true) return streamRest(op, route.path, input, o);
    const headers = httpHeaders(o);
    const init: RequestInit = { method: route.method, headers };
    if (route.method !== 'GET') {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(input);
    }
    const r = await fromFetch(await fetch(`${server.httpUrl}${route.path}`, init));
    if (r.status === 200) return { status: r.status, body: r.json as Record<string, unknown>, headers: r.headers, setCookies: r.setCookies };
    const e = (r.json ?? {}) as { code?: string; message?: string; reason?: string };
    return {
      status: r.status,
      error: { code: e.code ?? 'unknown', message: e.message ?? '', ...(e.reason ? { reason: e.reason } : {}) },
      headers: r.headers,
      setCookies: r.setCookies,
    };
  }

  async function callGraphql(op: AnyOperation, input: Record<string, unknown>, o: CallOptions): Promise<CallResult> {
    const headers = { ...httpHeaders(o), 'content-type': 'application/json', accept: 'application/json' };
    const hasParams = Object.keys(op.input.fields).length > 0;
    const body = JSON.stringify({ query: graphqlDocument(op), ...(hasParams ? { variables: { params: input } } : {}) });
    const r = await fromFetch(await fetch(`${server.httpUrl}/graphql`, { method: 'POST', headers, body }));
    const json = r.json as
      | { data?: Record<string, unknown> | null; errors?: { message: string; extensions?: { code?: string; reason?: string } }[]; code?: string; message?: string; reason?: string }
      | undefined;
    const first = json?.errors?.[0];
    if (first) {
      const reason = first.extensions?.reason;
      return {
        status: r.status,
        error: { code: first.extensions?.code ?? 'unknown', message: first.message, ...(reason ? { reason } : {}) },
        headers: r.headers,
        setCookies: r.setCookies,
      };
    }
    if (r.status !== 200 || !json?.data) {
      return {
        status: r.status,
        error: { code: json?.code ?? 'unknown', message: json?.message ?? '', ...(json?.reason ? { reason: json.reason } : {}) },
        headers: r.headers,
        setCookies: r.setCookies,
      };
    }
    return { status: r.status, body: json.data[graphqlName(op)] as Record<string, unknown>, headers: r.headers, setCookies: r.setCookies };
  }

  function callGrpc(op: AnyOperation, input: Record<string, unknown>, o: CallOptions): Promise<CallResult> {
    const client = grpcClient(op);
    const md = new grpc.Metadata();
    for (const [k, v] of Object.entries(o.headers ?? {})) if (k.toLowerCase() !== 'origin' && v !== '') md.add(k.toLowerCase(), v);
    const cookie = cookieHeader(o.cookies);
    if (cookie) md.add('cookie', cookie);
    const method = op.grpc?.method;
    if (!method) throw new Error(`${op.name} has no gRPC method`);
    if (op.stream === true) {
      // A streamed row: its first message (the body), or its refusal; the call is then cancelled.
      return new Promise((resolve) => {
        const headers: Record<string, string> = {};
        const fn = (client as unknown as Record<string, (...a: unknown[]) => grpc.ClientReadableStream<unknown>>)[method]!;
        const call = fn.call(client, toWire(op.input, input) ?? {}, md, { deadline: Date.now() + 10_000 });
        let settled = false;
        call.on('metadata', (m: grpc.Metadata) => {
          for (const [k, v] of Object.entries(m.getMap())) headers[k] = String(v);
        });
        call.on('data', (m: unknown) => {
          if (settled) return;
          settled = true;
          call.cancel();
          resolve({ status: 0, body: fromWire(op.output, m, true), headers, setCookies: [] });
        });
        call.on('error', (err: grpc.ServiceError) => {
          if (settled) return;
          settled = true;
          const code = String(err.metadata?.get('x-error-code')[0] ?? ERROR_NAMES[err.code] ?? 'unknown');
          const reason = err.metadata?.get('x-error-reason')[0];
          resolve({ status: err.code, error: { code, message: err.details, ...(reason !== undefined ? { reason: String(reason) } : {}) }, headers, setCookies: [] });
        });
      });
    }
    return new Promise((resolve) => {
      const headers: Record<string, string> = {};
      const setCookies: string[] = [];
      const fn = (client as unknown as Record<string, (...a: unknown[]) => grpc.ClientUnaryCall>)[method];
      if (!fn) throw new Error(`gRPC method ${method} missing`);
      const call = fn.call(client, toWire(op.input, input) ?? {}, md, { deadline: Date.now() + 10_000 }, (err: grpc.ServiceError | null, res: unknown) => {
        if (err) {
          const code = String(err.metadata?.get('x-error-code')[0] ?? ERROR_NAMES[err.code] ?? 'unknown');
          const reason = err.metadata?.get('x-error-reason')[0];
          for (const [k, v] of Object.entries(err.metadata?.getMap() ?? {})) headers[k] = String(v);
          resolve({
            status: err.code,
            error: { code, message: err.details, ...(reason !== undefined ? { reason: String(reason) } : {}) },
            headers,
            setCookies,
          });
          return;
        }
        resolve({ status: 0, body: fromWire(op.output, res, true), headers, setCookies });
      });
      call.on('metadata', (m: grpc.Metadata) => {
        for (const [k, v] of Object.entries(m.getMap())) headers[k] = String(v);
        for (const c of m.get('set-cookie')) setCookies.push(String(c));
      });
    });
  }

  return {
    httpUrl: server.httpUrl,
    grpcAddress: server.grpcAddress ?? '',
    metricsUrl: server.metricsUrl,
    server,
    database,
    async call(name, input = {}, o = { protocol: 'rest' }) {
      const op = byName.get(name);
      if (!op) throw new Error(`unknown operation ${name}`);
      if (!op.protocols.includes(o.protocol)) throw new Error(`${name} is not served over ${o.protocol}`);
      if (o.protocol === 'rest') return callRest(op, input, o);
      if (o.protocol === 'graphql') return callGraphql(op, input, o);
      return callGrpc(op, input, o);
    },
    async close() {
      if (clients) for (const c of Object.values(clients)) c.close();
      try {
        await server.close();
      } finally {
        await drop();
      }
    },
  };
}
