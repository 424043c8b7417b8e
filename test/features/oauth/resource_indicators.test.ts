/**
 * Resource indicators (RFC 8707) through `openid-client`: on the code,
 * refresh and client_credentials grants a `resource` among the client's
 * registered audiences is named in the access token's `aud` (after this
 * server's own); another resource, a relative one or one with a fragment is
 * `invalid_target`; the token request of a code may name only the resource
 * its authorization request named, and a refresh only the grant's.
 */
import test from 'ava';
import * as client from 'openid-client';
import { decodeJwt } from 'jose';
import { TEST_ADMIN_SECRET, TEST_CLIENT_ID, TEST_CLIENT_SECRET, startTestServerOnPort, type TestServer } from '../../helpers/server.ts';

const ADMIN = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
const BILLING = 'https://billing.example/api';
const REPORTS = 'https://reports.example/';

async function ok(server: TestServer, op: string, input: Record<string, unknown>): Promise<Record<string, unknown>> {
  const r = await server.call(op, input, { protocol: 'rest', headers: ADMIN });
  if (r.error !== undefined || r.body === undefined) throw new Error(`${op}: ${JSON.stringify(r.error)}`);
  return r.body;
}

const errorOf = (err: unknown): string | undefined => (err as { error?: string }).error;
const audOf = (token: string): string[] => {
  const aud = decodeJwt(token).aud;
  return Array.isArray(aud) ? aud : aud === undefined ? [] : [aud];
};

test('resource indicators on client_credentials, code and refresh: the audience named, anything else invalid_target', async (t) => {
  const server = await startTestServerOnPort((port) => ({ url: `http://127.0.0.1:${port}`, 'enable-email-verification': false }));
  const issuer = server.httpUrl;
  t.teardown(() => server.close());
  const discover = (id: string, auth: client.ClientAuth): Promise<client.Configuration> => client.discovery(new URL(issuer), id, {}, auth, { execute: [client.allowInsecureRequests] });

  // client_credentials.
  const bot = await ok(server, 'add_client', { client_id: 'billing-bot', kind: 'service_account', audiences: [BILLING, REPORTS] });
  const botConfig = await discover('billing-bot', client.ClientSecretBasic(bot['client_secret'] as string));
  const plain = await client.clientCredentialsGrant(botConfig);
  const own = audOf(plain.access_token);
  t.is(own.length, 1, 'without a resource, this server alone');
  const billing = await client.clientCredentialsGrant(botConfig, { resource: BILLING });
  t.deepEqual(audOf(billing.access_token), [...own, BILLING]);
  for (const resource of ['https://elsewhere.example/', 'billing', `${BILLING}#frag`]) {
    t.is(errorOf(await client.clientCredentialsGrant(botConfig, { resource }).catch((e: unknown) => e)), 'invalid_target', resource);
  }
  const flagConfig = await discover(TEST_CLIENT_ID, client.ClientSecretBasic(TEST_CLIENT_SECRET));
  t.is(errorOf(await client.clientCredentialsGrant(flagConfig, { resource: BILLING }).catch((e: unknown) => e)), 'invalid_target', 'the --client-id client has no audiences');

  // The code grant and its refreshes.
  const signup = await server.call('signup', { email: 'rs-user@example.com', password: 'Correct-Horse-7-Battery' }, { protocol: 'rest' });
  const set = signup.setCookies.find((c) => c.startsWith('cookie_session=')) ?? '';
  const cookie = set.slice('cookie_session='.length, set.indexOf(';'));
  const browse = (url: URL): Promise<Response> => fetch(url, { headers: { cookie: `cookie_session=${cookie}` }, redirect: 'manual' });
  const web = await ok(server, 'add_client', { client_id: 'rs-web', redirect_uris: ['https://web.example/cb'], scopes: ['openid', 'offline_access'], audiences: [BILLING, REPORTS] });
  const config = await discover('rs-web', client.ClientSecretBasic(web['client_secret'] as string));
  const code = async (extra: Record<string, string>): Promise<{ callback: URL; verifier: string; location: string }> => {
    const verifier = client.randomPKCECodeVerifier();
    const res = await browse(client.buildAuthorizationUrl(config, { redirect_uri: 'https://web.example/cb', scope: 'openid offline_access', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', ...extra }));
    const location = res.headers.get('location') ?? '';
    return { callback: new URL(location), verifier, location };
  };

  t.regex((await code({ resource: 'https://elsewhere.example/' })).location, /error=invalid_target/, 'an authorization request for another resource');
  const granted = await code({ resource: BILLING });
  const tokens = await client.authorizationCodeGrant(config, granted.callback, { pkceCodeVerifier: granted.verifier });
  t.true(audOf(tokens.access_token).includes(BILLING));
  t.false(audOf(tokens.access_token).includes(REPORTS));
  // The token request may name the same resource only.
  const other = await code({ resource: BILLING });
  t.is(errorOf(await client.authorizationCodeGrant(config, other.callback, { pkceCodeVerifier: other.verifier }, { resource: REPORTS }).catch((e: unknown) => e)), 'invalid_target');
  const same = await code({ resource: BILLING });
  const sameTokens = await client.authorizationCodeGrant(config, same.callback, { pkceCodeVerifier: same.verifier }, { resource: BILLING });
  t.true(audOf(sameTokens.access_token).includes(BILLING));

  // Refresh keeps the grant's resource; another one is refused, and the refusal does not spend the token.
  t.is(errorOf(await client.refreshTokenGrant(config, tokens.refresh_token!, { resource: REPORTS }).catch((e: unknown) => e)), 'invalid_target');
  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!, { resource: BILLING });
  t.true(audOf(refreshed.access_token).includes(BILLING));
  const again = await client.refreshTokenGrant(config, refreshed.refresh_token!);
  t.true(audOf(again.access_token).includes(BILLING));

  // A grant made without a resource cannot gain one on refresh.
  const unscoped = await code({});
  const unscopedTokens = await client.authorizationCodeGrant(config, unscoped.callback, { pkceCodeVerifier: unscoped.verifier });
  t.is(audOf(unscopedTokens.access_token).length, 1);
  t.is(errorOf(await client.refreshTokenGrant(config, unscopedTokens.refresh_token!, { resource: BILLING }).catch((e: unknown) => e)), 'invalid_target');

  // The resource-bound token still opens this server's own API (it keeps this server's audience).
  const me = await server.call('profile', {}, { protocol: 'rest', headers: { authorization: `Bearer ${tokens.access_token}` } });
  t.is(me.body?.['email'], 'rs-user@example.com');
});
