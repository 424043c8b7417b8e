/**
 * The server loads what its flags use and nothing else (docs/performance.md,
 * "Server footprint"). `latchkey serve` is started as `npm start` runs it, on
 * SQLite with the default flags, under a module hook that records every
 * package a module is loaded from (`import` and `require` alike). After
 * start and a request on REST, none of the libraries that are loaded on first
 * use may be there: the DynamoDB SDK (only with `--database-type=dynamodb`),
 * ioredis and rate-limiter-flexible (only with `--redis-url`), nodemailer (only with SMTP settings), the
 * modeling language's parser (the first model operation), the WebAuthn
 * library (only with `--enable-passkeys`, at the first ceremony), graphql-js
 * and graphql-http (the first request to /graphql), the gRPC reflection
 * library (the first reflection call), otplib and qrcode-generator (the first
 * TOTP enrolment or code; that path is served by test/auth/mfa.test.ts),
 * prom-client and the OpenTelemetry API it loads (the first scrape of
 * /metrics), jose (the first RSA or EC key imported, or client assertion,
 * DPoP proof or provider's ID token checked: the sign-up here, whose tokens
 * the server signs and checks itself with its HMAC key, must not load it),
 * the CEL library (the first condition compiled; the model here has none),
 * Node's own bundled fetch client (never), and sequelize with its
 * dependencies (never on SQLite, whose main database and FGA store run
 * without it); nor may the pages' modules
 * (sign-in, account center, consent, dashboard: the first request to one).
 * Then the first GraphQL request, the first reflection call, a model
 * written as DSL and the first scrape must each be answered correctly and
 * load their library: the proof that the hook sees what it is meant to see
 * and that a lazily loaded surface serves its first request.
 */
import test from 'ava';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { ClientDuplexStream } from '@grpc/grpc-js';
import { redisUrl } from '../helpers/databases.ts';
import { freePort } from '../helpers/loopback.ts';
import { needs } from '../helpers/needs.ts';
import { REPO_ROOT } from '../helpers/shared.ts';
import { stopChild as stop } from '../helpers/instances.ts';

const ADMIN_SECRET = 'footprint-admin-secret-0123456789';

/** Loaded through a module hook in the server process; on SIGUSR2 it writes the packages loaded so far. */
const HOOKS = `import { registerHooks } from 'node:module';
import { writeFileSync } from 'node:fs';
const seen = new Set();
registerHooks({
  load(url, context, next) {
    const m = /\\/node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(url);
    if (m) seen.add(m[1]);
    // The pages' own modules, named as web/<file>.
    const page = /\\/transports\\/web\\/(?:dashboard\\/)?([a-z_]+_page|dashboard)\\.ts$/.exec(url);
    if (page && !url.includes('/node_modules/')) seen.add('web/' + page[1]);
    return next(url, context);
  },
});
process.on('SIGUSR2', () => {
  // Node's bundled fetch and WebSocket client is a built-in module, out of the hook's sight.
  if (process.moduleLoadList.includes('NativeModule internal/deps/undici/undici')) seen.add('node:undici');
  writeFileSync(process.env.LK_LOADED_FILE, JSON.stringify([...seen].sort()));
});
`;

/**
 * Loaded on first use only; none of them may be in a default SQLite server after start. `node:undici` is Node's
 * bundled fetch/WebSocket client, which an ESM `import` of `node:http` loads (cmd/server.ts); the server never uses it.
 */
const LAZY = [
  'node:undici',
  '@aws-sdk/client-dynamodb', '@aws-sdk/lib-dynamodb', 'ioredis', 'rate-limiter-flexible', 'nodemailer', 'chevrotain', '@simplewebauthn/server',
  'graphql', 'graphql-http', '@grpc/reflection', 'otplib', 'qrcode-generator', 'prom-client', '@opentelemetry/api', 'jose', '@marcbachmann/cel-js',
  'web/login_page', 'web/account_page', 'web/consent_page', 'web/dashboard',
  // Never on SQLite: the main database and the FGA store run on engine/sql/sqlite_database.ts.
  'sequelize', 'validator', 'moment', 'moment-timezone', 'lodash', 'wkx',
];

interface Server {
  child: ChildProcess;
  http: number;
  grpc: number;
  metrics: number;
  loaded(): Promise<string[]>;
}

async function startServer(dir: string, extra: string[] = []): Promise<Server> {
  const hooks = join(dir, 'hooks.mjs');
  await writeFile(hooks, HOOKS);
  const loadedFile = join(dir, `loaded-${Date.now()}.json`);
  const [http, grpc, metrics] = [await freePort(), await freePort(), await freePort()];
  const child = spawn(process.execPath, [
    '--import', hooks, join(REPO_ROOT, 'bin', 'latchkey.js'), 'serve',
    '--host', '127.0.0.1', '--http-port', String(http), '--grpc-port', String(grpc), '--metrics-port', String(metrics),
    '--database-type', 'sqlite', '--database-url', join(dir, 'footprint.sqlite'),
    '--client-id', 'footprint-client', '--client-secret', 'footprint-client-secret-0123456789',
    '--jwt-type', 'HS256', '--jwt-secret', 'footprint-jwt-secret-0123456789abcdef0123456789',
    '--admin-secret', ADMIN_SECRET, '--log-level', 'silent', ...extra,
  ], { env: { ...process.env, LK_LOADED_FILE: loadedFile, NODE_COMPILE_CACHE: join(dir, 'compile-cache') }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
  const started = Date.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode}): ${stderr.slice(0, 2000)}`);
    // Readiness, not liveness: /healthz answers while gRPC, which opens after HTTP, is still loading.
    if (Date.now() - started > 90_000) throw new Error(`the server did not answer /readyz within 90 s: ${stderr.slice(0, 2000)}`);
    const ok = await fetch(`http://127.0.0.1:${http}/readyz`).then((r) => r.status === 200, () => false);
    if (ok) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    child,
    http,
    grpc,
    metrics,
    async loaded() {
      await rm(loadedFile, { force: true });
      child.kill('SIGUSR2');
      for (let i = 0; i < 200; i++) {
        const text = await readFile(loadedFile, 'utf8').catch(() => undefined);
        if (text !== undefined && text.endsWith(']')) return JSON.parse(text) as string[];
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error('the server did not report its loaded packages');
    },
  };
}


async function post(port: number, path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', origin: `http://127.0.0.1:${port}`, ...headers }, body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

/** The services a reflection call over gRPC lists (what grpcurl asks first). */
async function reflectedServices(port: number): Promise<string[]> {
  const grpc = await import('@grpc/grpc-js');
  const loader = await import('@grpc/proto-loader');
  const root = dirname(createRequire(import.meta.url).resolve('@grpc/reflection/package.json'));
  const def = grpc.loadPackageDefinition(loader.loadSync(join(root, 'build/proto/grpc/reflection/v1alpha/reflection.proto'), { keepCase: true })) as unknown as {
    grpc: { reflection: { v1alpha: { ServerReflection: new (a: string, c: unknown) => { ServerReflectionInfo(): ClientDuplexStream<unknown, { list_services_response?: { service: { name: string }[] } }>; close(): void } } } };
  };
  const client = new def.grpc.reflection.v1alpha.ServerReflection(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  try {
    return await new Promise<string[]>((resolve, reject) => {
      const stream = client.ServerReflectionInfo();
      stream.on('data', (msg) => {
        resolve((msg.list_services_response?.service ?? []).map((s: { name: string }) => s.name));
        stream.end();
      });
      stream.on('error', reject);
      stream.write({ list_services: '' });
    });
  } finally {
    client.close();
  }
}

test('a default SQLite server loads none of the libraries kept for first use; GraphQL, reflection and a DSL model then load theirs and answer', async (t) => {
  t.timeout(180_000);
  const dir = await mkdtemp(join(tmpdir(), 'lk-footprint-'));
  let server: Server | undefined;
  try {
    server = await startServer(dir);
    // A request a running server answers all day, then the first sign-up, whose HMAC tokens leave jose unloaded.
    t.is((await fetch(`http://127.0.0.1:${server.http}/v1/meta`)).status, 200);
    const atStart = await server.loaded();
    t.true(atStart.includes('express') && atStart.includes('@grpc/grpc-js'), `the hook sees the packages the server does load: ${atStart.join(', ')}`);
    t.deepEqual(LAZY.filter((p) => atStart.includes(p)), [], 'loaded at start although kept for first use');
    const signup = await post(server.http, '/v1/signup', { email: 'footprint@example.com', password: 'Footprint-Password-1', confirm_password: 'Footprint-Password-1' });
    t.is(signup.status, 200, JSON.stringify(signup.json));
    const token = (signup.json as { access_token?: string }).access_token ?? '';
    t.is(token.split('.').length, 3, 'the sign-up answers with a signed access token');
    const validated = await post(server.http, '/v1/validate_jwt_token', { token_type: 'access_token', token });
    t.is(validated.status, 200, JSON.stringify(validated.json));
    t.is(validated.json['is_valid'], true);
    const afterSignup = await server.loaded();
    t.false(afterSignup.includes('jose'), 'the server signs and checks its own tokens without jose');

    // The first GraphQL request builds the schema and is answered like any other.
    const graphql = await post(server.http, '/graphql', { query: '{ meta { version client_id } }' });
    t.is(graphql.status, 200, JSON.stringify(graphql.json));
    t.is((graphql.json['data'] as { meta: { client_id: string } }).meta.client_id, 'footprint-client');
    const invalid = await post(server.http, '/graphql', { query: '{ meta { nope } }' });
    t.is((invalid.json['errors'] as { extensions?: { code?: string } }[] | undefined)?.[0]?.extensions?.code, 'invalid_argument', `and the validation rules are in place: ${JSON.stringify(invalid.json)}`);
    const afterGraphql = await server.loaded();
    t.true(afterGraphql.includes('graphql') && afterGraphql.includes('graphql-http'), 'the first GraphQL request loads graphql-js');

    // The first reflection call builds the reflection index and lists both services.
    const services = await reflectedServices(server.grpc);
    t.true(services.includes('latchkey.v1.Latchkey') && services.includes('latchkey.v1.LatchkeyAdmin'), services.join(', '));
    const afterReflection = await server.loaded();
    t.true(afterReflection.includes('@grpc/reflection'), 'the first reflection call loads the reflection library');

    const model = await post(server.http, '/v1/admin/fga/model', { dsl: 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n' }, { 'x-service-admin-secret': ADMIN_SECRET });
    t.is(model.status, 200, JSON.stringify(model.json));
    const afterModel = await server.loaded();
    t.true(afterModel.includes('chevrotain'), 'the first model written as DSL loads the parser');

    // The first scrape loads prom-client; the requests served before it are in it.
    const scrape = await fetch(`http://127.0.0.1:${server.metrics}/metrics`);
    t.is(scrape.status, 200);
    const exposition = await scrape.text();
    t.regex(exposition, /^latchkey_transport_requests_total\{op="signup",transport="rest",code="ok"\} 1$/m);
    t.regex(exposition, /^latchkey_process_resident_memory_bytes \d+/m);
    const afterScrape = await server.loaded();
    t.true(afterScrape.includes('prom-client'), 'the first scrape loads prom-client');
    // The first request to the sign-in page loads its module (the account center's stays out) and serves the page.
    const login = await fetch(`http://127.0.0.1:${server.http}/app`, { headers: { 'accept-language': 'de' } });
    t.is(login.status, 200);
    t.is(login.headers.get('content-language'), 'de');
    t.true(/<html[^>]* lang="de"/.test(await login.text()), 'the sign-in page in the reader\'s language');
    const afterLogin = await server.loaded();
    t.true(afterLogin.includes('web/login_page'));
    t.false(afterLogin.includes('web/dashboard'), 'the dashboard stays unloaded until its first request');
    const used = ['chevrotain', 'graphql', 'graphql-http', '@grpc/reflection', 'prom-client', '@opentelemetry/api', 'web/login_page'];
    t.deepEqual(LAZY.filter((p) => !used.includes(p) && afterLogin.includes(p)), [], 'and nothing else kept for first use');
  } finally {
    if (server !== undefined) await stop(server.child);
    await rm(dir, { recursive: true, force: true });
  }
});

needs(test, 'redis')('with --redis-url the server loads ioredis (a require() the hook must see too) and rate-limiter-flexible, still nothing else kept for first use', async (t) => {
  t.timeout(180_000);
  const dir = await mkdtemp(join(tmpdir(), 'lk-footprint-'));
  let server: Server | undefined;
  try {
    server = await startServer(dir, ['--redis-url', redisUrl()!]);
    t.is((await fetch(`http://127.0.0.1:${server.http}/v1/meta`)).status, 200);
    const loaded = await server.loaded();
    t.true(loaded.includes('ioredis'), `ioredis is loaded through createRequire: ${loaded.join(', ')}`);
    t.true(loaded.includes('rate-limiter-flexible'), `the shared rate limits load their library: ${loaded.join(', ')}`);
    t.deepEqual(LAZY.filter((p) => p !== 'ioredis' && p !== 'rate-limiter-flexible' && loaded.includes(p)), []);
  } finally {
    if (server !== undefined) await stop(server.child);
    await rm(dir, { recursive: true, force: true });
  }
});
