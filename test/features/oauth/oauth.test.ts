/**
 * The OAuth 2.0 endpoints end to end, on the real server over real HTTP:
 * `/authorize` (code + PKCE, implicit, form_post, login redirect, errors),
 * `/oauth/token` (authorization_code and refresh_token grants, client
 * authentication, RFC 6749 error codes), `/oauth/revoke` (RFC 7009), audit
 * rows, and the client library's getToken/revokeToken against them. Runs on
 * SQLite, and on PostgreSQL, MariaDB and Redis (as the session and code
 * store) when their URLs are set. Time moves through the server's injected clock.
 */
import test from 'ava';
import { LatchkeyClient } from '../../../client/index.ts';
import { mysqlUrl, postgresUrl, redisUrl, type SqlBackend } from '../../helpers/databases.ts';
import { TEST_ADMIN_SECRET, TEST_CLIENT_ID, TEST_CLIENT_SECRET } from '../../helpers/server.ts';
import { CALLBACK, ISSUER, authorize, codeFor, exchange, expectOAuthError, pkce, postForm, signIn, start, tokenValid, type Setup } from '../../helpers/oauth.ts';

interface Config {
  name: string;
  backend: SqlBackend;
  flags?: Record<string, string>;
}

const configs: Config[] = [{ name: 'sqlite', backend: 'sqlite' }];
if (postgresUrl()) configs.push({ name: 'postgres', backend: 'postgres' });
if (mysqlUrl()) configs.push({ name: 'mysql', backend: 'mysql' });
const redis = redisUrl();
if (redis) configs.push({ name: 'sqlite+redis', backend: 'sqlite', flags: { 'redis-url': redis } });

for (const config of configs) {
  // Serial: the tests of one server share its clock.
  let s: Setup;
  test.before(async () => {
    s = await start(config.backend, config.flags);
  });
  test.after.always(async () => {
    await s?.server.close();
  });
  test.afterEach.always(() => {
    s.clock.offsetMs = 0;
  });
  const name = (title: string): string => `${config.name}: ${title}`;

  test.serial(name('code + PKCE S256: from the login cookie to tokens that validate, with nonce, scope and no-store'), async (t) => {
    const { userId, cookie } = await signIn(s);
    const { verifier, challenge } = pkce();
    const res = await authorize(s, {
      response_type: 'code',
      client_id: TEST_CLIENT_ID,
      redirect_uri: CALLBACK,
      state: 'abc',
      scope: 'openid email offline_access',
      nonce: 'nonce-42',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    }, cookie);
    t.is(res.status, 302);
    const location = new URL(res.headers.get('location') ?? '');
    t.is(`${location.origin}${location.pathname}`, CALLBACK);
    t.is(location.searchParams.get('state'), 'abc');
    t.is(location.searchParams.get('iss'), ISSUER);
    const code = location.searchParams.get('code') ?? '';
    t.true(code.length >= 43);

    const r = await exchange(s, code, verifier);
    t.is(r.status, 200, JSON.stringify(r.body));
    t.is(r.headers.get('cache-control'), 'no-store');
    t.is(r.body.token_type, 'Bearer');
    t.is(r.body.scope, 'openid email offline_access');
    t.is(typeof r.body.expires_in, 'number');
    t.is(typeof r.body.refresh_token, 'string');
    const access = await s.server.call('validate_jwt_token', { token_type: 'access_token', token: String(r.body.access_token) }, { protocol: 'rest' });
    t.is(access.body?.is_valid, true);
    const claims = access.body?.claims as Record<string, unknown>;
    t.is(claims.sub, userId);
    t.is(claims.aud, TEST_CLIENT_ID);
    t.is(claims.iss, ISSUER);
    t.is(claims.nonce, 'nonce-42');
    const id = await s.server.call('validate_jwt_token', { token_type: 'id_token', token: String(r.body.id_token) }, { protocol: 'rest' });
    t.is((id.body?.claims as Record<string, unknown>).nonce, 'nonce-42');
    // The browser session is untouched by the grant: its cookie still works.
    const v = await s.server.call('validate_session', { cookie }, { protocol: 'rest' });
    t.is(v.body?.is_valid, true);
  });

  test.serial(name('a replayed code is refused (invalid_grant) and the tokens issued from it are revoked'), async (t) => {
    const { cookie } = await signIn(s);
    const { code, verifier } = await codeFor(s, cookie);
    const first = await exchange(s, code, verifier);
    t.is(first.status, 200);
    t.true(await tokenValid(s, String(first.body.access_token)));
    expectOAuthError(t, await exchange(s, code, verifier), 400, 'invalid_grant');
    t.false(await tokenValid(s, String(first.body.access_token)));
    expectOAuthError(t, await postForm(s, '/oauth/token', { grant_type: 'refresh_token', refresh_token: String(first.body.refresh_token), client_id: TEST_CLIENT_ID }), 400, 'invalid_grant');
  });

  test.serial(name('concurrent redemptions of one code: at most one gets tokens, and the replays revoke them'), async (t) => {
    const { cookie } = await signIn(s);
    const { code, verifier } = await codeFor(s, cookie);
    const answers = await Promise.all([0, 1, 2, 3].map(() => exchange(s, code, verifier)));
    const granted = answers.filter((a) => a.status === 200);
    t.true(granted.length <= 1);
    for (const a of answers.filter((x) => x.status !== 200)) t.is(a.body.error, 'invalid_grant');
    // Whether the winner finished before or after the replays, its tokens do not survive them.
    for (const a of granted) t.false(await tokenValid(s, String(a.body.access_token)));
  });

  test.serial(name('wrong verifier, expired code, wrong redirect_uri: invalid_grant, and the code is burnt'), async (t) => {
    const { cookie } = await signIn(s);
    const a = await codeFor(s, cookie);
    expectOAuthError(t, await exchange(s, a.code, pkce().verifier), 400, 'invalid_grant');
    expectOAuthError(t, await exchange(s, a.code, a.verifier), 400, 'invalid_grant');
    expectOAuthError(t, await exchange(s, (await codeFor(s, cookie)).code, 'short'), 400, 'invalid_grant');

    const b = await codeFor(s, cookie);
    s.clock.offsetMs = 61_000;
    expectOAuthError(t, await exchange(s, b.code, b.verifier), 400, 'invalid_grant');
    s.clock.offsetMs = 0;

    const c = await codeFor(s, cookie);
    expectOAuthError(t, await exchange(s, c.code, c.verifier, { redirect_uri: `${CALLBACK}/other` }), 400, 'invalid_grant');
    expectOAuthError(t, await exchange(s, 'never-issued', c.verifier), 400, 'invalid_grant');
  });

  test.serial(name('client authentication: wrong client id or secret is invalid_client (401); basic and post secrets work'), async (t) => {
    const { cookie } = await signIn(s);
    const a = await codeFor(s, cookie);
    const wrongId = await exchange(s, a.code, a.verifier, { client_id: 'someone-else' });
    expectOAuthError(t, wrongId, 401, 'invalid_client');
    t.truthy(wrongId.headers.get('www-authenticate'));
    const b = await codeFor(s, cookie);
    const basicWrong = `Basic ${Buffer.from(`${TEST_CLIENT_ID}:wrong`).toString('base64')}`;
    expectOAuthError(t, await postForm(s, '/oauth/token', { code: b.code, redirect_uri: CALLBACK, code_verifier: b.verifier }, { authorization: basicWrong }), 401, 'invalid_client');
    // A code issued without PKCE needs the client secret (basic or post).
    const noPkce = async (): Promise<string> => {
      const res = await authorize(s, { response_type: 'code', client_id: TEST_CLIENT_ID, redirect_uri: CALLBACK, scope: 'openid' }, cookie);
      return new URL(res.headers.get('location') ?? '').searchParams.get('code') ?? '';
    };
    expectOAuthError(t, await postForm(s, '/oauth/token', { code: await noPkce(), redirect_uri: CALLBACK, client_id: TEST_CLIENT_ID }), 401, 'invalid_client');
    const basic = `Basic ${Buffer.from(`${encodeURIComponent(TEST_CLIENT_ID)}:${encodeURIComponent(TEST_CLIENT_SECRET)}`).toString('base64')}`;
    const viaBasic = await postForm(s, '/oauth/token', { code: await noPkce(), redirect_uri: CALLBACK }, { authorization: basic });
    t.is(viaBasic.status, 200, JSON.stringify(viaBasic.body));
    t.is(viaBasic.body.scope, 'openid');
    t.is(viaBasic.body.refresh_token, undefined, 'no refresh token without offline_access');
    const viaPost = await postForm(s, '/oauth/token', { code: await noPkce(), redirect_uri: CALLBACK, client_id: TEST_CLIENT_ID, client_secret: TEST_CLIENT_SECRET });
    t.is(viaPost.status, 200, JSON.stringify(viaPost.body));
  });

  test.serial(name('grant types and malformed requests: unsupported_grant_type, invalid_request'), async (t) => {
    expectOAuthError(t, await postForm(s, '/oauth/token', { grant_type: 'password', client_id: TEST_CLIENT_ID }), 400, 'unsupported_grant_type');
    // The device grant is served, for registered clients that ask for it; the --client-id client is not one (RFC 6749 §5.2).
    expectOAuthError(t, await postForm(s, '/oauth/token', { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', client_id: TEST_CLIENT_ID }), 400, 'unauthorized_client');
    expectOAuthError(t, await postForm(s, '/oauth/token', { client_id: TEST_CLIENT_ID, redirect_uri: CALLBACK }), 400, 'invalid_request');
    expectOAuthError(t, await postForm(s, '/oauth/token', { grant_type: 'refresh_token', client_id: TEST_CLIENT_ID }), 400, 'invalid_request');
    const repeated = await fetch(`${s.server.httpUrl}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `client_id=${TEST_CLIENT_ID}&code=a&code=b&redirect_uri=x`,
    });
    t.is(repeated.status, 400);
    t.is(((await repeated.json()) as { error: string }).error, 'invalid_request');
    // CSRF-exempt: a foreign Origin reaches the endpoint (and its own client check), never a 403.
    expectOAuthError(t, await postForm(s, '/oauth/token', { grant_type: 'password', client_id: TEST_CLIENT_ID }, { origin: 'https://evil.example' }), 400, 'unsupported_grant_type');
    const foreign = await fetch(`${s.server.httpUrl}/authorize`, { method: 'POST', headers: { origin: 'https://evil.example', 'content-type': 'application/x-www-form-urlencoded' }, body: 'client_id=x', redirect: 'manual' });
    t.is(foreign.status, 400);
    t.is(((await foreign.json()) as { error: string }).error, 'invalid_client');
    const text = await fetch(`${s.server.httpUrl}/oauth/token`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hello' });
    t.is(text.status, 400);
    t.is(((await text.json()) as { error: string }).error, 'invalid_request');
  });

  test.serial(name('JSON bodies are accepted by /oauth/token'), async (t) => {
    const { cookie } = await signIn(s);
    const { code, verifier } = await codeFor(s, cookie);
    const res = await fetch(`${s.server.httpUrl}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ code, code_verifier: verifier, redirect_uri: CALLBACK, client_id: TEST_CLIENT_ID }),
    });
    t.is(res.status, 200);
    t.is(((await res.json()) as { token_type: string }).token_type, 'Bearer');
  });

  test.serial(name('refresh grant rotates; a replay after the grace period revokes the whole family'), async (t) => {
    const { cookie } = await signIn(s);
    const { code, verifier } = await codeFor(s, cookie);
    const first = await exchange(s, code, verifier);
    const refresh = (token: string) => postForm(s, '/oauth/token', { grant_type: 'refresh_token', refresh_token: token, client_id: TEST_CLIENT_ID });
    const second = await refresh(String(first.body.refresh_token));
    t.is(second.status, 200, JSON.stringify(second.body));
    t.not(second.body.refresh_token, first.body.refresh_token);
    t.is(second.body.scope, 'openid email profile offline_access');
    t.true(await tokenValid(s, String(second.body.access_token)));
    expectOAuthError(t, await postForm(s, '/oauth/token', { grant_type: 'refresh_token', refresh_token: String(second.body.refresh_token), client_id: TEST_CLIENT_ID, scope: 'openid phone' }), 400, 'invalid_scope');
    s.clock.offsetMs = 11_000;
    expectOAuthError(t, await refresh(String(first.body.refresh_token)), 400, 'invalid_grant');
    expectOAuthError(t, await refresh(String(second.body.refresh_token)), 400, 'invalid_grant');
    t.false(await tokenValid(s, String(second.body.access_token)));
  });

  test.serial(name('revoke (RFC 7009): 200 for any token; a revoked refresh token no longer refreshes'), async (t) => {
    const { cookie } = await signIn(s);
    const { code, verifier } = await codeFor(s, cookie);
    const tokens = await exchange(s, code, verifier);
    const revoked = await postForm(s, '/oauth/revoke', { token: String(tokens.body.refresh_token), token_type_hint: 'refresh_token', client_id: TEST_CLIENT_ID });
    t.is(revoked.status, 200);
    expectOAuthError(t, await postForm(s, '/oauth/token', { grant_type: 'refresh_token', refresh_token: String(tokens.body.refresh_token), client_id: TEST_CLIENT_ID }), 400, 'invalid_grant');
    t.false(await tokenValid(s, String(tokens.body.access_token)));
    t.is((await postForm(s, '/oauth/revoke', { token: 'not-a-token', client_id: TEST_CLIENT_ID })).status, 200);
    t.is((await postForm(s, '/oauth/revoke', { token: String(tokens.body.refresh_token), client_id: TEST_CLIENT_ID })).status, 200);
    expectOAuthError(t, await postForm(s, '/oauth/revoke', { token: 'x', client_id: 'someone-else' }), 401, 'invalid_client');
    expectOAuthError(t, await postForm(s, '/oauth/revoke', { client_id: TEST_CLIENT_ID }), 400, 'invalid_request');
    // An access token ends its grant too.
    const other = await codeFor(s, cookie);
    const more = await exchange(s, other.code, other.verifier);
    t.is((await postForm(s, '/oauth/revoke', { token: String(more.body.access_token), token_type_hint: 'access_token', client_id: TEST_CLIENT_ID })).status, 200);
    t.false(await tokenValid(s, String(more.body.access_token)));
  });

  test.serial(name('/authorize without a session: to the login page with the whole request; prompt=none answers login_required'), async (t) => {
    const params = { response_type: 'code', client_id: TEST_CLIENT_ID, redirect_uri: CALLBACK, state: 's1', scope: 'openid' };
    const res = await authorize(s, params);
    t.is(res.status, 302);
    const login = new URL(res.headers.get('location') ?? '');
    t.is(`${login.origin}${login.pathname}`, `${ISSUER}/app`);
    for (const [k, v] of Object.entries(params)) t.is(login.searchParams.get(k), v);
    const none = await authorize(s, { ...params, prompt: 'none' });
    const back = new URL(none.headers.get('location') ?? '');
    t.is(`${back.origin}${back.pathname}`, CALLBACK);
    t.is(back.searchParams.get('error'), 'login_required');
    t.is(back.searchParams.get('state'), 's1');
    const stale = await authorize(s, params, 'not-a-live-cookie');
    t.is(new URL(stale.headers.get('location') ?? '').pathname, '/app');
  });

  test.serial(name('/authorize errors: bad client or redirect_uri answer 400 here; later errors go back to the client'), async (t) => {
    const { cookie } = await signIn(s);
    const base = { response_type: 'code', client_id: TEST_CLIENT_ID, redirect_uri: CALLBACK, state: 's2' };
    const badClient = await authorize(s, { ...base, client_id: 'someone-else' }, cookie);
    t.is(badClient.status, 400);
    t.is(((await badClient.json()) as { error: string }).error, 'invalid_client');
    for (const redirect_uri of ['https://evil.example/cb', 'javascript:alert(1)', 'http://user:pw@127.0.0.1/cb']) {
      const r = await authorize(s, { ...base, redirect_uri }, cookie);
      t.is(r.status, 400, redirect_uri);
      t.is(r.headers.get('location'), null);
      t.is(((await r.json()) as { error: string }).error, 'invalid_request');
    }
    const errorOf = async (extra: Record<string, string>, where: 'search' | 'hash' = 'search'): Promise<string | null> => {
      const r = await authorize(s, { ...base, ...extra }, cookie);
      t.is(r.status, 302);
      const u = new URL(r.headers.get('location') ?? '');
      const p = where === 'search' ? u.searchParams : new URLSearchParams(u.hash.slice(1));
      t.is(p.get('state'), 's2');
      return p.get('error');
    };
    t.is(await errorOf({ response_type: 'code refresh_token' }), 'unsupported_response_type');
    t.is(await errorOf({ scope: 'openid admin' }), 'invalid_scope');
    t.is(await errorOf({ code_challenge: 'too-short' }), 'invalid_request');
    t.is(await errorOf({ code_challenge: pkce().challenge, code_challenge_method: 'S512' }), 'invalid_request');
    t.is(await errorOf({ response_type: 'token', response_mode: 'query' }, 'hash'), 'invalid_request');
    t.is(await errorOf({ response_type: 'id_token' }, 'hash'), 'invalid_request');
  });

  test.serial(name('implicit token and id_token in the fragment; form_post answers a self-submitting form; POST /authorize'), async (t) => {
    const { userId, cookie } = await signIn(s);
    const res = await authorize(s, { response_type: 'id_token token', client_id: TEST_CLIENT_ID, redirect_uri: CALLBACK, state: 's3', nonce: 'n3', scope: 'openid offline_access' }, cookie);
    t.is(res.status, 302);
    const u = new URL(res.headers.get('location') ?? '');
    t.is(u.search, '');
    const f = new URLSearchParams(u.hash.slice(1));
    t.is(f.get('token_type'), 'Bearer');
    t.is(f.get('scope'), 'openid', 'no offline_access in an implicit grant');
    t.is(f.get('refresh_token'), null);
    t.true(await tokenValid(s, f.get('access_token') ?? ''));
    const id = await s.server.call('validate_jwt_token', { token_type: 'id_token', token: f.get('id_token') ?? '' }, { protocol: 'rest' });
    t.is((id.body?.claims as Record<string, unknown>).sub, userId);
    t.is((id.body?.claims as Record<string, unknown>).nonce, 'n3');
    // The default response type (--default-authorize-response-type, token) answers in the fragment.
    const dflt = await authorize(s, { client_id: TEST_CLIENT_ID, redirect_uri: CALLBACK }, cookie);
    t.truthy(new URLSearchParams(new URL(dflt.headers.get('location') ?? '').hash.slice(1)).get('access_token'));

    const { challenge } = pkce();
    const post = await authorize(s, { response_type: 'code', response_mode: 'form_post', client_id: TEST_CLIENT_ID, redirect_uri: CALLBACK, state: 's"<4>', code_challenge: challenge, code_challenge_method: 'S256' }, cookie, 'POST');
    t.is(post.status, 200);
    t.regex(post.headers.get('content-type') ?? '', /text\/html/);
    const html = await post.text();
    t.true(html.includes(`action="${CALLBACK}"`));
    t.regex(html, /name="code" value="[A-Za-z0-9_-]{43}"/);
    t.true(html.includes('value="s&#34;&#60;4&#62;"'), 'values are escaped');
  });

  test.serial(name('audit rows: tokens issued, refreshed and revoked, a replayed refresh token, with the user as actor'), async (t) => {
    const { userId, cookie } = await signIn(s);
    const { code, verifier } = await codeFor(s, cookie);
    const first = await exchange(s, code, verifier);
    const refresh = (token: string) => postForm(s, '/oauth/token', { grant_type: 'refresh_token', refresh_token: token, client_id: TEST_CLIENT_ID });
    const second = await refresh(String(first.body.refresh_token));
    t.is(second.status, 200);
    s.clock.offsetMs = 11_000;
    t.is((await refresh(String(first.body.refresh_token))).status, 400);
    s.clock.offsetMs = 0;
    t.is((await postForm(s, '/oauth/revoke', { token: String(second.body.access_token), token_type_hint: 'access_token', client_id: TEST_CLIENT_ID })).status, 200);
    const logs = await s.server.call('audit_logs', { actor_id: userId, pagination: { limit: 100 } }, { protocol: 'rest', headers: { 'x-service-admin-secret': TEST_ADMIN_SECRET } });
    t.is(logs.error, undefined, JSON.stringify(logs.error));
    const rows = logs.body?.audit_logs as Array<Record<string, unknown>>;
    const actions = rows.map((r) => r.action);
    for (const action of ['token.issued', 'token.refreshed', 'token.refresh_token_reuse', 'token.revoked']) t.true(actions.includes(action), action);
    t.false(JSON.stringify(rows).includes(String(first.body.refresh_token)), 'no token in the audit log');
  });

  test.serial(name('the client library: getToken (code and refresh) and revokeToken work against the real server'), async (t) => {
    const { cookie } = await signIn(s);
    const { code, verifier } = await codeFor(s, cookie);
    const client = new LatchkeyClient({ client_id: TEST_CLIENT_ID, service_url: s.server.httpUrl, protocol: 'grpc', grpc_endpoint: s.server.grpcAddress });
    try {
      const tokens = await client.getToken({ code, code_verifier: verifier, redirect_uri: CALLBACK });
      t.is(tokens.token_type, 'Bearer');
      t.true(await tokenValid(s, tokens.access_token));
      const refreshed = await client.getToken({ grant_type: 'refresh_token', refresh_token: String(tokens.refresh_token) });
      t.is(typeof refreshed.refresh_token, 'string');
      await client.revokeToken({ refresh_token: String(refreshed.refresh_token) });
      const err = await t.throwsAsync(client.getToken({ grant_type: 'refresh_token', refresh_token: String(refreshed.refresh_token) }));
      t.is((err as { reason?: string }).reason, 'invalid_grant');
      t.is((err as { code?: string }).code, 'invalid_argument');
    } finally {
      await client.close();
    }
  });
}

