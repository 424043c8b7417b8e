/**
 * PKCE methods at `/authorize` and `/oauth/token` on the real server (ASVS v5
 * 10.4.6): S256 only by default, `code_challenge_method=plain` or a challenge
 * without a method refused with `invalid_request` sent back to the client
 * (RFC 6749 §4.1.2.1); `--enable-pkce-plain` re-enables plain and the RFC 7636
 * default-to-plain for legacy clients; discovery lists only what is accepted;
 * a plain code issued while plain was allowed is not redeemed by a server
 * where it is not (two processes sharing Redis, when configured).
 */
import test from 'ava';
import { redisUrl } from '../../helpers/databases.ts';
import { TEST_CLIENT_ID } from '../../helpers/server.ts';
import { CALLBACK, authorize, exchange, expectOAuthError, pkce, signIn, start, startSecond, tokenValid, type Setup } from '../../helpers/oauth.ts';

const redis = redisUrl();
const base = { response_type: 'code', client_id: TEST_CLIENT_ID, redirect_uri: CALLBACK, state: 'st-p', scope: 'openid' };

async function methodsOf(s: Setup): Promise<unknown> {
  return ((await (await fetch(`${s.server.httpUrl}/.well-known/openid-configuration`)).json()) as Record<string, unknown>)['code_challenge_methods_supported'];
}

/** The client-side redirect of `/authorize`: its query parameters (code or error, state). */
async function redirectOf(s: Setup, params: Record<string, string>, cookie: string): Promise<URLSearchParams> {
  const r = await authorize(s, { ...base, ...params }, cookie);
  if (r.status !== 302) throw new Error(`authorize answered ${r.status}`);
  const location = new URL(r.headers.get('location') ?? '');
  if (`${location.origin}${location.pathname}` !== CALLBACK) throw new Error(`redirected to ${location.href}`);
  return location.searchParams;
}

test('by default only S256: plain and a challenge without a method are refused back to the client; discovery lists S256 only', async (t) => {
  const s = await start('sqlite');
  try {
    t.deepEqual(await methodsOf(s), ['S256']);
    const { cookie } = await signIn(s);
    const { verifier, challenge } = pkce();

    const plain = await redirectOf(s, { code_challenge: challenge, code_challenge_method: 'plain' }, cookie);
    t.is(plain.get('error'), 'invalid_request');
    t.is(plain.get('error_description'), 'code_challenge_method plain is not allowed; use S256');
    t.is(plain.get('state'), 'st-p');
    t.is(plain.get('code'), null);

    const absent = await redirectOf(s, { code_challenge: challenge }, cookie);
    t.is(absent.get('error'), 'invalid_request');
    t.is(absent.get('error_description'), 'code_challenge_method is required and must be S256');
    t.is(absent.get('code'), null);

    const s256 = await redirectOf(s, { code_challenge: challenge, code_challenge_method: 'S256' }, cookie);
    const tokens = await exchange(s, s256.get('code') ?? '', verifier);
    t.is(tokens.status, 200, JSON.stringify(tokens.body));
  } finally {
    await s.server.close();
  }
});

test('--enable-pkce-plain: plain, and a challenge without a method (RFC 7636 §4.3), are accepted and redeemed with the verifier; discovery lists both', async (t) => {
  const s = await start('sqlite', { 'enable-pkce-plain': true });
  try {
    t.deepEqual(await methodsOf(s), ['S256', 'plain']);
    const { cookie } = await signIn(s);
    for (const method of [{ code_challenge_method: 'plain' }, {}]) {
      const { verifier } = pkce();
      const answer = await redirectOf(s, { code_challenge: verifier, ...method }, cookie);
      t.is(answer.get('error'), null, JSON.stringify(method));
      const code = answer.get('code') ?? '';
      expectOAuthError(t, await exchange(s, code, pkce().verifier), 400, 'invalid_grant');
      const again = await redirectOf(s, { code_challenge: verifier, ...method }, cookie);
      const tokens = await exchange(s, again.get('code') ?? '', verifier);
      t.is(tokens.status, 200, JSON.stringify(tokens.body));
      t.true(await tokenValid(s, String(tokens.body['access_token'])));
    }
    t.is((await redirectOf(s, { code_challenge: pkce().challenge, code_challenge_method: 'S512' }, cookie)).get('error'), 'invalid_request');
  } finally {
    await s.server.close();
  }
});

if (redis) {
  test('a plain code issued where plain is allowed is not redeemed by a process sharing Redis where it is not', async (t) => {
    const a = await start('sqlite', { 'redis-url': redis, 'enable-pkce-plain': true });
    const second = await startSecond(a, redis);
    try {
      const b = second.b;
      const { cookie } = await signIn(a);
      const { verifier } = pkce();
      const code = (await redirectOf(a, { code_challenge: verifier, code_challenge_method: 'plain' }, cookie)).get('code') ?? '';
      t.not(code, '');
      expectOAuthError(t, await exchange(b, code, verifier), 400, 'invalid_grant');
    } finally {
      await second.close();
      await a.server.close();
    }
  });
}
