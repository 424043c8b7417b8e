/**
 * The synchronous clients: the scenario run with blocking calls (in a worker
 * thread, as the server runs on this one) gives exactly the results of the
 * asynchronous clients, on every protocol; errors are LatchkeyErrors; the
 * early refusal happens on the calling thread before any request.
 */
import test from 'ava';
import { Worker } from 'node:worker_threads';
import {
  LatchkeyAdminClient,
  LatchkeyClient,
  LatchkeyError,
  LatchkeySyncAdminClient,
  LatchkeySyncClient,
  type ClientProtocol,
} from '../../client/index.ts';
import { PROTOCOLS, TEST_ADMIN_SECRET, TEST_CLIENT_ID, startTestServer, type TestServer } from '../helpers/server.ts';
import { runScenario } from './scenario.ts';
import { countingProxy } from './proxy.ts';

let server: TestServer;

test.before(async () => {
  server = await startTestServer({ 'webhook-allow-private-networks': true });
});

test.after.always(async () => {
  await server?.close();
});

function syncScenario(protocol: ClientProtocol, tag: string): Promise<Record<string, unknown>> {
  const worker = new Worker(new URL('./sync_driver.ts', import.meta.url), {
    workerData: { protocol, httpUrl: server.httpUrl, grpcAddress: server.grpcAddress, tag, clientId: TEST_CLIENT_ID, adminSecret: TEST_ADMIN_SECRET },
  });
  return new Promise((resolve, reject) => {
    worker.once('message', (m: { ok: boolean; result?: Record<string, unknown>; error?: string }) =>
      m.ok ? resolve(m.result as Record<string, unknown>) : reject(new Error(m.error)),
    );
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`sync driver exited with ${code} before answering`)));
  });
}

async function asyncScenario(protocol: ClientProtocol, tag: string): Promise<Record<string, unknown>> {
  const mk = (): LatchkeyClient => new LatchkeyClient({ client_id: TEST_CLIENT_ID, service_url: server.httpUrl, protocol, grpc_endpoint: server.grpcAddress });
  const user = mk();
  const bearer = mk();
  const admin = new LatchkeyAdminClient({ service_url: server.httpUrl, admin_secret: TEST_ADMIN_SECRET, protocol, grpc_endpoint: server.grpcAddress });
  try {
    return await runScenario(user as never, bearer as never, admin as never, tag);
  } finally {
    await Promise.all([user.close(), bearer.close(), admin.close()]);
  }
}

for (const protocol of PROTOCOLS) {
  test.serial(`sync clients answer exactly as the async clients over ${protocol}`, async (t) => {
    const asyncResult = await asyncScenario(protocol, `a-${protocol}-${Date.now()}`);
    const syncResult = await syncScenario(protocol, `s-${protocol}-${Date.now()}`);
    t.deepEqual(syncResult, asyncResult);
    t.like(syncResult.profile, { email: '<tag>@example.com' });
    t.like(syncResult.profileAfterLogout, { error: { name: 'LatchkeyError', code: 'unauthenticated' } });
  });
}

test.serial('a sync client refuses an unsupported method on the calling thread, before any request', async (t) => {
  const proxy = await countingProxy(new URL(server.httpUrl).port, server.grpcAddress.split(':').pop() as string);
  try {
    const graphql = new LatchkeySyncAdminClient({ service_url: proxy.httpUrl, admin_secret: TEST_ADMIN_SECRET, grpc_endpoint: proxy.grpcAddress });
    const rest = new LatchkeySyncAdminClient({ service_url: proxy.httpUrl, admin_secret: TEST_ADMIN_SECRET, protocol: 'rest' });
    const err = t.throws(() => graphql.fgaReset(), { instanceOf: LatchkeyError });
    t.is(err?.code, 'unimplemented');
    t.is(err?.reason, 'protocol_not_supported');
    t.is(t.throws(() => rest.updateEnv({ DISABLE_SIGN_UP: true }), { instanceOf: LatchkeyError })?.reason, 'protocol_not_supported');
    t.is(t.throws(() => graphql.fgaReadTuples({ page_size: 'ten' } as never), { instanceOf: LatchkeyError })?.code, 'invalid_argument');
    graphql.close();
    rest.close();
    t.is(proxy.connections(), 0);
  } finally {
    await proxy.close();
  }
});

test('sync client options are checked on the calling thread', (t) => {
  t.is(t.throws(() => new LatchkeySyncClient({ client_id: '', service_url: 'http://127.0.0.1:1' }), { instanceOf: LatchkeyError })?.code, 'invalid_argument');
  t.is(
    t.throws(() => new LatchkeySyncAdminClient({ service_url: 'ftp://example.com', admin_secret: 's' }), { instanceOf: LatchkeyError })?.code,
    'invalid_argument',
  );
});
