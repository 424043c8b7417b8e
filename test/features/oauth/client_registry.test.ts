/**
 * The client registry and service accounts, on every main SQL database: the
 * six admin operations on GraphQL, REST and gRPC; client_credentials through
 * `openid-client` with `client_secret_basic`, `client_secret_post` and
 * `private_key_jwt` (a replayed assertion refused); secrets shown once and
 * rotated with an overlap; the service account as a principal that holds
 * roles and FGA tuples, so `check_permissions` answers for it; failures
 * rate-limited per client; every grant audited; the `--client-id` client
 * first and unchanged.
 */
import test from 'ava';
import * as client from 'openid-client';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { sqlBackends } from '../../helpers/databases.ts';
import { TEST_ADMIN_SECRET, TEST_CLIENT_ID, TEST_CLIENT_SECRET, startTestServerOnPort, type TestServer } from '../../helpers/server.ts';

const ADMIN = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
const DSL = 'model\n  schema 1.1\ntype user\ntype service_account\ntype doc\n  relations\n    define viewer: [user, service_account]\n';

async function provider(backend: 'sqlite' | 'postgres' | 'mysql'): Promise<{ server: TestServer; issuer: string }> {
  const server = await startTestServerOnPort((port) => ({ url: `http://127.0.0.1:${port}`, roles: 'user,admin,billing', 'enable-email-verification': false }), { backend });
  return { server, issuer: server.httpUrl };
}

async function ok(server: TestServer, op: string, input: Record<string, unknown>, protocol: 'rest' | 'graphql' | 'grpc' = 'rest', headers: Record<string, string> = ADMIN): Promise<Record<string, unknown>> {
  const r = await server.call(op, input, { protocol, headers });
  if (r.error !== undefined || r.body === undefined) throw new Error(`${op} over ${protocol}: ${JSON.stringify(r.error)}`);
  return r.body;
}

async function tokenCall(issuer: string, form: Record<string, string>, basic?: [string, string]): Promise<{ status: number; body: Record<string, unknown> }> {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (basic) headers['authorization'] = `Basic ${Buffer.from(`${encodeURIComponent(basic[0])}:${encodeURIComponent(basic[1])}`).toString('base64')}`;
  const res = await fetch(`${issuer}/oauth/token`, { method: 'POST', headers, body: new URLSearchParams(form) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const discover = (issuer: string, id: string, auth: client.ClientAuth, metadata: Partial<client.ClientMetadata> = {}): Promise<client.Configuration> =>
  client.discovery(new URL(issuer), id, metadata, auth, { execute: [client.allowInsecureRequests] });

for (const backend of sqlBackends()) {
  test.serial(`${backend}: the registry on three protocols; client_credentials with a secret (basic, post) through openid-client; rotation with an overlap; the service account checks permissions`, async (t) => {
    const { server, issuer } = await provider(backend);
    t.teardown(() => server.close());

    // The --client-id client is the first client, and the registry refuses to change it.
    const listed = await ok(server, 'clients', {}, 'graphql');
    const first = (listed['clients'] as Array<Record<string, unknown>>)[0];
    t.is(first?.['client_id'], TEST_CLIENT_ID);
    t.is(first?.['configured_by_flags'], true);
    t.is((await server.call('delete_client', { client_id: TEST_CLIENT_ID }, { protocol: 'rest', headers: ADMIN })).error?.reason, 'client_configured_by_flags');
    t.is((await server.call('add_client', { client_id: 'x' }, { protocol: 'rest' })).error?.code, 'unauthenticated', 'a super-admin operation');

    // add over REST: the secret is answered once; get over gRPC never shows it.
    const added = await ok(server, 'add_client', { client_id: 'billing-bot', kind: 'service_account', client_name: 'Billing', roles: ['billing'], scopes: ['invoices:read', 'invoices:write'] }, 'rest');
    const secret = added['client_secret'] as string;
    t.regex(secret, /^[A-Za-z0-9_-]{43}$/);
    const got = await ok(server, 'client', { client_id: 'billing-bot' }, 'grpc');
    t.is(got['subject'], 'service_account:billing-bot');
    t.is(got['token_endpoint_auth_method'], 'client_secret_basic');
    t.false(JSON.stringify(got).includes(secret));
    t.is((await server.call('add_client', { client_id: 'billing-bot', kind: 'service_account' }, { protocol: 'graphql', headers: ADMIN })).error?.code, 'already_exists');
    const badRole = await server.call('add_client', { client_id: 'x-bot', kind: 'service_account', roles: ['root'] }, { protocol: 'rest', headers: ADMIN });
    t.is(badRole.error?.reason, 'invalid_roles');
    const noSecretForSa = await server.call('add_client', { client_id: 'y-bot', kind: 'service_account', token_endpoint_auth_method: 'none' }, { protocol: 'rest', headers: ADMIN });
    t.is(noSecretForSa.error?.code, 'invalid_argument');

    // client_credentials through openid-client with client_secret_basic.
    const config = await discover(issuer, 'billing-bot', client.ClientSecretBasic(secret));
    const tokens = await client.clientCredentialsGrant(config, { scope: 'invoices:read' });
    t.is(tokens.token_type, 'bearer');
    t.is(tokens.scope, 'invoices:read');
    const claims = JSON.parse(Buffer.from(tokens.access_token.split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>;
    t.is(claims['sub'], 'billing-bot');
    t.is(claims['fga_subject'], 'service_account:billing-bot');
    t.deepEqual(claims['roles'], ['billing']);
    const wider = await tokenCall(issuer, { grant_type: 'client_credentials', scope: 'invoices:delete' }, ['billing-bot', secret]);
    t.is(wider.body['error'], 'invalid_scope');
    const post = await tokenCall(issuer, { grant_type: 'client_credentials', client_id: 'billing-bot', client_secret: secret });
    t.is(post.status, 401, 'a client registered for client_secret_basic may not send the secret in the body');
    t.is(post.body['error'], 'invalid_client');
    const code = await tokenCall(issuer, { grant_type: 'authorization_code', code: 'x', redirect_uri: 'https://a.example/cb' }, ['billing-bot', secret]);
    t.is(code.body['error'], 'unauthorized_client');

    // Introspection by the service account itself shows the subject.
    const intro = await client.tokenIntrospection(config, tokens.access_token);
    t.true(intro.active);
    t.is(intro['fga_subject'], 'service_account:billing-bot');

    // The service account is a principal: its FGA tuples answer check_permissions called with its token, on every protocol.
    await ok(server, 'fga_write_model', { dsl: DSL });
    await ok(server, 'fga_write_tuples', { tuples: [{ user: 'service_account:billing-bot', relation: 'viewer', object: 'doc:ledger' }] });
    for (const protocol of ['graphql', 'rest', 'grpc'] as const) {
      const check = await ok(server, 'check_permissions', { checks: [{ relation: 'viewer', object: 'doc:ledger' }, { relation: 'viewer', object: 'doc:other' }] }, protocol, { authorization: `Bearer ${tokens.access_token}` });
      t.deepEqual((check['results'] as Array<{ allowed: boolean }>).map((r) => r.allowed), [true, false], protocol);
      const profile = await server.call('profile', {}, { protocol, headers: { authorization: `Bearer ${tokens.access_token}` } });
      t.is(profile.error?.code, 'unauthenticated', `${protocol}: a service account has no user profile`);
    }
    const other = await server.call('check_permissions', { user: 'user:someone', checks: [{ relation: 'viewer', object: 'doc:ledger' }] }, { protocol: 'rest', headers: { authorization: `Bearer ${tokens.access_token}` } });
    t.is(other.error?.reason, 'subject_not_permitted');

    // Rotation: the new secret works at once, the old one during the overlap only.
    const rotated = await ok(server, 'rotate_client_secret', { client_id: 'billing-bot', overlap_seconds: 3600 }, 'graphql');
    const next = rotated['client_secret'] as string;
    t.not(next, secret);
    t.is((await tokenCall(issuer, { grant_type: 'client_credentials' }, ['billing-bot', next])).status, 200);
    t.is((await tokenCall(issuer, { grant_type: 'client_credentials' }, ['billing-bot', secret])).status, 200, 'the previous secret during the overlap');
    const third = await ok(server, 'rotate_client_secret', { client_id: 'billing-bot', overlap_seconds: 0 }, 'grpc');
    t.is((await tokenCall(issuer, { grant_type: 'client_credentials' }, ['billing-bot', next])).status, 401, 'no overlap: the previous secret stops at once');

    // update over gRPC: switch to client_secret_post; disabled clients are refused and their tokens stop.
    const updated = await ok(server, 'update_client', { client_id: 'billing-bot', token_endpoint_auth_method: 'client_secret_post', client_name: 'Billing v2' }, 'grpc');
    t.is(updated['token_endpoint_auth_method'], 'client_secret_post');
    const postConfig = await discover(issuer, 'billing-bot', client.ClientSecretPost(third['client_secret'] as string));
    t.truthy((await client.clientCredentialsGrant(postConfig)).access_token, 'client_secret_post through openid-client');
    const method = await server.call('update_client', { client_id: 'billing-bot', token_endpoint_auth_method: 'private_key_jwt' }, { protocol: 'rest', headers: ADMIN });
    t.is(method.error?.code, 'invalid_argument');
    await ok(server, 'update_client', { client_id: 'billing-bot', disabled: true }, 'rest');
    const afterDisable = await server.call('check_permissions', { checks: [{ relation: 'viewer', object: 'doc:ledger' }] }, { protocol: 'rest', headers: { authorization: `Bearer ${tokens.access_token}` } });
    t.is(afterDisable.error?.code, 'unauthenticated', 'a disabled service account\'s token is refused');

    // Audit: every grant is recorded with its client.
    const logs = await ok(server, 'audit_logs', { pagination: { limit: 100 } }, 'rest');
    const issued = (logs['audit_logs'] as Array<{ action: string; metadata: Record<string, unknown> | string | null }>).filter((l) => l.action === 'token.issued');
    t.true(issued.some((l) => JSON.stringify(l.metadata).includes('billing-bot')));

    // delete over GraphQL.
    t.deepEqual(await ok(server, 'delete_client', { client_id: 'billing-bot' }, 'graphql'), { message: 'client deleted' });
    t.is((await server.call('client', { client_id: 'billing-bot' }, { protocol: 'rest', headers: ADMIN })).error?.reason, 'client_not_found');
  });

  test.serial(`${backend}: private_key_jwt through openid-client; a replayed or foreign-signed assertion is refused; failures are rate-limited per client`, async (t) => {
    const { server, issuer } = await provider(backend);
    t.teardown(() => server.close());
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    const added = await ok(server, 'add_client', { client_id: 'agent-7', kind: 'service_account', token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [jwk] } }, 'graphql');
    t.is(added['client_secret'] ?? null, null, 'no secret for a key-authenticated client');
    const withPrivate = await server.call('add_client', { client_id: 'leaky', kind: 'service_account', jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: 'p' }] } }, { protocol: 'rest', headers: ADMIN });
    t.is(withPrivate.error?.code, 'invalid_argument', 'a private key is refused in jwks');

    const config = await discover(issuer, 'agent-7', client.PrivateKeyJwt({ key: privateKey, kid: 'k1' }));
    const tokens = await client.clientCredentialsGrant(config);
    t.truthy(tokens.access_token);

    const now = Math.floor(Date.now() / 1000);
    const assertion = await new SignJWT({ jti: 'fixed-jti' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer('agent-7')
      .setSubject('agent-7')
      .setAudience(`${issuer}/oauth/token`)
      .setIssuedAt(now)
      .setExpirationTime(now + 60)
      .sign(privateKey);
    const form = { grant_type: 'client_credentials', client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: assertion };
    t.is((await tokenCall(issuer, form)).status, 200);
    const replay = await tokenCall(issuer, form);
    t.is(replay.status, 401);
    t.is(replay.body['error'], 'invalid_client', 'a replayed assertion (same jti) is refused');

    const other = await generateKeyPair('ES256');
    const forged = await new SignJWT({ jti: 'other-jti' }).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setIssuer('agent-7').setSubject('agent-7').setAudience(issuer).setIssuedAt(now).setExpirationTime(now + 60).sign(other.privateKey);
    t.is((await tokenCall(issuer, { ...form, client_assertion: forged })).body['error'], 'invalid_client');
    const longLived = await new SignJWT({ jti: 'long' }).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setIssuer('agent-7').setSubject('agent-7').setAudience(issuer).setIssuedAt(now).setExpirationTime(now + 3600).sign(privateKey);
    t.is((await tokenCall(issuer, { ...form, client_assertion: longLived })).body['error'], 'invalid_client', 'an assertion living more than ten minutes is refused');

    // Per-client failure budget: past it, even the right credential waits for the window to end.
    const sa = await ok(server, 'add_client', { client_id: 'guessed', kind: 'service_account' }, 'rest');
    for (let i = 0; i < 20; i++) await tokenCall(issuer, { grant_type: 'client_credentials' }, ['guessed', `wrong-${i}`]);
    const limited = await tokenCall(issuer, { grant_type: 'client_credentials' }, ['guessed', sa['client_secret'] as string]);
    t.is(limited.status, 429);
    t.is(limited.body['error'], 'invalid_request');
    t.is((await tokenCall(issuer, { grant_type: 'client_credentials' }, [TEST_CLIENT_ID, TEST_CLIENT_SECRET])).status, 200, 'other clients are not affected');
  });
}

test('the --client-id client is unchanged: its client_credentials token is about itself and its secret works in either place', async (t) => {
  const { server, issuer } = await provider('sqlite');
  t.teardown(() => server.close());
  const basic = await tokenCall(issuer, { grant_type: 'client_credentials' }, [TEST_CLIENT_ID, TEST_CLIENT_SECRET]);
  t.is(basic.status, 200);
  const post = await tokenCall(issuer, { grant_type: 'client_credentials', client_id: TEST_CLIENT_ID, client_secret: TEST_CLIENT_SECRET });
  t.is(post.status, 200);
  const claims = JSON.parse(Buffer.from(String(post.body['access_token']).split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>;
  t.is(claims['sub'], TEST_CLIENT_ID);
  t.is(claims['fga_subject'], undefined);
});

test('discovery lists exactly what is supported; /.well-known/oauth-protected-resource (RFC 9728) names this server as its authorization server', async (t) => {
  const { server, issuer } = await provider('sqlite');
  t.teardown(() => server.close());
  for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
    const doc = (await (await fetch(`${issuer}${path}`)).json()) as Record<string, unknown>;
    t.deepEqual(doc['token_endpoint_auth_methods_supported'], ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none']);
    t.true((doc['token_endpoint_auth_signing_alg_values_supported'] as string[]).includes('ES256'));
    t.false((doc['token_endpoint_auth_signing_alg_values_supported'] as string[]).some((a) => a.startsWith('HS')), 'no shared-secret assertions');
    t.true((doc['grant_types_supported'] as string[]).includes('urn:ietf:params:oauth:grant-type:token-exchange'));
    t.deepEqual(doc['dpop_signing_alg_values_supported'], ['RS256', 'PS256', 'ES256', 'ES384', 'ES512', 'EdDSA']);
    t.is(doc['pushed_authorization_request_endpoint'], `${issuer}/oauth/par`);
    t.is(doc['device_authorization_endpoint'], `${issuer}/oauth/device_authorization`);
    t.is(doc['backchannel_logout_supported'], true);
    t.is(doc['backchannel_logout_session_supported'], true);
    for (const absent of ['registration_endpoint']) {
      t.false(absent in doc, `${path}: ${absent} is not advertised (not supported)`);
    }
  }
  const res = await fetch(`${issuer}/.well-known/oauth-protected-resource`);
  t.is(res.status, 200);
  const meta = (await res.json()) as Record<string, unknown>;
  t.is(meta['resource'], issuer);
  t.deepEqual(meta['authorization_servers'], [issuer]);
  t.deepEqual(meta['bearer_methods_supported'], ['header']);
  t.is(meta['jwks_uri'], `${issuer}/.well-known/jwks.json`);
});

test('a registered interactive client: the code flow with PKCE through openid-client, exact redirect URIs, a public native client on any loopback port, scopes within the registration', async (t) => {
  const { server, issuer } = await provider('sqlite');
  t.teardown(() => server.close());
  const signup = await server.call('signup', { email: 'rp-user@example.com', password: 'Correct-Horse-7-Battery', given_name: 'Ada' }, { protocol: 'rest' });
  const set = signup.setCookies.find((c) => c.startsWith('cookie_session=')) ?? '';
  const cookie = set.slice('cookie_session='.length, set.indexOf(';'));
  const userId = (signup.body?.['user'] as { id: string }).id;
  const browse = async (url: URL): Promise<Response> => fetch(url, { headers: { cookie: `cookie_session=${cookie}` }, redirect: 'manual' });

  // A confidential web application.
  const web = await ok(server, 'add_client', { client_id: 'web-app', redirect_uris: ['https://app.example/cb'], scopes: ['openid', 'email', 'offline_access'] }, 'rest');
  const config = await discover(issuer, 'web-app', client.ClientSecretBasic(web['client_secret'] as string));
  const verifier = client.randomPKCECodeVerifier();
  const params = { redirect_uri: 'https://app.example/cb', scope: 'openid email offline_access', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state: 's1' };
  const res = await browse(client.buildAuthorizationUrl(config, params));
  t.is(res.status, 302);
  const tokens = await client.authorizationCodeGrant(config, new URL(res.headers.get('location') ?? ''), { pkceCodeVerifier: verifier, expectedState: 's1' });
  t.is(tokens.claims()?.sub, userId);
  t.is(tokens.claims()?.azp, 'web-app');
  const intro = await client.tokenIntrospection(config, tokens.access_token);
  t.is(intro.client_id, 'web-app');
  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
  t.truthy(refreshed.access_token);
  // Another client cannot redeem web-app's refresh token.
  const other = await ok(server, 'add_client', { client_id: 'web-two', redirect_uris: ['https://two.example/cb'] }, 'rest');
  const stolen = await tokenCall(issuer, { grant_type: 'refresh_token', refresh_token: refreshed.refresh_token! }, ['web-two', other['client_secret'] as string]);
  t.is(stolen.body['error'], 'invalid_grant');

  // Exact redirect URIs: another path, a query or a prefix is refused before anything reaches the client.
  for (const uri of ['https://app.example/cb/', 'https://app.example/cb?x=1', 'https://app.example/c', 'https://evil.example/cb']) {
    const r = await browse(client.buildAuthorizationUrl(config, { ...params, redirect_uri: uri }));
    t.is(r.status, 400, uri);
  }
  // Registered clients use the code flow with S256 PKCE, within their scopes.
  const implicit = await browse(client.buildAuthorizationUrl(config, { ...params, response_type: 'token' }));
  t.regex(implicit.headers.get('location') ?? '', /error=unsupported_response_type/);
  const { code_challenge: _c, code_challenge_method: _m, ...noPkce } = params;
  t.regex((await browse(client.buildAuthorizationUrl(config, noPkce))).headers.get('location') ?? '', /error=invalid_request/);
  t.regex((await browse(client.buildAuthorizationUrl(config, { ...params, scope: 'openid phone' }))).headers.get('location') ?? '', /error=invalid_scope/);

  // A public native client: no secret, PKCE, any port on the loopback address (RFC 8252 §7.3).
  const native = await ok(server, 'add_client', { client_id: 'cli-tool', application_type: 'native', redirect_uris: ['http://127.0.0.1/callback'] }, 'grpc');
  t.is(native['client_secret'] ?? null, null);
  const cli = await discover(issuer, 'cli-tool', client.None());
  const v2 = client.randomPKCECodeVerifier();
  const loopback = 'http://127.0.0.1:49152/callback';
  const r2 = await browse(client.buildAuthorizationUrl(cli, { redirect_uri: loopback, scope: 'openid', code_challenge: await client.calculatePKCECodeChallenge(v2), code_challenge_method: 'S256' }));
  t.is(r2.status, 302);
  const cliTokens = await client.authorizationCodeGrant(cli, new URL(r2.headers.get('location') ?? ''), { pkceCodeVerifier: v2 });
  t.is(cliTokens.claims()?.sub, userId);
  const wrongPath = await browse(client.buildAuthorizationUrl(cli, { redirect_uri: 'http://127.0.0.1:49152/other', scope: 'openid', code_challenge: await client.calculatePKCECodeChallenge(v2), code_challenge_method: 'S256' }));
  t.is(wrongPath.status, 400);
  const badWeb = await server.call('add_client', { client_id: 'spa-bad', application_type: 'spa', token_endpoint_auth_method: 'client_secret_basic', redirect_uris: ['https://spa.example/cb'] }, { protocol: 'rest', headers: ADMIN });
  t.is(badWeb.error?.code, 'invalid_argument', 'a single-page application cannot keep a secret');
  const httpWeb = await server.call('add_client', { client_id: 'plain-http', redirect_uris: ['http://app.example/cb'] }, { protocol: 'rest', headers: ADMIN });
  t.is(httpWeb.error?.reason, 'invalid_redirect_uri');
});

test('PAR (RFC 9126) through openid-client: push, then authorize with the request_uri; a client that requires PAR is refused without it', async (t) => {
  const { server, issuer } = await provider('sqlite');
  t.teardown(() => server.close());
  const signup = await server.call('signup', { email: 'par-user@example.com', password: 'Correct-Horse-7-Battery' }, { protocol: 'rest' });
  const set = signup.setCookies.find((c) => c.startsWith('cookie_session=')) ?? '';
  const cookie = set.slice('cookie_session='.length, set.indexOf(';'));
  const browse = (url: URL): Promise<Response> => fetch(url, { headers: { cookie: `cookie_session=${cookie}` }, redirect: 'manual' });
  const added = await ok(server, 'add_client', { client_id: 'par-app', redirect_uris: ['https://par.example/cb'], require_pushed_authorization_requests: true }, 'rest');
  t.is((added['client'] as Record<string, unknown>)['require_pushed_authorization_requests'], true);
  const config = await discover(issuer, 'par-app', client.ClientSecretBasic(added['client_secret'] as string));
  const verifier = client.randomPKCECodeVerifier();
  const params = { redirect_uri: 'https://par.example/cb', scope: 'openid', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state: 'p1' };

  // Without PAR: refused before anything reaches the client.
  t.is((await browse(client.buildAuthorizationUrl(config, params))).status, 400);
  // With PAR: only client_id and request_uri travel in the URL.
  const url = await client.buildAuthorizationUrlWithPAR(config, params);
  t.deepEqual([...url.searchParams.keys()].sort(), ['client_id', 'request_uri']);
  const res = await browse(url);
  t.is(res.status, 302);
  const tokens = await client.authorizationCodeGrant(config, new URL(res.headers.get('location') ?? ''), { pkceCodeVerifier: verifier, expectedState: 'p1' });
  t.truthy(tokens.access_token);

  // Another client cannot use the request_uri; a made-up one is refused; the push itself needs the client's credential.
  const other = await ok(server, 'add_client', { client_id: 'par-other', redirect_uris: ['https://other.example/cb'] }, 'rest');
  t.truthy(other['client_secret']);
  const stolen = new URL(`${issuer}/authorize`);
  stolen.searchParams.set('client_id', 'par-other');
  stolen.searchParams.set('request_uri', url.searchParams.get('request_uri') ?? '');
  t.is((await browse(stolen)).status, 400);
  const madeUp = new URL(url);
  madeUp.searchParams.set('request_uri', 'urn:ietf:params:oauth:request_uri:nothing');
  t.is((await browse(madeUp)).status, 400);
  const unauthenticated = await fetch(`${issuer}/oauth/par`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ client_id: 'par-app', redirect_uri: 'https://par.example/cb', response_type: 'code' }) });
  t.is(unauthenticated.status, 401);
  const wrongRedirect = await fetch(`${issuer}/oauth/par`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`par-app:${added['client_secret'] as string}`).toString('base64')}` },
    body: new URLSearchParams({ redirect_uri: 'https://evil.example/cb', response_type: 'code' }),
  });
  t.is(wrongRedirect.status, 400);
  t.is(((await wrongRedirect.json()) as { error: string }).error, 'invalid_request');
});

test('the device authorization grant (RFC 8628) through openid-client: the user approves on /app/device; pending, slow_down, denied and single use', async (t) => {
  const { server, issuer } = await provider('sqlite');
  t.teardown(() => server.close());
  const signup = await server.call('signup', { email: 'tv-user@example.com', password: 'Correct-Horse-7-Battery' }, { protocol: 'rest' });
  const set = signup.setCookies.find((c) => c.startsWith('cookie_session=')) ?? '';
  const cookie = set.slice('cookie_session='.length, set.indexOf(';'));
  const userId = (signup.body?.['user'] as { id: string }).id;
  await ok(server, 'add_client', { client_id: 'tv-app', application_type: 'native', grant_types: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'], scopes: ['openid', 'offline_access'] }, 'rest');
  const config = await discover(issuer, 'tv-app', client.None());
  t.is(config.serverMetadata().device_authorization_endpoint, `${issuer}/oauth/device_authorization`);

  const decide = (userCode: string, decision: string, withCookie = true): Promise<Response> =>
    fetch(`${issuer}/app/device`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: issuer, ...(withCookie ? { cookie: `cookie_session=${cookie}` } : {}) },
      body: new URLSearchParams({ user_code: userCode, decision }),
    });
  const poll = (deviceCode: string): Promise<{ status: number; body: Record<string, unknown> }> =>
    tokenCall(issuer, { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: deviceCode, client_id: 'tv-app' });

  const response = await client.initiateDeviceAuthorization(config, { scope: 'openid offline_access' });
  t.regex(response.user_code, /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
  t.is(response.verification_uri, `${issuer}/app/device`);
  t.is((await poll(response.device_code)).body['error'], 'authorization_pending');
  t.is((await poll(response.device_code)).body['error'], 'slow_down', 'polled again within the interval');
  const page = await fetch(`${issuer}/app/device?user_code=${response.user_code}`);
  t.regex(await page.text(), new RegExp(response.user_code));
  t.regex(await (await decide(response.user_code, 'approve', false)).text(), /Sign in first/);
  t.regex(await (await decide(response.user_code, 'approve')).text(), /Device connected/);
  t.regex(await (await decide(response.user_code, 'approve')).text(), /unknown, expired or already used/, 'a code is approved once');
  const tokens = await client.pollDeviceAuthorizationGrant(config, response);
  t.is(tokens.claims()?.sub, userId);
  t.truthy(tokens.refresh_token);
  t.is((await poll(response.device_code)).body['error'], 'expired_token', 'a device code is redeemed once');

  const denied = await client.initiateDeviceAuthorization(config, { scope: 'openid' });
  t.regex(await (await decide(denied.user_code.toLowerCase().replace('-', ' '), 'deny')).text(), /Device refused/);
  t.is((await poll(denied.device_code)).body['error'], 'access_denied');
  const refused = await fetch(`${issuer}/oauth/device_authorization`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ client_id: TEST_CLIENT_ID }) });
  t.is(((await refused.json()) as { error: string }).error, 'unauthorized_client', 'the --client-id client is not registered for the device grant');
});

test('dynamic client registration (RFC 7591): off by default; with --oauth-registration-access-token, refused without the token, and a registered client works through openid-client', async (t) => {
  const off = await provider('sqlite');
  t.teardown(() => off.server.close());
  t.is((await fetch(`${off.issuer}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status, 404);
  t.false('registration_endpoint' in ((await (await fetch(`${off.issuer}/.well-known/openid-configuration`)).json()) as Record<string, unknown>));

  const server = await startTestServerOnPort((port) => ({ url: `http://127.0.0.1:${port}`, 'oauth-registration-access-token': 'initial-token-0123456789' }));
  const issuer = server.httpUrl;
  t.teardown(() => server.close());
  const doc = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
  t.is(doc['registration_endpoint'], `${issuer}/oauth/register`);
  const register = (body: unknown, token?: string): Promise<Response> =>
    fetch(`${issuer}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) }, body: JSON.stringify(body) });
  const metadata = { client_name: 'Reporting', grant_types: ['client_credentials'], token_endpoint_auth_method: 'client_secret_basic' };
  t.is((await register(metadata)).status, 401, 'without the initial access token');
  t.is((await register(metadata, 'wrong-token')).status, 401, 'with a wrong one');
  const res = await register(metadata, 'initial-token-0123456789');
  t.is(res.status, 201);
  const created = (await res.json()) as Record<string, unknown>;
  t.is(created['client_secret_expires_at'], 0);
  t.deepEqual(created['grant_types'], ['client_credentials']);
  const config = await discover(issuer, String(created['client_id']), client.ClientSecretBasic(String(created['client_secret'])));
  t.truthy((await client.clientCredentialsGrant(config)).access_token);
  const bad = await register({ redirect_uris: ['http://evil.example/cb'] }, 'initial-token-0123456789');
  t.is(bad.status, 400);
  t.is(((await bad.json()) as { error: string }).error, 'invalid_redirect_uri');
  const loopback = await register({ grant_types: ['client_credentials'], token_endpoint_auth_method: 'private_key_jwt', jwks_uri: 'http://127.0.0.1:9/keys' }, 'initial-token-0123456789');
  t.is(((await loopback.json()) as { error: string }).error, 'invalid_client_metadata', 'open registration never makes the server fetch a loopback URL');
  const roles = await register({ grant_types: ['client_credentials'], roles: ['admin'] }, 'initial-token-0123456789');
  t.deepEqual(((await roles.json()) as Record<string, unknown>)['roles'], undefined, 'roles cannot be given through registration');
});
