/**
 * Wrong admin secrets are counted per client IP: with --redis-url in Redis,
 * shared by every server instance (a guesser cannot multiply the budget by
 * spreading attempts), without it per process. Real servers, real Redis.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { TEST_ADMIN_SECRET, startTestServer, type TestServer } from '../helpers/server.ts';
import { redisUrl } from '../helpers/databases.ts';

const LIMIT = 10;

async function adminCall(srv: TestServer, secret: string) {
  return srv.call('webhooks', {}, { protocol: 'rest', headers: { 'x-service-admin-secret': secret } });
}

const url = redisUrl();
if (url) {
  test('two instances on one Redis share the wrong-secret count of an IP', async (t) => {
    // A fresh namespace (client id) so that no other run's count is seen.
    const flags = { 'redis-url': url, 'client-id': `limiter-${randomBytes(6).toString('hex')}` };
    const a = await startTestServer(flags);
    const b = await startTestServer(flags);
    try {
      for (let i = 0; i < LIMIT; i++) {
        const r = await adminCall(i % 2 === 0 ? a : b, 'wrong');
        t.is(r.error?.code, 'unauthenticated', `attempt ${i + 1}`);
      }
      // Five wrong secrets on each instance: both now refuse this IP, even with the right secret.
      for (const srv of [a, b]) {
        const r = await adminCall(srv, TEST_ADMIN_SECRET);
        t.is(r.error?.code, 'resource_exhausted');
        t.is(r.error?.reason, 'too_many_attempts');
      }
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('a right secret gives its slot back in Redis too', async (t) => {
    const flags = { 'redis-url': url, 'client-id': `limiter-${randomBytes(6).toString('hex')}` };
    const a = await startTestServer(flags);
    try {
      for (let i = 0; i < LIMIT - 1; i++) t.is((await adminCall(a, 'wrong')).error?.code, 'unauthenticated');
      for (let i = 0; i < 5; i++) t.is((await adminCall(a, TEST_ADMIN_SECRET)).error, undefined, 'right secrets do not use the budget up');
      t.is((await adminCall(a, 'wrong')).error?.code, 'unauthenticated', 'the tenth wrong secret is still compared');
      t.is((await adminCall(a, TEST_ADMIN_SECRET)).error?.code, 'resource_exhausted');
    } finally {
      await a.close();
    }
  });

  test('a burst of right secrets beyond the budget leaves nothing counted in Redis', async (t) => {
    const flags = { 'redis-url': url, 'client-id': `limiter-${randomBytes(6).toString('hex')}` };
    const a = await startTestServer(flags);
    try {
      for (let round = 0; round < 3; round++) {
        const burst = await Promise.all(Array.from({ length: 3 * LIMIT }, () => adminCall(a, TEST_ADMIN_SECRET)));
        for (const r of burst) t.true(r.error === undefined || r.error.code === 'resource_exhausted', JSON.stringify(r.error));
      }
      // Every right secret gave its slot back, and the refused ones took none: the whole budget is there.
      for (let i = 0; i < LIMIT - 1; i++) t.is((await adminCall(a, 'wrong')).error?.code, 'unauthenticated', `wrong secret ${i + 1}`);
      t.is((await adminCall(a, TEST_ADMIN_SECRET)).error, undefined);
    } finally {
      await a.close();
    }
  });
}

test('without Redis the count is per process', async (t) => {
  const a = await startTestServer();
  const b = await startTestServer();
  try {
    for (let i = 0; i < LIMIT; i++) t.is((await adminCall(a, 'wrong')).error?.code, 'unauthenticated');
    t.is((await adminCall(a, TEST_ADMIN_SECRET)).error?.code, 'resource_exhausted');
    t.is((await adminCall(b, TEST_ADMIN_SECRET)).error, undefined);
  } finally {
    await a.close();
    await b.close();
  }
});
