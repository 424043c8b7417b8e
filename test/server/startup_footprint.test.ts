/**
 * The server loads what its flags use and nothing else (docs/performance.md,
 * "Server footprint"). `latchkey serve` is started as `npm start` runs it, on
 * SQLite with the default flags, under a module hook that records every
 * package a module is resolved from (`import` and `require` alike). After
 * start and a request on each protocol's path, none of the libraries that
 * are loaded on first use may be there: the DynamoDB SDK (only with
 * `--database-type=dynamodb`), ioredis (only with `--redis-url`), nodemailer
 * (only with SMTP settings), the modeling language's parser (the first model
 * operation), the WebAuthn library (only with `--enable-passkeys`, at the
 * first ceremony). Then a model written as DSL must load the parser: the
 * proof that the hook sees what it is meant to see.
 */
import test from 'ava';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { redisUrl } from '../helpers/databases.ts';
import { freePort } from '../helpers/loopback.ts';
import { needs } from '../helpers/needs.ts';
import { REPO_ROOT } from '../helpers/shared.ts';
import { stopChild as stop } from '../helpers/instances.ts';

const ADMIN_SECRET = 'footprint-admin-secret-0123456789';

/** Loaded through a module hook in the server process; on SIGUSR2 it writes the packages seen so far. */
const HOOKS = `import { registerHooks } from 'node:module';
import { writeFileSync } from 'node:fs';
const seen = new Set();
registerHooks({
  resolve(specifier, context, next) {
    const r = next(specifier, context);
    const m = /\\/node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(r.url);
    if (m) seen.add(m[1]);
    return r;
  },
});
process.on('SIGUSR2', () => writeFileSync(process.env.LK_LOADED_FILE, JSON.stringify([...seen].sort())));
`;

/** Loaded on first use only; none of them may be in a default SQLite server after start. */
const LAZY = ['@aws-sdk/client-dynamodb', '@aws-sdk/lib-dynamodb', 'ioredis', 'nodemailer', 'chevrotain', '@simplewebauthn/server'];

interface Server {
  child: ChildProcess;
  http: number;
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
    if (Date.now() - started > 90_000) throw new Error(`the server did not answer /healthz within 90 s: ${stderr.slice(0, 2000)}`);
    const ok = await fetch(`http://127.0.0.1:${http}/healthz`).then((r) => r.status === 200, () => false);
    if (ok) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    child,
    http,
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

test('a default SQLite server loads none of the libraries kept for first use; a DSL model then loads the parser', async (t) => {
  t.timeout(180_000);
  const dir = await mkdtemp(join(tmpdir(), 'lk-footprint-'));
  let server: Server | undefined;
  try {
    server = await startServer(dir);
    // Requests a running server answers all day: meta, a sign-up, GraphQL.
    t.is((await fetch(`http://127.0.0.1:${server.http}/v1/meta`)).status, 200);
    const signup = await post(server.http, '/v1/signup', { email: 'footprint@example.com', password: 'Footprint-Password-1', confirm_password: 'Footprint-Password-1' });
    t.is(signup.status, 200, JSON.stringify(signup.json));
    t.is((await post(server.http, '/graphql', { query: '{ meta { version } }' })).status, 200);

    const atStart = await server.loaded();
    t.true(atStart.includes('sequelize'), `the hook sees the packages the server does load: ${atStart.join(', ')}`);
    t.deepEqual(LAZY.filter((p) => atStart.includes(p)), [], 'loaded at start although kept for first use');

    const model = await post(server.http, '/v1/admin/fga/model', { dsl: 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n' }, { 'x-service-admin-secret': ADMIN_SECRET });
    t.is(model.status, 200, JSON.stringify(model.json));
    const afterModel = await server.loaded();
    t.true(afterModel.includes('chevrotain'), 'the first model written as DSL loads the parser');
    t.deepEqual(LAZY.filter((p) => p !== 'chevrotain' && afterModel.includes(p)), [], 'and nothing else kept for first use');
  } finally {
    if (server !== undefined) await stop(server.child);
    await rm(dir, { recursive: true, force: true });
  }
});

needs(test, 'redis')('with --redis-url the server loads ioredis (a require() the hook must see too), still nothing else kept for first use', async (t) => {
  t.timeout(180_000);
  const dir = await mkdtemp(join(tmpdir(), 'lk-footprint-'));
  let server: Server | undefined;
  try {
    server = await startServer(dir, ['--redis-url', redisUrl()!]);
    t.is((await fetch(`http://127.0.0.1:${server.http}/v1/meta`)).status, 200);
    const loaded = await server.loaded();
    t.true(loaded.includes('ioredis'), `ioredis is loaded through createRequire: ${loaded.join(', ')}`);
    t.deepEqual(LAZY.filter((p) => p !== 'ioredis' && loaded.includes(p)), []);
  } finally {
    if (server !== undefined) await stop(server.child);
    await rm(dir, { recursive: true, force: true });
  }
});
