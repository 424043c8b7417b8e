/**
 * `--custom-access-token-script`: the script's claims are added to the access
 * and id tokens of a login; a script that throws, loops, allocates without
 * bound, returns no object or a reserved claim, or tries to reach `require`,
 * `process`, the network or the file system refuses the login
 * (`failed_precondition` `token_script_failed`) and is logged; a script that
 * does not compile refuses startup.
 */
import test from 'ava';
import { decodeJwt } from 'jose';
import { TokenScript } from '../../auth/index.ts';
import { startTestServer } from '../helpers/server.ts';

const PASSWORD = 'Correct-Horse-7-Battery';
const USER = { id: 'u1', email: 'ann@example.com', roles: ['user'] };
const CLAIMS = { sub: 'u1', token_type: 'access_token', roles: ['user'] };

test('the returned object is the extra claims; the script sees the user and the token claims', async (t) => {
  const script = await TokenScript.create('function (user, tokenPayload) { return { tier: user.email.endsWith("@example.com") ? "gold" : "free", seen: tokenPayload.sub, n: [1, 2] }; }');
  t.teardown(() => script.close());
  t.deepEqual(await script.claims(USER, CLAIMS), { tier: 'gold', seen: 'u1', n: [1, 2] });
  // Calls do not share state through the user or claims objects.
  t.deepEqual(await script.claims({ ...USER, email: 'bob@other.org' }, CLAIMS), { tier: 'free', seen: 'u1', n: [1, 2] });
});

test('a throwing, looping, allocating, non-object or reserved-claim script is refused, logged, and the next call works again', async (t) => {
  const failures: string[] = [];
  const make = (src: string) => TokenScript.create(src, { timeoutMs: 300, memoryMb: 16, onFailure: (d) => failures.push(d.reason) });
  const cases: [string, string][] = [
    ['function () { throw new Error("boom"); }', 'threw'],
    ['function () { for (;;) {} }', 'timeout'],
    ['function () { return Promise.resolve({ a: 1 }); }', 'bad_result'],
    ['function () { return 42; }', 'bad_result'],
    ['function () { return [1]; }', 'bad_result'],
    ['function () { return { sub: "admin" }; }', 'reserved_claim'],
    ['function () { return { roles: ["admin"] }; }', 'reserved_claim'],
    ['function () { const a = []; for (;;) a.push(new Array(1e5).fill(1)); }', 'out_of_memory'],
    ['function () { throw { get message() { for (;;) {} } }; }', 'timeout'],
  ];
  for (const [src, reason] of cases) {
    const script = await make(src);
    t.teardown(() => script.close());
    const err = await t.throwsAsync(script.claims(USER, CLAIMS));
    t.is((err as { code?: string }).code, 'failed_precondition', src);
    t.is((err as { reason?: string }).reason, 'token_script_failed', src);
    t.is(failures.at(-1), reason, src);
  }
  // After a worker was killed (loop, memory), a fresh one answers.
  const flaky = await make('function (user) { if (user.email === "loop@example.com") for (;;) {} return { ok: true }; }');
  t.teardown(() => flaky.close());
  await t.throwsAsync(flaky.claims({ ...USER, email: 'loop@example.com' }, CLAIMS));
  t.deepEqual(await flaky.claims(USER, CLAIMS), { ok: true });
});

test('no way out of the sandbox: require, process, eval, Function, fetch, timers, WebAssembly and the constructor chain are absent or refused', async (t) => {
  const attempts = [
    'function () { return { v: require("node:fs").readFileSync("/etc/passwd", "utf8") }; }',
    'function () { return { v: process.env }; }',
    'function () { return { v: String(process.exit(1)) }; }',
    'function () { return { v: eval("1 + 1") }; }',
    'function () { return { v: Function("return 1")() }; }',
    'function () { return { v: this.constructor.constructor("return process")().pid }; }',
    'function (user) { return { v: user.constructor.constructor("return process")().pid }; }',
    'function () { return { v: typeof fetch === "function" ? fetch("http://127.0.0.1:1") : globalThis.fetch.x }; }',
    'function () { return { v: setTimeout(() => 0, 1) }; }',
    'function () { return { v: WebAssembly.compile(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0])) && 1 }; }',
  ];
  for (const src of attempts) {
    const script = await TokenScript.create(src, { timeoutMs: 500 });
    t.teardown(() => script.close());
    const err = await t.throwsAsync(script.claims(USER, CLAIMS), undefined, src);
    t.is((err as { reason?: string } | undefined)?.reason, 'token_script_failed', src);
  }
  // What a script can see of the world: the language's own builtins, nothing of Node.
  const probe = await TokenScript.create('function () { return { names: Object.getOwnPropertyNames(globalThis).filter((n) => /^(process|require|module|exports|Buffer|fetch|setTimeout|setInterval|setImmediate|queueMicrotask|console|WebAssembly|SharedArrayBuffer|Atomics)$/.test(n)) }; }');
  t.teardown(() => probe.close());
  t.deepEqual(await probe.claims(USER, CLAIMS), { names: [] });
});

test('a script that does not compile, or is not a function, is refused at creation', async (t) => {
  for (const src of ['function (', '42', '"text"']) {
    const err = await t.throwsAsync(TokenScript.create(src));
    t.is((err as { reason?: string }).reason, 'invalid_token_script', src);
  }
});

test('through the server: login tokens carry the claims (access and id); a failing script refuses the login with no session, and is logged', async (t) => {
  const ok = await startTestServer({ 'enable-email-verification': false, 'custom-access-token-script': 'function (user, payload) { return { tier: "gold", email_domain: user.email.split("@")[1], login: payload.login_method }; }' });
  t.teardown(() => ok.close());
  await ok.call('signup', { email: 'ann@example.com', password: PASSWORD }, { protocol: 'rest' });
  const login = await ok.call('login', { email: 'ann@example.com', password: PASSWORD }, { protocol: 'graphql' });
  const access = decodeJwt(String(login.body?.['access_token']));
  const id = decodeJwt(String(login.body?.['id_token']));
  t.is(access['tier'], 'gold');
  t.is(access['email_domain'], 'example.com');
  t.is(access['login'], 'basic_auth');
  t.is(id['tier'], 'gold');
  // Refresh carries them too.
  const refreshed = await ok.call('session', { refresh_token: String(login.body?.['refresh_token']) }, { protocol: 'rest', headers: { authorization: `Bearer ${String(login.body?.['access_token'])}` } });
  t.is(decodeJwt(String(refreshed.body?.['access_token']))['tier'], 'gold');

  const lines: string[] = [];
  const bad = await startTestServer(
    { 'enable-email-verification': false, 'log-level': 'error', 'custom-access-token-script': 'function (user) { if (user.email.startsWith("x")) throw new Error("nope"); return {}; }' },
    { logSink: (l) => lines.push(l) },
  );
  t.teardown(() => bad.close());
  const signup = await bad.call('signup', { email: 'xena@example.com', password: PASSWORD }, { protocol: 'rest' });
  t.is(signup.error?.code, 'failed_precondition');
  t.is(signup.error?.reason, 'token_script_failed');
  t.regex(signup.error?.message ?? '', /custom access token script failed/);
  t.false(signup.setCookies.some((c) => c.startsWith('cookie_session=') && !c.startsWith('cookie_session=;')));
  t.true(lines.some((l) => l.includes('custom access token script failed')));
  const other = await bad.call('signup', { email: 'yan@example.com', password: PASSWORD }, { protocol: 'rest' });
  t.truthy(other.body?.['access_token']);

  await t.throwsAsync(startTestServer({ 'custom-access-token-script': 'function (' }), { message: /custom-access-token-script/ });
});
