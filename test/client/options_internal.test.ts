/**
 * Internal helpers of the clients (tested directly, by name): option checking
 * and the default gRPC endpoint, and the cookie jar.
 */
import test from 'ava';
import { resolveAdminOptions, resolveClientOptions } from '../../client/options.ts';
import { CookieJar } from '../../client/cookie_jar.ts';
import { LatchkeyAdminClient, LatchkeyClient, LatchkeyError } from '../../client/index.ts';

function refusal(t: import('ava').ExecutionContext, fn: () => unknown, option: string): void {
  const err = t.throws(fn, { instanceOf: LatchkeyError });
  t.is(err?.code, 'invalid_argument', option);
  t.is(err?.reason, 'invalid_client_option', option);
  t.is((err?.details as { option?: string } | undefined)?.option, option);
}

test('options (internal): protocol defaults to graphql, grpc_endpoint to the service host on port 9091', (t) => {
  const o = resolveClientOptions({ client_id: 'c', service_url: 'https://auth.example.com/base/' });
  t.is(o.protocol, 'graphql');
  t.is(o.serviceUrl, 'https://auth.example.com/base');
  t.is(o.origin, 'https://auth.example.com');
  t.is(o.grpcEndpoint, 'auth.example.com:9091');
  t.true(o.grpcTls);
  t.is(resolveClientOptions({ client_id: 'c', service_url: 'http://[::1]:8080' }).grpcEndpoint, '[::1]:9091');
  t.false(resolveClientOptions({ client_id: 'c', service_url: 'http://127.0.0.1:8080' }).grpcTls);
  t.is(resolveClientOptions({ client_id: 'c', service_url: 'http://a', protocol: 'grpc', grpc_endpoint: 'b:7' }).grpcEndpoint, 'b:7');
});

test('options (internal): the admin secret and extra headers go on every admin call', (t) => {
  const o = resolveAdminOptions({ service_url: 'http://a', admin_secret: 's3', extra_headers: { 'X-Tenant': 'acme' }, protocol: 'rest' });
  t.deepEqual(o.headers, { 'x-tenant': 'acme', 'x-service-admin-secret': 's3' });
  t.is(o.protocol, 'rest');
});

test('options (internal): bad options are refused naming the option', (t) => {
  refusal(t, () => resolveClientOptions({ service_url: 'http://a' } as never), 'client_id');
  refusal(t, () => resolveClientOptions({ client_id: 'c' } as never), 'service_url');
  refusal(t, () => resolveClientOptions({ client_id: 'c', service_url: 'not a url' }), 'service_url');
  refusal(t, () => resolveClientOptions({ client_id: 'c', service_url: 'ftp://a' }), 'service_url');
  refusal(t, () => resolveClientOptions({ client_id: 'c', service_url: 'http://a?x=1' }), 'service_url');
  refusal(t, () => resolveClientOptions({ client_id: 'c', service_url: 'http://a', protocol: 'soap' as never }), 'protocol');
  refusal(t, () => resolveClientOptions({ client_id: 'c', service_url: 'http://a', grpc_endpoint: 'grpc://a:1' }), 'grpc_endpoint');
  refusal(t, () => resolveClientOptions({ client_id: 'c', service_url: 'http://a', admin_secret: 's' } as never), 'admin_secret');
  refusal(t, () => resolveAdminOptions({ service_url: 'http://a' } as never), 'admin_secret');
  refusal(t, () => resolveAdminOptions({ service_url: 'http://a', admin_secret: '' }), 'admin_secret');
  refusal(t, () => resolveAdminOptions({ service_url: 'http://a', admin_secret: 's', extra_headers: { 'bad header': 'x' } }), 'extra_headers.bad header');
  refusal(t, () => resolveAdminOptions({ service_url: 'http://a', admin_secret: 's', extra_headers: { 'x-service-admin-secret': 'other' } }), 'extra_headers.x-service-admin-secret');
  refusal(t, () => resolveAdminOptions({ service_url: 'http://a', admin_secret: 's', extra_headers: { x: 1 as never } }), 'extra_headers.x');
  refusal(t, () => new LatchkeyClient({ client_id: 'c', service_url: 'http://a', client_secret: 'x' } as never), 'client_secret');
  refusal(t, () => new LatchkeyAdminClient({ service_url: 'http://a', admin_secret: 's', client_id: 'c' } as never), 'client_id');
});

test('cookie jar (internal): keeps what is set, drops what expires, sends name=value pairs', (t) => {
  let now = 1_000_000;
  const jar = new CookieJar(() => now);
  jar.store(['cookie_session=abc; Path=/; HttpOnly; Max-Age=60', 'cookie_session_domain=def; Domain=example.com; Path=/; HttpOnly', 'junk']);
  t.is(jar.header(), 'cookie_session=abc; cookie_session_domain=def');
  now += 61_000;
  t.deepEqual(jar.entries(), { cookie_session_domain: 'def' });
  jar.store(['cookie_session_domain=; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT']);
  t.is(jar.header(), undefined);
  jar.set('mfa', 'x1');
  t.deepEqual(jar.entries(), { mfa: 'x1' });
  t.throws(() => jar.set('mfa', 'a;b'), { instanceOf: LatchkeyError });
  t.throws(() => jar.set('bad name', 'v'), { instanceOf: LatchkeyError });
  jar.clear();
  t.deepEqual(jar.entries(), {});
});
