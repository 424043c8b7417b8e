/**
 * DPoP (RFC 9449) through `openid-client`: a service account's
 * client_credentials token bound to its key (`cnf.jkt`, token type DPoP),
 * accepted by the API with a valid proof, refused without one, with a
 * replayed one, with one for another URL, and as a bearer token (on gRPC
 * too, which carries no proof); introspection shows `cnf`; a replayed proof
 * at the token endpoint is `invalid_dpop_proof` (after its nonce challenge).
 */
import test from 'ava';
import * as client from 'openid-client';
import { SignJWT, calculateJwkThumbprint, decodeJwt, exportJWK, generateKeyPair } from 'jose';
import { createHash } from 'node:crypto';
import { TEST_ADMIN_SECRET, startTestServerOnPort, type TestServer } from '../../helpers/server.ts';

const ADMIN = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
const DSL = 'model\n  schema 1.1\ntype user\ntype service_account\ntype doc\n  relations\n    define viewer: [user, service_account]\n';

async function ok(server: TestServer, op: string, input: Record<string, unknown>): Promise<Record<string, unknown>> {
  const r = await server.call(op, input, { protocol: 'rest', headers: ADMIN });
  if (r.error !== undefined || r.body === undefined) throw new Error(`${op}: ${JSON.stringify(r.error)}`);
  return r.body;
}

test('a DPoP-bound client_credentials token: accepted with a valid proof, refused without one, replayed, for another URL or as a bearer token', async (t) => {
  const server = await startTestServerOnPort((port) => ({ url: `http://127.0.0.1:${port}` }));
  const issuer = server.httpUrl;
  t.teardown(() => server.close());
  const added = await ok(server, 'add_client', { client_id: 'dpop-bot', kind: 'service_account' });
  await ok(server, 'fga_write_model', { dsl: DSL });
  await ok(server, 'fga_write_tuples', { tuples: [{ user: 'service_account:dpop-bot', relation: 'viewer', object: 'doc:1' }] });

  const config = await client.discovery(new URL(issuer), 'dpop-bot', {}, client.ClientSecretBasic(added['client_secret'] as string), { execute: [client.allowInsecureRequests] });
  t.true((config.serverMetadata().dpop_signing_alg_values_supported ?? []).includes('ES256'));
  const keys = await generateKeyPair('ES256', { extractable: true });
  const handle = client.getDPoPHandle(config, keys);
  const tokens = await client.clientCredentialsGrant(config, {}, { DPoP: handle });
  t.is(tokens.token_type, 'dpop');
  const jkt = await calculateJwkThumbprint(await exportJWK(keys.publicKey));
  t.deepEqual(decodeJwt(tokens.access_token)['cnf'], { jkt });

  // Accepted with a proof (openid-client builds it with htm, htu and ath).
  const url = new URL(`${issuer}/v1/check_permissions`);
  const body = JSON.stringify({ checks: [{ relation: 'viewer', object: 'doc:1' }] });
  const headers = new Headers({ 'content-type': 'application/json', origin: issuer });
  const res = await client.fetchProtectedResource(config, tokens.access_token, url, 'POST', body, headers, { DPoP: handle });
  t.is(res.status, 200);
  t.deepEqual(((await res.json()) as { results: Array<{ allowed: boolean }> }).results.map((r) => r.allowed), [true]);

  const call = (authorization: string, dpop?: string, path = '/v1/check_permissions'): Promise<Response> =>
    fetch(`${issuer}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', origin: issuer, authorization, ...(dpop === undefined ? {} : { dpop }) }, body });
  const exported = await exportJWK(keys.publicKey);
  const proof = (htu: string, jti: string, token = tokens.access_token): Promise<string> =>
    new SignJWT({ htm: 'POST', htu, jti, ath: createHash('sha256').update(token).digest('base64url') })
      .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: exported })
      .setIssuedAt()
      .sign(keys.privateKey);

  const good = await proof(url.href, 'one');
  t.is((await call(`DPoP ${tokens.access_token}`, good)).status, 200);
  t.is((await call(`DPoP ${tokens.access_token}`, good)).status, 401, 'a replayed proof is refused');
  t.is((await call(`DPoP ${tokens.access_token}`)).status, 401, 'no proof');
  t.is((await call(`DPoP ${tokens.access_token}`, await proof(`${issuer}/v1/list_permissions`, 'two'))).status, 401, 'a proof for another URL');
  const other = await generateKeyPair('ES256');
  const foreign = await new SignJWT({ htm: 'POST', htu: url.href, jti: 'three', ath: createHash('sha256').update(tokens.access_token).digest('base64url') })
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: await exportJWK(other.publicKey) })
    .setIssuedAt()
    .sign(other.privateKey);
  t.is((await call(`DPoP ${tokens.access_token}`, foreign)).status, 401, 'a proof by another key');
  t.is((await call(`Bearer ${tokens.access_token}`)).status, 401, 'a bound token is not a bearer token');
  const grpc = await server.call('check_permissions', { checks: [{ relation: 'viewer', object: 'doc:1' }] }, { protocol: 'grpc', headers: { authorization: `Bearer ${tokens.access_token}` } });
  t.is(grpc.error?.code, 'unauthenticated', 'gRPC carries no proof: refused');

  // Introspection shows the binding.
  const intro = await client.tokenIntrospection(config, tokens.access_token);
  t.deepEqual(intro['cnf'], { jkt });

  // The token endpoint asks for its nonce (RFC 9449 §8), then refuses a replayed proof.
  const tokenProof = (nonce?: string): Promise<string> =>
    new SignJWT({ htm: 'POST', htu: `${issuer}/oauth/token`, jti: `token-${nonce ?? 'none'}`, ...(nonce === undefined ? {} : { nonce }) }).setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: exported }).setIssuedAt().sign(keys.privateKey);
  const form = (dpop: string): RequestInit => ({
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', dpop, authorization: `Basic ${Buffer.from(`dpop-bot:${added['client_secret'] as string}`).toString('base64')}` },
    body: 'grant_type=client_credentials',
  });
  const challenged = await fetch(`${issuer}/oauth/token`, form(await tokenProof()));
  t.is(challenged.status, 400);
  t.is(((await challenged.json()) as { error: string }).error, 'use_dpop_nonce');
  const withNonce = await tokenProof(challenged.headers.get('dpop-nonce') ?? '');
  const first = await fetch(`${issuer}/oauth/token`, form(withNonce));
  t.is(first.status, 200);
  t.is(((await first.json()) as { token_type: string }).token_type, 'DPoP');
  const replay = await fetch(`${issuer}/oauth/token`, form(withNonce));
  t.is(replay.status, 400, 'at the authorization server a refused proof is an error response (RFC 9449 §5)');
  t.is(((await replay.json()) as { error: string }).error, 'invalid_dpop_proof');
});
