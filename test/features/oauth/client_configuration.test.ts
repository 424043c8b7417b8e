/**
 * The client configuration endpoint (RFC 7592): a dynamically registered
 * client reads, replaces and deletes its registration at its
 * `registration_client_uri` with its registration access token; without it,
 * with a wrong one or another client's, the answer is 401 `invalid_token`.
 */
import test from 'ava';
import * as client from 'openid-client';
import { startTestServerOnPort } from '../../helpers/server.ts';

const INITIAL = 'initial-access-token-0123456789';

test('RFC 7592: read, replace and delete a registration with its registration access token', async (t) => {
  const server = await startTestServerOnPort((port) => ({ url: `http://127.0.0.1:${port}`, 'oauth-registration-access-token': INITIAL }));
  const issuer = server.httpUrl;
  t.teardown(() => server.close());
  const register = async (metadata: Record<string, unknown>): Promise<Record<string, unknown>> => {
    const res = await fetch(`${issuer}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${INITIAL}` }, body: JSON.stringify(metadata) });
    t.is(res.status, 201);
    return (await res.json()) as Record<string, unknown>;
  };
  const call = (uri: string, method: string, token?: string, body?: Record<string, unknown>): Promise<Response> =>
    fetch(uri, { method, headers: { ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });

  const bot = await register({ client_name: 'Nightly', grant_types: ['client_credentials'] });
  const id = bot['client_id'] as string;
  const token = bot['registration_access_token'] as string;
  const uri = bot['registration_client_uri'] as string;
  t.is(uri, `${issuer}/oauth/register?client_id=${encodeURIComponent(id)}`);
  t.regex(token, /^[A-Za-z0-9_-]{43}$/);

  // Read.
  const read = await call(uri, 'GET', token);
  t.is(read.status, 200);
  const info = (await read.json()) as Record<string, unknown>;
  t.is(info['client_id'], id);
  t.is(info['client_name'], 'Nightly');
  t.false('client_secret' in info, 'the secret is never shown again');
  t.false('registration_access_token' in info);

  // Refused alike: no token, a wrong one, the initial access token, another client's.
  const other = await register({ grant_types: ['client_credentials'] });
  for (const [why, presented] of [['none', undefined], ['wrong', 'x'.repeat(43)], ['initial', INITIAL], ['another client\'s', other['registration_access_token'] as string]] as const) {
    const r = await call(uri, 'GET', presented);
    t.is(r.status, 401, why);
    t.is(((await r.json()) as { error: string }).error, 'invalid_token', why);
    t.regex(r.headers.get('www-authenticate') ?? '', /^Bearer /, why);
  }
  t.is((await call(`${issuer}/oauth/register?client_id=nobody-here`, 'GET', token)).status, 401, 'an unknown client');

  // Replace: the document is the whole registration.
  const put = await call(uri, 'PUT', token, { client_id: id, client_name: 'Nightly v2', grant_types: ['client_credentials'], scope: 'reports:read' });
  t.is(put.status, 200);
  const replaced = (await put.json()) as Record<string, unknown>;
  t.is(replaced['client_name'], 'Nightly v2');
  t.is(replaced['scope'], 'reports:read');
  t.is(((await (await call(uri, 'GET', token)).json()) as Record<string, unknown>)['client_name'], 'Nightly v2');
  const wrongId = await call(uri, 'PUT', token, { client_id: other['client_id'], grant_types: ['client_credentials'] });
  t.is(wrongId.status, 400);
  t.is(((await wrongId.json()) as { error: string }).error, 'invalid_client_metadata');
  const wrongSecret = await call(uri, 'PUT', token, { client_id: id, client_secret: 'not-the-secret', grant_types: ['client_credentials'] });
  t.is(((await wrongSecret.json()) as { error: string }).error, 'invalid_client_metadata');
  const kindChange = await call(uri, 'PUT', token, { client_id: id, redirect_uris: ['https://x.example/cb'] });
  t.is(((await kindChange.json()) as { error: string }).error, 'invalid_client_metadata', 'a service account stays one');

  // The client still works, with the scope it now has.
  const config = await client.discovery(new URL(issuer), id, {}, client.ClientSecretBasic(bot['client_secret'] as string), { execute: [client.allowInsecureRequests] });
  t.is((await client.clientCredentialsGrant(config)).scope, 'reports:read');

  // Delete: 204, then the client and its token are gone.
  const del = await call(uri, 'DELETE', token);
  t.is(del.status, 204);
  t.is((await call(uri, 'GET', token)).status, 401);
  const after = await fetch(`${issuer}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${id}:${bot['client_secret'] as string}`).toString('base64')}` },
    body: 'grant_type=client_credentials',
  });
  t.is(after.status, 401);
  t.is(((await after.json()) as { error: string }).error, 'invalid_client');
  t.is((await call(other['registration_client_uri'] as string, 'GET', other['registration_access_token'] as string)).status, 200, 'the other client is untouched');
});
