/**
 * Three server processes on one PostgreSQL database and a Redis of this
 * test's own (started on a free port, so that it can be stopped without
 * touching the shared one), the revision poll at 30 s:
 *
 * - a model write through one replica reaches the others at once (the
 *   revision notification, not the poll): a model that takes a permission
 *   away is obeyed by the other two within 2 s, with their caches warm;
 * - the per-account request limit (`--rate-limit-account-rps`) counts one
 *   account across replicas and client IPs;
 * - a pushed authorization request (PAR) made to one replica is used at
 *   another, and a DPoP proof used at one is a replay at another; with Redis
 *   down a push and a proof are refused;
 * - the password-reset mail budget of one address (5 per 15 minutes) holds
 *   across replicas: 8 requests spread over the three send 5 mails;
 * - Redis down: every replica's `/readyz` fails (a load balancer takes them
 *   out); asked directly, the plain HTTP rate limit fails open (each replica
 *   limits on its own, nothing is refused for want of Redis), while the
 *   security state fails closed: a login with the right password is refused
 *   `unavailable` (sessions and attempt budgets live in Redis) and a reset
 *   request sends no mail (its budget cannot be counted);
 * - Redis back: every replica is ready again and logins work, without a
 *   restart.
 */
import test from 'ava';
import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { needs } from '../../helpers/needs.ts';
import { CLUSTER_ADMIN_SECRET, jsonRequest, replicaBed, type JsonResponse, type Replica } from '../../helpers/cluster.ts';
import { decodeMail, startSmtp } from '../../admin/smtp.ts';

const PASSWORD = 'correct horse battery staple';
const V1 = 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define owner: [user]\n    define viewer: [user] or owner\n';
const V2 = 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define owner: [user]\n    define viewer: [user]\n';
const RPS = 2;
const BURST = 4;
/** The per-account limit; the model checks below poll every 50 ms, under it. */
const ACCOUNT_RPS = 20;
const ACCOUNT_BURST = 20;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const postgres = process.env['LATCHKEY_TEST_POSTGRES_URL'];

/** A form POST (as OAuth clients send) from `from`, with HTTP basic client authentication. */
function form(r: Replica, path: string, fields: Record<string, string>, authorization: string, from: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }> {
  return new Promise((resolve, reject) => {
    const req = request(`${r.url}${path}`, { method: 'POST', localAddress: from, agent: false, headers: { 'content-type': 'application/x-www-form-urlencoded', authorization, ...headers } }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => void (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(new URLSearchParams(fields).toString());
  });
}

needs(test, 'postgres', 'redis', 'redis-server')('three replicas: a model write reaches every replica at once; the per-account limit, PAR, DPoP replay and the reset budget are shared; with Redis down the rate limit fails open and sessions, PAR, DPoP and budgets fail closed; Redis back, all recover', async (t) => {
  t.timeout(90_000);
  t.truthy(postgres, 'LATCHKEY_TEST_POSTGRES_URL is required');
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  const bed = await replicaBed(t, {
    prefix: 'replicas_shared',
    flags: [
      '--fga-cache-revision-poll=30s', `--rate-limit-rps=${RPS}`, `--rate-limit-burst=${BURST}`,
      `--rate-limit-account-rps=${ACCOUNT_RPS}`, `--rate-limit-account-burst=${ACCOUNT_BURST}`,
      '--enable-email-verification=false', '--smtp-host=127.0.0.1', `--smtp-port=${smtp.port}`, '--smtp-sender-email=noreply@replicas.test',
    ],
  });
  const { replicas, publicUrl, run } = bed;
  const [r1, r2, r3] = replicas as [Replica, Replica, Replica];
  // Each call from its own loopback address: the low rate limit of this cluster is per client IP.
  let address = 0;
  const call = (r: Replica, path: string, body?: unknown, o: { admin?: boolean; cookie?: string; from?: string } = {}): Promise<JsonResponse> =>
    jsonRequest(`${r.url}${path}`, {
      ...(body === undefined ? {} : { body }),
      headers: { origin: publicUrl, ...(o.admin ? { 'x-service-admin-secret': CLUSTER_ADMIN_SECRET } : {}), ...(o.cookie ? { cookie: o.cookie } : {}) },
      localAddress: o.from ?? `127.0.2.${(address++ % 250) + 1}`,
    });

  // A model write through replica 1 that takes a permission away: obeyed by 2 and 3 at once (poll 30 s).
  const email = `ann-${run}@replicas.test`;
  t.is((await call(r1, '/v1/signup', { email, password: PASSWORD })).status, 200);
  const login = await call(r1, '/v1/login', { email, password: PASSWORD });
  t.is(login.status, 200, JSON.stringify(login.body));
  const cookie = login.cookies.map((c) => c.split(';')[0]).join('; ');
  const userId = String((login.body['user'] as Record<string, unknown>)['id']);
  t.is((await call(r1, '/v1/admin/fga/model', { dsl: V1 }, { admin: true })).status, 200);
  t.is((await call(r1, '/v1/admin/fga/tuples', { tuples: [{ user: `user:${userId}`, relation: 'owner', object: 'doc:plan' }] }, { admin: true })).status, 200);
  const viewer = async (r: Replica): Promise<boolean> => {
    const res = await call(r, '/v1/check_permissions', { checks: [{ relation: 'viewer', object: 'doc:plan' }] }, { cookie });
    t.is(res.status, 200, JSON.stringify(res.body));
    return (res.body['results'] as { allowed: boolean }[])[0]!.allowed;
  };
  for (const r of [r2, r3]) {
    const until = Date.now() + 2000;
    while (!(await viewer(r))) {
      t.true(Date.now() < until, `the owner tuple reached ${r.url}`);
      await sleep(50);
    }
    t.true(await viewer(r), 'allowed (cached now)');
  }
  const written = performance.now();
  t.is((await call(r1, '/v1/admin/fga/model', { dsl: V2 }, { admin: true })).status, 200);
  const seen: number[] = [];
  for (const r of [r2, r3]) {
    while (await viewer(r)) {
      t.true(performance.now() - written < 2000, `${r.url} still allows 2 s after the model write (poll is 30 s)`);
      await sleep(50);
    }
    seen.push(performance.now() - written);
  }
  t.true(Math.max(...seen) < 2000, 'both other replicas follow the new model within 2 s');

  // The per-account limit counts one account across replicas and client IPs: 90 requests at once, 30 to each replica,
  // each from its own address. Three separate limits would allow them all (3 × (20 + 20) = 120).
  const dave = `dave-${run}@replicas.test`;
  t.is((await call(r3, '/v1/signup', { email: dave, password: PASSWORD })).status, 200);
  const daveLogin = await call(r3, '/v1/login', { email: dave, password: PASSWORD });
  t.is(daveLogin.status, 200);
  const daveCookie = daveLogin.cookies.map((c) => c.split(';')[0]).join('; ');
  const accountStarted = performance.now();
  const perAccount = await Promise.all(Array.from({ length: 90 }, (_, i) => call(replicas[i % 3]!, '/v1/profile', undefined, { cookie: daveCookie, from: `127.0.4.${i + 1}` })));
  const accountSeconds = (performance.now() - accountStarted) / 1000;
  const accountAllowed = perAccount.filter((a) => a.status === 200).length;
  const accountRefused = perAccount.filter((a) => a.status === 429);
  t.is(accountAllowed + accountRefused.length, 90, `every request answered 200 or 429: ${[...new Set(perAccount.map((a) => a.status))].join(', ')}`);
  t.true(accountAllowed >= ACCOUNT_RPS + ACCOUNT_BURST - 1, `at least the account's steady rate and burst allowed (${accountAllowed})`);
  t.true(accountAllowed <= ACCOUNT_RPS * (Math.ceil(accountSeconds) + 1) + ACCOUNT_BURST, `no more than one account's limit (${accountAllowed} in ${accountSeconds.toFixed(2)} s)`);
  t.true(accountRefused.every((a) => a.body['reason'] === 'rate_limited' && Number(a.headers['retry-after']) >= 1), 'each refusal is rate_limited with Retry-After');

  // A pushed authorization request (RFC 9126) made to replica 1 is used at replica 2 (it lives in Redis).
  const added = await call(r1, '/v1/admin/add_client', { client_id: `par-${run}`, redirect_uris: ['https://par.example/cb'] }, { admin: true });
  t.is(added.status, 200, JSON.stringify(added.body));
  const basic = `Basic ${Buffer.from(`par-${run}:${String(added.body['client_secret'])}`).toString('base64')}`;
  const challenge = createHash('sha256').update('a-verifier-long-enough-for-pkce-0123456789abcdef').digest('base64url');
  const parForm = { response_type: 'code', redirect_uri: 'https://par.example/cb', scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256', state: 's1' };
  const pushed = await form(r1, '/oauth/par', parForm, basic, `127.0.5.${(++address % 250) + 1}`);
  t.is(pushed.status, 201, pushed.body);
  const requestUri = String((JSON.parse(pushed.body) as { request_uri: string }).request_uri);
  const authorize = await jsonRequest(`${r2.url}/authorize?client_id=par-${run}&request_uri=${encodeURIComponent(requestUri)}`, { headers: { cookie }, localAddress: `127.0.5.${(++address % 250) + 1}` });
  t.is(authorize.status, 302, JSON.stringify(authorize.body));
  t.regex(authorize.headers['location'] ?? '', /^https:\/\/par\.example\/cb\?.*code=/u, 'replica 2 knew the request pushed to replica 1');

  // A DPoP proof (RFC 9449) is single use across replicas: a proof granted at replica 1 is a replay at replica 3.
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const jwk = await exportJWK(publicKey);
  const proof = (nonce?: string) =>
    new SignJWT({ htm: 'POST', htu: `${publicUrl}/oauth/token`, jti: randomBytes(16).toString('hex'), ...(nonce === undefined ? {} : { nonce }) })
      .setProtectedHeader({ typ: 'dpop+jwt', alg: 'ES256', jwk })
      .setIssuedAt()
      .sign(privateKey);
  // A service account: a client allowed the client_credentials grant, so that a proof that passes is answered with a token.
  const bot = await call(r1, '/v1/admin/add_client', { client_id: `dpop-${run}`, kind: 'service_account' }, { admin: true });
  t.is(bot.status, 200, JSON.stringify(bot.body));
  const botBasic = `Basic ${Buffer.from(`dpop-${run}:${String(bot.body['client_secret'])}`).toString('base64')}`;
  const tokenWith = (r: Replica, dpop: string, from: string) => form(r, '/oauth/token', { grant_type: 'client_credentials' }, botBasic, from, { dpop });
  const dpopToken = (body: string): string => String((JSON.parse(body) as { token_type?: string }).token_type);
  // The token endpoint asks for a server nonce first (RFC 9449 §8); every replica issues and accepts the same ones.
  const nonceChallenge = await tokenWith(r1, await proof(), '127.0.6.1');
  t.is(nonceChallenge.status, 400, nonceChallenge.body);
  t.regex(nonceChallenge.body, /use_dpop_nonce/u);
  const nonce = String(nonceChallenge.headers['dpop-nonce'] ?? '');
  t.not(nonce, '', 'the challenge carries a DPoP-Nonce');
  const once = await proof(nonce);
  const first = await tokenWith(r1, once, '127.0.6.1');
  t.is(first.status, 200, `the first use of a proof with the nonce is granted: ${first.body}`);
  t.is(dpopToken(first.body), 'DPoP', 'a DPoP-bound token');
  const replayed = await tokenWith(r3, once, '127.0.6.2');
  t.is(replayed.status, 400, replayed.body);
  t.regex(replayed.body, /invalid_dpop_proof.*already used/u, 'the same proof at replica 3 is a replay');
  const fresh = await tokenWith(r3, await proof(nonce), '127.0.6.3');
  t.is(fresh.status, 200, `a fresh proof with the nonce is granted at replica 3: ${fresh.body}`);
  t.is(dpopToken(fresh.body), 'DPoP');

  // The reset-mail budget of one address counts across replicas.
  const bob = `bob-${run}@replicas.test`;
  t.is((await call(r2, '/v1/signup', { email: bob, password: PASSWORD })).status, 200);
  for (let i = 0; i < 8; i++) t.is((await call(replicas[i % 3]!, '/v1/forgot_password', { email: bob })).status, 200);
  const toBob = () => smtp.mails.map(decodeMail).filter((m) => m.includes(bob)).length;
  const until = Date.now() + 10_000;
  while (toBob() < 5 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  await new Promise((r) => setTimeout(r, 2000));
  t.is(toBob(), 5, '8 reset requests over three replicas: 5 mails, the one budget of the address');

  // Redis down.
  const downAt = performance.now();
  await bed.stopRedis();
  for (const r of replicas) {
    const ready = await call(r, '/readyz');
    t.is(ready.status, 503, `${r.url} is not ready without Redis`);
    t.false((ready.body['checks'] as Record<string, boolean>)['redis'], 'the failed check names Redis');
  }
  // The plain rate limit fails open: one client's 36 requests spread over the three are answered, each replica limiting alone.
  const burst = await Promise.all(Array.from({ length: 36 }, (_, i) => call(replicas[i % 3]!, '/v1/meta', undefined, { from: '127.0.3.1' })));
  const allowed = burst.filter((b) => b.status === 200).length;
  t.true(burst.every((b) => b.status === 200 || b.status === 429), `answered 200 or 429: ${[...new Set(burst.map((b) => b.status))].join(', ')}`);
  t.true(allowed >= RPS + BURST, `served without Redis (${allowed} of 36)`);
  t.true(allowed <= 3 * (2 * RPS + BURST), `each replica still limits on its own (${allowed} of 36)`);
  // Sessions and attempt budgets fail closed: the right password is refused, on every replica.
  for (const r of replicas) {
    const res = await call(r, '/v1/login', { email, password: PASSWORD });
    t.is(res.status, 503, `login without Redis on ${r.url}: ${JSON.stringify(res.body)}`);
    t.is(res.body['code'], 'unavailable');
    t.is((await call(r, '/v1/profile', undefined, { cookie })).status === 200, false, 'a session cannot be checked, so it is not accepted');
  }
  // A pushed authorization request cannot be stored, so it is refused.
  const pushedDown = await form(r2, '/oauth/par', parForm, basic, '127.0.5.251');
  t.true(pushedDown.status >= 500, `a push without Redis is refused (${pushedDown.status} ${pushedDown.body})`);
  // A DPoP proof (with a nonce the replica still holds) cannot be checked for replay, so it is refused.
  const dpopDown = await tokenWith(r1, await proof(nonce), '127.0.6.4');
  t.true(dpopDown.status >= 500, `a proof without Redis is refused (${dpopDown.status} ${dpopDown.body})`);
  // The reset request is answered as always, and sends nothing: its budget cannot be counted.
  const carol = `carol-${run}@replicas.test`;
  t.is((await call(r3, '/v1/signup', { email: carol, password: PASSWORD })).status === 200, false, 'a sign-up (which opens a session) is refused too');
  const before = smtp.mails.length;
  t.is((await call(r1, '/v1/forgot_password', { email: bob })).status, 200, 'the reset answer does not change');
  await new Promise((r) => setTimeout(r, 2000));
  t.is(smtp.mails.length, before, 'no reset mail without the budget');

  const downFor = performance.now() - downAt;
  // Every refusal came at once (a command is not queued while Redis is away).
  t.true(downFor < 15_000, `the checks without Redis took ${Math.round(downFor)} ms`);
  // Redis back on its port: every replica reconnects by itself.
  await bed.startRedis();
  for (const r of replicas) {
    const until2 = Date.now() + 15_000;
    while ((await call(r, '/readyz')).status !== 200) {
      t.true(Date.now() < until2, `${r.url} ready again`);
      await new Promise((res) => setTimeout(res, 100));
    }
    const res = await call(r, '/v1/login', { email, password: PASSWORD });
    t.is(res.status, 200, `login on ${r.url} with Redis back: ${JSON.stringify(res.body)}`);
  }
  t.log(`per-account limit ${ACCOUNT_RPS}/s + ${ACCOUNT_BURST}: ${accountAllowed} of 90 allowed over three replicas and 90 addresses in ${accountSeconds.toFixed(2)} s`);
  t.log(`model write followed by the other replicas in ${seen.map((s) => s.toFixed(1)).join(' and ')} ms (poll 30 s); without Redis ${allowed} of 36 rate-limited requests were served, and the checks without it took ${Math.round(downFor)} ms (2 s of them waiting for a mail that must not come)`);
});
