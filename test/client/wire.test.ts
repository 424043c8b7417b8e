/**
 * What the clients put on the wire: the admin secret and extra headers, the
 * Origin header, the admin session cookie (on a server that refuses the admin
 * header), /oauth/token and /oauth/revoke over HTTP whatever the protocol,
 * and gRPC libraries loaded only by gRPC clients.
 */
import test from 'ava';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { LatchkeyAdminClient, LatchkeyClient, LatchkeyError, type ClientProtocol } from '../../client/index.ts';
import { PROTOCOLS, TEST_ADMIN_SECRET, TEST_CLIENT_ID, startTestServer } from '../helpers/server.ts';
import { closedPort, countingProxy } from './proxy.ts';

test('admin calls carry the admin secret, the extra headers and the service origin (REST, GraphQL)', async (t) => {
  const server = await startTestServer();
  const proxy = await countingProxy(new URL(server.httpUrl).port, server.grpcAddress.split(':').pop() as string);
  try {
    for (const protocol of ['rest', 'graphql'] as const) {
      const admin = new LatchkeyAdminClient({ service_url: proxy.httpUrl, admin_secret: TEST_ADMIN_SECRET, extra_headers: { 'X-Tenant': 'acme' }, protocol });
      t.like(await admin.users(), { pagination: { page: 1 } });
      await admin.close();
    }
    const sent = proxy.httpRequests().toLowerCase();
    t.is(sent.split(`x-service-admin-secret: ${TEST_ADMIN_SECRET}`).length - 1, 2);
    t.is(sent.split('x-tenant: acme').length - 1, 2);
    t.is(sent.split(`origin: ${proxy.httpUrl}`).length - 1, 2);
  } finally {
    await proxy.close();
    await server.close();
  }
});

test('with --disable-admin-header-auth, adminLogin gives the client the admin cookie it then uses, on every protocol', async (t) => {
  const server = await startTestServer({ 'disable-admin-header-auth': true });
  try {
    for (const protocol of PROTOCOLS) {
      const admin = new LatchkeyAdminClient({ service_url: server.httpUrl, admin_secret: TEST_ADMIN_SECRET, protocol, grpc_endpoint: server.grpcAddress });
      t.is((await t.throwsAsync(() => admin.users(), { instanceOf: LatchkeyError }))?.code, 'unauthenticated', protocol);
      await admin.adminLogin({ admin_secret: TEST_ADMIN_SECRET });
      t.deepEqual(Object.keys(admin.cookies()), ['service-admin'], protocol);
      t.like(await admin.users(), { pagination: { page: 1 } }, protocol);
      admin.clearCookies();
      t.is((await t.throwsAsync(() => admin.users(), { instanceOf: LatchkeyError }))?.code, 'unauthenticated', protocol);
      await admin.close();
    }
  } finally {
    await server.close();
  }
});

interface Captured {
  method: string;
  path: string;
  type: string;
  body: URLSearchParams;
}

async function oauthStub(answer: (path: string) => [number, unknown]): Promise<{ url: string; seen: Captured[]; close: () => Promise<void> }> {
  const seen: Captured[] = [];
  const http = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', path: req.url ?? '', type: req.headers['content-type'] ?? '', body: new URLSearchParams(body) });
      const [status, json] = answer(req.url ?? '');
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(json));
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise((resolve) => http.close(() => resolve())),
  };
}

test('getToken and revokeToken post OAuth forms over HTTP whatever the protocol', async (t) => {
  const stub = await oauthStub((path) =>
    path === '/oauth/token' ? [200, { access_token: 'at', token_type: 'Bearer', expires_in: 1800 }] : [200, {}],
  );
  const grpcPort = await closedPort();
  try {
    for (const protocol of PROTOCOLS) {
      const c = new LatchkeyClient({ client_id: 'cid', service_url: stub.url, protocol, grpc_endpoint: `127.0.0.1:${grpcPort}` });
      t.like(await c.getToken({ code: 'the-code', code_verifier: 'v'.repeat(43), redirect_uri: 'https://app.example.com/cb' }), { access_token: 'at', token_type: 'Bearer' });
      await c.getToken({ grant_type: 'refresh_token', refresh_token: 'rt' });
      await c.revokeToken({ refresh_token: 'rt' });
      await c.close();
    }
    t.is(stub.seen.length, 9);
    for (let i = 0; i < 3; i++) {
      const [code, refresh, revoke] = stub.seen.slice(i * 3, i * 3 + 3) as [Captured, Captured, Captured];
      t.like(code, { method: 'POST', path: '/oauth/token', type: 'application/x-www-form-urlencoded' });
      t.deepEqual(Object.fromEntries(code.body), { grant_type: 'authorization_code', client_id: 'cid', code: 'the-code', code_verifier: 'v'.repeat(43), redirect_uri: 'https://app.example.com/cb' });
      t.deepEqual(Object.fromEntries(refresh.body), { grant_type: 'refresh_token', client_id: 'cid', refresh_token: 'rt' });
      t.like(revoke, { method: 'POST', path: '/oauth/revoke' });
      t.deepEqual(Object.fromEntries(revoke.body), { token: 'rt', token_type_hint: 'refresh_token', client_id: 'cid' });
    }
  } finally {
    await stub.close();
  }
});

test('an OAuth error becomes a LatchkeyError with the OAuth error as reason; bad requests are refused before sending', async (t) => {
  const stub = await oauthStub(() => [400, { error: 'invalid_grant', error_description: 'code expired' }]);
  try {
    const c = new LatchkeyClient({ client_id: 'cid', service_url: stub.url, protocol: 'grpc' });
    const err = await t.throwsAsync(() => c.getToken({ code: 'x' }), { instanceOf: LatchkeyError });
    t.is(err?.code, 'invalid_argument');
    t.is(err?.reason, 'invalid_grant');
    t.is(err?.message, 'code expired');
    t.is((await t.throwsAsync(() => c.getToken({ grant_type: 'refresh_token' }), { instanceOf: LatchkeyError }))?.reason, 'invalid_field');
    t.is((await t.throwsAsync(() => c.revokeToken({ refresh_token: '' }), { instanceOf: LatchkeyError }))?.reason, 'invalid_field');
    t.is(stub.seen.length, 1);
  } finally {
    await stub.close();
  }
});

test('a gRPC client reaches the real server for OAuth over HTTP too', async (t) => {
  const server = await startTestServer();
  try {
    const c = new LatchkeyClient({ client_id: TEST_CLIENT_ID, service_url: server.httpUrl, protocol: 'grpc', grpc_endpoint: server.grpcAddress });
    // Whatever the server answers, it answers over HTTP: a gRPC call could not produce an HTTP status.
    const outcome = await c.getToken({ code: 'not-a-code' }).then(
      () => 'accepted',
      (e: LatchkeyError) => e.code,
    );
    t.not(outcome, 'unavailable');
    t.not(outcome, 'accepted');
    await c.close();
  } finally {
    await server.close();
  }
});

const run = promisify(execFile);
const PROBE = fileURLToPath(new URL('./load_probe.ts', import.meta.url));

for (const protocol of PROTOCOLS) {
  test(`a ${protocol} client loads ${protocol === 'grpc' ? 'the gRPC libraries' : 'no gRPC library'} and no server code`, async (t) => {
    const server = await startTestServer();
    try {
      const { stdout } = await run(process.execPath, [PROBE, server.httpUrl, server.grpcAddress, protocol as ClientProtocol]);
      const loaded = JSON.parse(stdout) as { version: string; packages: string[]; files: string[] };
      t.truthy(loaded.version);
      t.is(loaded.packages.includes('@grpc/grpc-js'), protocol === 'grpc');
      t.is(loaded.packages.includes('@grpc/proto-loader'), protocol === 'grpc');
      for (const pkg of ['express', 'graphql', 'sequelize', 'jose', 'bcrypt', 'minimist']) t.false(loaded.packages.includes(pkg), pkg);
      const server_side = loaded.files.filter((f) => /(^|\/)(auth|admin|dsl|server|transports|cmd)\//.test(f));
      t.deepEqual(server_side, []);
    } finally {
      await server.close();
    }
  });
}
