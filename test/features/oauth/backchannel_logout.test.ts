/**
 * OpenID Connect Back-Channel Logout 1.0 with a real receiver on loopback:
 * a registered client with a `backchannel_logout_uri` is sent a signed
 * logout token (`logout+jwt`, its `sid` the one of the client's ID token,
 * the back-channel logout event, no nonce) when a session of its ends: by
 * revocation (RFC 7009) and by an administrator ending the user's access;
 * a client without a URI is sent nothing; discovery says so.
 */
import test from 'ava';
import { createServer, type IncomingMessage } from 'node:http';
import * as client from 'openid-client';
import { decodeProtectedHeader, jwtVerify } from 'jose';
import { TEST_ADMIN_SECRET, TEST_JWT_SECRET, startTestServerOnPort, type TestServer } from '../../helpers/server.ts';

const ADMIN = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
const EVENT = 'http://schemas.openid.net/event/backchannel-logout';

async function ok(server: TestServer, op: string, input: Record<string, unknown>): Promise<Record<string, unknown>> {
  const r = await server.call(op, input, { protocol: 'rest', headers: ADMIN });
  if (r.error !== undefined || r.body === undefined) throw new Error(`${op}: ${JSON.stringify(r.error)}`);
  return r.body;
}

const bodyOf = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString('utf8')));
    req.on('end', () => resolve(text));
  });

test('back-channel logout: a signed logout token with the session id reaches the client when its session ends', async (t) => {
  // The relying party's receiver.
  const received: Array<{ contentType: string | undefined; token: string | null }> = [];
  const receiver = createServer((req, res) => {
    void bodyOf(req).then((text) => {
      received.push({ contentType: req.headers['content-type'], token: new URLSearchParams(text).get('logout_token') });
      res.statusCode = 200;
      res.setHeader('cache-control', 'no-store');
      res.end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  t.teardown(() => receiver.close());
  const receiverPort = (receiver.address() as { port: number }).port;

  const server = await startTestServerOnPort((port) => ({ url: `http://127.0.0.1:${port}`, 'enable-email-verification': false }));
  const issuer = server.httpUrl;
  t.teardown(() => server.close());
  const meta = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
  t.is(meta['backchannel_logout_supported'], true);
  t.is(meta['backchannel_logout_session_supported'], true);

  for (const uri of ['http://rp.example/logout', 'https://rp.example/logout#frag', 'not a url']) {
    const r = await server.call('add_client', { client_id: 'bad-rp', redirect_uris: ['https://rp.example/cb'], backchannel_logout_uri: uri }, { protocol: 'rest', headers: ADMIN });
    t.is(r.error?.reason, 'invalid_client_metadata', uri);
  }
  const logoutUri = `http://127.0.0.1:${receiverPort}/backchannel-logout`;
  const rp = await ok(server, 'add_client', { client_id: 'rp-web', redirect_uris: ['https://rp.example/cb'], scopes: ['openid', 'offline_access'], backchannel_logout_uri: logoutUri });
  t.is((rp['client'] as Record<string, unknown>)['backchannel_logout_uri'], logoutUri);
  const quiet = await ok(server, 'add_client', { client_id: 'rp-quiet', redirect_uris: ['https://quiet.example/cb'], scopes: ['openid', 'offline_access'] });

  const signup = await server.call('signup', { email: 'bcl-user@example.com', password: 'Correct-Horse-7-Battery' }, { protocol: 'rest' });
  const set = signup.setCookies.find((c) => c.startsWith('cookie_session=')) ?? '';
  const cookie = set.slice('cookie_session='.length, set.indexOf(';'));
  const userId = (signup.body?.['user'] as { id: string }).id;
  const discover = (id: string, secret: string): Promise<client.Configuration> => client.discovery(new URL(issuer), id, {}, client.ClientSecretBasic(secret), { execute: [client.allowInsecureRequests] });
  const grant = async (config: client.Configuration, redirectUri: string): Promise<Awaited<ReturnType<typeof client.authorizationCodeGrant>>> => {
    const verifier = client.randomPKCECodeVerifier();
    const res = await fetch(client.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope: 'openid offline_access', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' }), { headers: { cookie: `cookie_session=${cookie}` }, redirect: 'manual' });
    return client.authorizationCodeGrant(config, new URL(res.headers.get('location') ?? ''), { pkceCodeVerifier: verifier });
  };
  const until = async (count: number): Promise<void> => {
    for (let i = 0; i < 100 && received.length < count; i++) await new Promise((r) => setTimeout(r, 50));
  };
  const verify = async (token: string | null, sid: unknown): Promise<void> => {
    t.truthy(token);
    t.is(decodeProtectedHeader(token!).typ, 'logout+jwt');
    const { payload } = await jwtVerify(token!, new TextEncoder().encode(TEST_JWT_SECRET), { issuer, audience: 'rp-web', typ: 'logout+jwt' });
    t.is(payload.sub, userId);
    t.is(payload['sid'], sid, 'the sid of the client\'s ID token');
    t.deepEqual(payload['events'], { [EVENT]: {} });
    t.false('nonce' in payload, 'a logout token has no nonce');
    t.truthy(payload.jti);
  };

  const config = await discover('rp-web', rp['client_secret'] as string);
  const quietConfig = await discover('rp-quiet', quiet['client_secret'] as string);

  // Revocation (RFC 7009) ends the grant's session: one notice.
  const first = await grant(config, 'https://rp.example/cb');
  const firstSid = first.claims()?.['sid'];
  t.truthy(firstSid, 'the ID token carries sid');
  await client.tokenRevocation(config, first.refresh_token!);
  await until(1);
  t.is(received.length, 1);
  t.is(received[0]?.contentType, 'application/x-www-form-urlencoded');
  await verify(received[0]?.token ?? null, firstSid);

  // An administrator ending the user's access ends every grant: rp-web's is announced, rp-quiet's is not (no URI).
  const second = await grant(config, 'https://rp.example/cb');
  await grant(quietConfig, 'https://quiet.example/cb');
  await ok(server, 'revoke_access', { user_id: userId });
  await until(2);
  await new Promise((r) => setTimeout(r, 300));
  t.is(received.length, 2, 'one notice: the client without a URI is told nothing');
  await verify(received[1]?.token ?? null, second.claims()?.['sid']);
});
