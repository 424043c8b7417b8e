/**
 * Control characters in OAuth parameters, over the real server on SQLite,
 * PostgreSQL and MySQL/MariaDB: `/authorize` refuses a tab, CR, LF (or any
 * other C0/C1 control, or U+2028/U+2029) in any parameter with 400
 * `invalid_request` and no redirect, where a URL parser would have dropped
 * it and sent the code to another URI than the one requested; `/oauth/token`
 * and `/oauth/revoke` refuse them the same way.
 */
import test from 'ava';
import { mysqlUrl, postgresUrl, type SqlBackend } from '../helpers/databases.ts';
import { TEST_CLIENT_ID } from '../helpers/server.ts';
import { CALLBACK, authorize, codeFor, exchange, expectOAuthError, pkce, postForm, signIn, start, type Setup } from '../helpers/oauth.ts';

const backends: SqlBackend[] = ['sqlite'];
if (postgresUrl()) backends.push('postgres');
if (mysqlUrl()) backends.push('mysql');

/** Splices `c` into the middle of `s`. */
const spliced = (s: string, c: string): string => `${s.slice(0, Math.floor(s.length / 2))}${c}${s.slice(Math.floor(s.length / 2))}`;

const CONTROLS = ['\t', '\r', '\n', '\u0000', '\u001b', '\u007f', '\u0085', '\u2028', '\u2029'];

async function asText(res: Response): Promise<{ status: number; body: Record<string, unknown>; location: string | null }> {
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {}, location: res.headers.get('location') };
}

for (const backend of backends) {
  let s: Setup;
  test.before(async () => {
    s = await start(backend);
  });
  test.after.always(async () => {
    await s?.server.close();
  });

  test.serial(`${backend}: /authorize refuses a redirect_uri with a tab, CR or LF (or any control character) with 400 invalid_request and no redirect`, async (t) => {
    const { cookie } = await signIn(s);
    // The clean request is answered with a code, so the refusals below are the control characters' doing.
    t.truthy((await codeFor(s, cookie)).code);
    for (const c of CONTROLS) {
      for (const method of ['GET', 'POST'] as const) {
        const { challenge } = pkce();
        const r = await asText(
          await authorize(s, { response_type: 'code', client_id: TEST_CLIENT_ID, redirect_uri: spliced(CALLBACK, c), state: 'st', code_challenge: challenge, code_challenge_method: 'S256' }, cookie, method),
        );
        t.is(r.location, null, `${method} U+${c.codePointAt(0)!.toString(16)}: no redirect`);
        expectOAuthError(t, r, 400, 'invalid_request');
      }
    }
  });

  test.serial(`${backend}: /authorize refuses a control character in any other parameter, before anything is redirected`, async (t) => {
    const { cookie } = await signIn(s);
    const { challenge } = pkce();
    const base: Record<string, string> = {
      response_type: 'code',
      client_id: TEST_CLIENT_ID,
      redirect_uri: CALLBACK,
      state: 'state-1',
      scope: 'openid email',
      nonce: 'nonce-1',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      login_hint: 'kate@example.com',
    };
    for (const key of Object.keys(base)) {
      for (const c of ['\t', '\n', '\r']) {
        const r = await asText(await authorize(s, { ...base, [key]: spliced(base[key]!, c) }, cookie));
        t.is(r.location, null, `${key}: no redirect`);
        expectOAuthError(t, r, 400, 'invalid_request');
      }
    }
    // In a parameter's name too.
    const named = await asText(await authorize(s, { ...base, 'x\tparam': 'v' }, cookie));
    t.is(named.location, null);
    expectOAuthError(t, named, 400, 'invalid_request');
  });

  test.serial(`${backend}: /oauth/token and /oauth/revoke refuse control characters in their parameters with invalid_request`, async (t) => {
    const { cookie } = await signIn(s);
    const { code, verifier } = await codeFor(s, cookie);
    for (const c of ['\t', '\r', '\n', '\u0000']) {
      // The redirect_uri of the request, with a character a URL parser would drop.
      expectOAuthError(t, await exchange(s, code, verifier, { redirect_uri: spliced(CALLBACK, c) }), 400, 'invalid_request');
      expectOAuthError(t, await exchange(s, code, verifier, { code_verifier: spliced(verifier, c) }), 400, 'invalid_request');
      expectOAuthError(t, await exchange(s, spliced(code, c), verifier), 400, 'invalid_request');
      expectOAuthError(t, await postForm(s, '/oauth/revoke', { token: spliced(code, c), client_id: TEST_CLIENT_ID }), 400, 'invalid_request');
      expectOAuthError(t, await postForm(s, '/oauth/token', { grant_type: 'refresh_token', refresh_token: spliced('abc', c), client_id: TEST_CLIENT_ID }), 400, 'invalid_request');
    }
    // The code was not spent by the refused requests: the clean exchange still works.
    const ok = await exchange(s, code, verifier);
    t.is(ok.status, 200, JSON.stringify(ok.body));
  });
}
