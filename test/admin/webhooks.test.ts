import test from 'ava';
import { mainBackends, openTestMain, type MainBackend } from '../helpers/main_databases.ts';
import {
  WebhookService,
  WEBHOOK_EVENTS,
  openAdminStores,
  verifyWebhook,
  type WebhookServiceOptions,
} from '../../admin/index.ts';
import { startReceiver } from './receiver.ts';
import { LatchkeyError } from '../../engine/errors.ts';

const SECRET = 'test-signing-secret';

async function setup(backend: MainBackend, extra: Partial<WebhookServiceOptions> = {}) {
  const m = await openTestMain(backend);
  const { webhooks: store } = await openAdminStores(m.database);
  const clock = { now: 1_700_000_000_000 };
  const make = (more: Partial<WebhookServiceOptions> = {}) =>
    new WebhookService({
      store,
      signingSecret: SECRET,
      ssrf: { allowPrivate: true },
      clock: () => clock.now,
      retrySchedule: [1000, 2000, 4000],
      jitter: 0,
      timeoutMs: 1500,
      ...extra,
      ...more,
    });
  return {
    main: m,
    clock,
    make,
    /** Marks the first delivery (by id) claimed until `leaseUntil`, as a worker that crashed after claiming it leaves it. */
    async crashAfterClaim(leaseUntil: number) {
      if (m.sequelize) {
        await m.sequelize.query(
          `UPDATE webhook_deliveries SET status = 'delivering', lease_until = ${leaseUntil} WHERE id = (SELECT id FROM (SELECT id FROM webhook_deliveries ORDER BY id LIMIT 1) AS x)`,
        );
        return;
      }
      const first = (await m.dynamo!.scan('webhook_deliveries')).map((d) => String(d['pk'])).sort()[0]!;
      await m.dynamo!.update('webhook_deliveries', first, '-', { set: { status: 'delivering', lease_until: leaseUntil, due_at: leaseUntil } });
    },
    close: () => m.close(),
  };
}

for (const backend of mainBackends()) {
  test(`webhook registry: add, get, update, list with pagination, delete (${backend})`, async (t) => {
    const env = await setup(backend);
    const svc = env.make();
    try {
      const a = await svc.add({ event_name: 'user.login', endpoint: 'http://127.0.0.1:9/a', headers: { 'x-token': 'abc' } });
      t.is(a.event_name, 'user.login');
      t.is(a.event_description, 'user login');
      t.true(a.enabled);
      t.deepEqual(a.headers, { 'x-token': 'abc' });
      // Several webhooks per event.
      const b = await svc.add({ event_name: 'user.login', endpoint: 'http://127.0.0.1:9/b', enabled: false });
      t.false(b.enabled);
      for (let i = 0; i < 10; i++) await svc.add({ event_name: 'user.signup', endpoint: `http://127.0.0.1:9/s${i}` });
      const page1 = await svc.list({ page: 1, limit: 5 });
      t.is(page1.webhooks.length, 5);
      t.deepEqual(page1.pagination, { page: 1, limit: 5, offset: 0, total: 12 });
      const page3 = await svc.list({ page: 3, limit: 5 });
      t.is(page3.webhooks.length, 2);
      t.is((await svc.list()).pagination.limit, 10);
      const updated = await svc.update({ id: b.id, enabled: true, endpoint: 'http://127.0.0.1:9/b2', headers: {} });
      t.true(updated.enabled);
      t.is(updated.endpoint, 'http://127.0.0.1:9/b2');
      t.deepEqual((await svc.get(b.id)).headers, {});
      await svc.delete(a.id);
      const gone = await t.throwsAsync(svc.get(a.id));
      t.is((gone as LatchkeyError).code, 'not_found');
      const e1 = await t.throwsAsync(svc.add({ event_name: 'user.nope', endpoint: 'http://127.0.0.1:9/' }));
      t.is((e1 as LatchkeyError).reason, 'invalid_event_name');
      const e2 = await t.throwsAsync(svc.add({ event_name: 'user.login', endpoint: 'http://127.0.0.1:9/', headers: { 'webhook-id': 'x' } }));
      t.is((e2 as LatchkeyError).reason, 'invalid_headers');
      const e3 = await t.throwsAsync(svc.list({ limit: 101 }));
      t.is((e3 as LatchkeyError).reason, 'invalid_pagination');
    } finally {
      await env.close();
    }
  });

  // Serial: while its receiver is down its port is free, and a receiver another test of this file starts meanwhile
  // could be given that port (it then got these deliveries, and the restart found the port taken).
  test.serial(`receiver down across a restart: retried, logged, delivered exactly once after recovery (${backend})`, async (t) => {
    const env = await setup(backend);
    const probe = await startReceiver();
    const port = probe.port;
    await probe.close(); // the receiver is down: connections are refused
    const first = env.make();
    try {
      const hook = await first.add({ event_name: 'user.access_revoked', endpoint: `http://127.0.0.1:${port}/hook` });
      t.is(await first.emit('user.access_revoked', { user: { id: 'u1', email: 'a@example.com' } }), 1);
      t.is(await first.emit('user.access_revoked', { user: { id: 'u2', email: 'b@example.com' } }), 1);
      t.is(await first.runOnce(), 2);
      // Not due yet: nothing is attempted before the backoff delay.
      t.is(await first.runOnce(), 0);
      await first.stop();

      // "Restart": a new service on the same database; the receiver comes back.
      const receiver = await startReceiver(port);
      try {
        const second = env.make();
        env.clock.now += 1000;
        t.is(await second.runOnce(), 2);
        env.clock.now += 10_000;
        t.is(await second.runOnce(), 0);
        t.is(receiver.received.length, 2);
        const ids = receiver.received.map((r) =>
          verifyWebhook(SECRET, r.headers as Record<string, string>, r.body, { now: Math.floor(env.clock.now / 1000) - 10 }),
        );
        t.is(new Set(ids).size, 2);
        const bodies = receiver.received.map((r) => JSON.parse(r.body) as { user: { id: string }; event_name: string; webhook_id: string });
        t.deepEqual(bodies.map((b) => b.user.id).sort(), ['u1', 'u2']);
        t.true(bodies.every((b) => b.event_name === 'user.access_revoked' && b.webhook_id === hook.id));
        const { webhook_logs } = await second.logs({ webhook_id: hook.id });
        t.is(webhook_logs.length, 4);
        t.deepEqual(webhook_logs.map((l) => l.outcome).sort(), ['delivered', 'delivered', 'failed', 'failed']);
        t.true(webhook_logs.filter((l) => l.outcome === 'failed').every((l) => l.http_status === 0 && l.error === 'ECONNREFUSED'));
        t.deepEqual(await second.outboxStats(), { delivered: 2 });
      } finally {
        await receiver.close();
      }
    } finally {
      await env.close();
    }
  });

  test(`a delivery claimed by a crashed worker is taken over after its lease, and two workers never double-send (${backend})`, async (t) => {
    const env = await setup(backend);
    const receiver = await startReceiver();
    try {
      const a = env.make({ leaseMs: 5000 });
      const b = env.make({ leaseMs: 5000 });
      await a.add({ event_name: 'user.created', endpoint: receiver.url });
      for (let i = 0; i < 6; i++) await a.emit('user.created', { user: { id: `u${i}` } });
      // Simulate a crash after claiming one row: it stays "delivering".
      await env.crashAfterClaim(env.clock.now + 5000);
      const [na, nb] = await Promise.all([a.runOnce(), b.runOnce()]);
      t.is(na + nb, 5);
      env.clock.now += 6000;
      t.is(await b.runOnce(), 1);
      t.is(receiver.received.length, 6);
      const ids = new Set(receiver.received.map((r) => r.headers['webhook-id']));
      t.is(ids.size, 6);
      t.deepEqual(await a.outboxStats(), { delivered: 6 });
    } finally {
      await receiver.close();
      await env.close();
    }
  });
}

test('every event reaches its webhooks signed; disabled webhooks get nothing', async (t) => {
  const env = await setup('sqlite');
  const receiver = await startReceiver();
  try {
    const svc = env.make();
    for (const event of WEBHOOK_EVENTS) await svc.add({ event_name: event, endpoint: receiver.url, headers: { 'x-app': 'demo' } });
    await svc.add({ event_name: 'user.login', endpoint: receiver.url + '?disabled', enabled: false });
    for (const event of WEBHOOK_EVENTS) t.is(await svc.emit(event, { user: { id: 'u-1', email: 'u@example.com' } }), 1);
    await svc.runOnce();
    t.is(receiver.received.length, WEBHOOK_EVENTS.length);
    const seen = new Set<string>();
    const events = receiver.received.map((r) => {
      t.is(r.headers['x-app'], 'demo');
      t.is(r.headers['content-type'], 'application/json');
      verifyWebhook(SECRET, r.headers as Record<string, string>, r.body, { now: Math.floor(env.clock.now / 1000), seen });
      return (JSON.parse(r.body) as { event_name: string }).event_name;
    });
    t.deepEqual(events.sort(), [...WEBHOOK_EVENTS].sort());
    t.false(receiver.received.some((r) => r.path.includes('disabled')));
  } finally {
    await receiver.close();
    await env.close();
  }
});

test('D3: 500, then a timeout, then a 302 to an internal address, then 200: each attempt logged, one delivery', async (t) => {
  const env = await setup('sqlite', { timeoutMs: 400 });
  const receiver = await startReceiver();
  const internal = await startReceiver();
  try {
    const svc = env.make();
    const hook = await svc.add({ event_name: 'user.deleted', endpoint: receiver.url });
    const steps = [
      (res: import('node:http').ServerResponse) => {
        res.writeHead(500);
        res.end('boom');
      },
      () => {
        /* never answers: the attempt must time out */
      },
      (res: import('node:http').ServerResponse) => {
        res.writeHead(302, { location: internal.url });
        res.end();
      },
      (res: import('node:http').ServerResponse) => {
        res.writeHead(200);
        res.end('thanks');
      },
    ];
    let n = 0;
    receiver.handler = (_req, res) => steps[n++]!(res);
    await svc.emit('user.deleted', { user: { id: 'gone' } });
    for (const advance of [0, 1000, 2000, 4000]) {
      env.clock.now += advance;
      t.is(await svc.runOnce(), 1);
    }
    t.is(await svc.runOnce(), 0);
    t.is(internal.received.length, 0);
    t.is(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size, 1);
    const logs = (await svc.logs({ webhook_id: hook.id })).webhook_logs.sort((a, b) => a.attempt - b.attempt);
    t.deepEqual(
      logs.map((l) => [l.attempt, l.http_status, l.outcome, l.error]),
      [
        [1, 500, 'failed', 'non_2xx_status'],
        [2, 0, 'failed', 'timeout'],
        [3, 302, 'failed', 'redirect_not_followed'],
        [4, 200, 'delivered', ''],
      ],
    );
    t.is(logs[0]!.response, 'boom');
    t.true(logs[1]!.duration_ms >= 350);
    t.is(logs.filter((l) => l.outcome === 'delivered').length, 1);
    t.deepEqual(await svc.outboxStats(), { delivered: 1 });
  } finally {
    await receiver.close();
    await internal.close();
    await env.close();
  }
});

test('retries stop after the schedule runs out and the delivery is marked failed', async (t) => {
  const env = await setup('sqlite');
  const receiver = await startReceiver();
  try {
    const svc = env.make();
    receiver.handler = (_r, res) => {
      res.writeHead(503);
      res.end();
    };
    await svc.add({ event_name: 'user.login', endpoint: receiver.url });
    await svc.emit('user.login', {});
    for (let i = 0; i < 6; i++) {
      await svc.runOnce();
      env.clock.now += 10_000;
    }
    t.is(receiver.received.length, 4); // first attempt + 3 retries
    t.deepEqual(await svc.outboxStats(), { failed: 1 });
  } finally {
    await receiver.close();
    await env.close();
  }
});

test('D4: verification rejects a changed body, an old timestamp and a replayed id; 10 MiB answers are capped; stalled headers time out', async (t) => {
  const env = await setup('sqlite', { maxResponseBytes: 1024 * 1024 });
  const receiver = await startReceiver();
  try {
    // A deadline no loaded machine reaches while a capped answer is read; the stalled headers below get a short one.
    const svc = env.make({ timeoutMs: 10_000 });
    const hook = await svc.add({ event_name: 'user.signup', endpoint: receiver.url });
    const big = Buffer.alloc(10 * 1024 * 1024, 'a');
    receiver.handler = (_r, res) => {
      res.writeHead(200);
      res.end(big);
    };
    await svc.emit('user.signup', { user: { id: 'x' } });
    await svc.runOnce();
    const got = receiver.received[0]!;
    const now = Math.floor(env.clock.now / 1000);
    const headers = got.headers as Record<string, string>;
    t.truthy(verifyWebhook(SECRET, headers, got.body, { now }));
    const tampered = got.body.replace('"x"', '"y"');
    t.is((t.throws(() => verifyWebhook(SECRET, headers, tampered, { now })) as LatchkeyError).reason, 'invalid_signature');
    t.is((t.throws(() => verifyWebhook(SECRET, headers, got.body, { now: now + 301 })) as LatchkeyError).reason, 'timestamp_out_of_tolerance');
    t.is((t.throws(() => verifyWebhook('other', headers, got.body, { now })) as LatchkeyError).reason, 'invalid_signature');
    const seen = new Set<string>();
    verifyWebhook(SECRET, headers, got.body, { now, seen });
    t.is((t.throws(() => verifyWebhook(SECRET, headers, got.body, { now, seen })) as LatchkeyError).reason, 'replayed_delivery');
    const [log] = (await svc.logs({ webhook_id: hook.id })).webhook_logs;
    t.is(log!.outcome, 'delivered');
    t.is(log!.error, 'response_truncated');
    t.true(log!.response.length <= 4096);

    // Headers that never come: aborted at the deadline.
    const short = env.make({ timeoutMs: 300 });
    receiver.handler = () => {};
    env.clock.now += 1000;
    const started = Date.now();
    await short.emit('user.signup', { user: { id: 'y' } });
    await short.runOnce();
    t.true(Date.now() - started < 2000);
    const latest = (await svc.logs({ webhook_id: hook.id })).webhook_logs[0]!;
    t.is(latest.error, 'timeout');
  } finally {
    await receiver.close();
    await env.close();
  }
});

test('D1: private, loopback, link-local, metadata and non-http endpoints are refused with no connection made', async (t) => {
  const env = await setup('sqlite');
  const listener = await startReceiver();
  const p = listener.port;
  try {
    const svc = env.make({ ssrf: { allowPrivate: false } });
    const urls = [
      `http://127.0.0.1:${p}/`,
      `http://[::1]:${p}/`,
      'http://169.254.169.254/latest/meta-data/',
      'http://10.0.0.1/',
      `http://[::ffff:127.0.0.1]:${p}/`,
      `http://2130706433:${p}/`,
      `http://0x7f.1:${p}/`,
      'http://[64:ff9b::a9fe:a9fe]/',
      'file:///etc/passwd',
      'gopher://127.0.0.1:70/',
      `http://localhost:${p}/`,
      'http://192.168.1.1/',
      'http://172.16.0.1/',
      'http://100.64.0.1/',
      'http://[fe80::1]/',
      'http://[fd00::1]/',
      'http://0.0.0.0/',
      'not a url',
    ];
    for (const endpoint of urls) {
      const err = await t.throwsAsync(svc.add({ event_name: 'user.login', endpoint }), undefined, endpoint);
      t.is((err as LatchkeyError).code, 'invalid_argument', endpoint);
      t.is((err as LatchkeyError).reason, 'invalid_endpoint', endpoint);
      const err2 = await t.throwsAsync(svc.testEndpoint({ event_name: 'user.login', endpoint }));
      t.is((err2 as LatchkeyError).reason, 'invalid_endpoint', endpoint);
    }
    t.is(listener.received.length, 0);
    t.is((await svc.list()).pagination.total, 0);
  } finally {
    await listener.close();
    await env.close();
  }
});

test('D2: DNS rebinding cannot reach an internal address: the dial is pinned to the validated one', async (t) => {
  const env = await setup('sqlite');
  // 127.0.0.2 plays a public address, 127.0.0.1 the internal one; both on one port.
  const good = await startReceiver(0, '127.0.0.2');
  const internal = await startReceiver(good.port, '127.0.0.1');
  try {
    let lookups = 0;
    const svc = env.make({
      ssrf: {
        allowPrivate: false,
        isBlocked: (address) => address !== '127.0.0.2',
        resolve: async () => [{ address: lookups++ === 0 ? '127.0.0.2' : '127.0.0.1', family: 4 }],
      },
    });
    const hook = await svc.add({ event_name: 'user.login', endpoint: `http://hooks.example.test:${good.port}/hook` });
    t.is(lookups, 1);
    await svc.emit('user.login', {});
    await svc.runOnce(); // the second lookup answers 127.0.0.1: refused, nothing dialled
    t.is(internal.received.length, 0);
    const [log] = (await svc.logs({ webhook_id: hook.id })).webhook_logs;
    t.is(log!.outcome, 'refused');
    t.is(log!.http_status, 0);

    // A resolver that answers "public" to the check and "internal" to any later
    // lookup: the pinned dial still reaches only the validated address.
    let calls = 0;
    const pinned = env.make({
      ssrf: {
        allowPrivate: false,
        isBlocked: (address) => address !== '127.0.0.2',
        resolve: async () => [{ address: calls++ % 2 === 0 ? '127.0.0.2' : '127.0.0.1', family: 4 }],
      },
    });
    const res = await pinned.testEndpoint({ event_name: 'user.login', endpoint: `http://hooks.example.test:${good.port}/t` });
    t.is(res.http_status, 200);
    t.is(good.received.length, 1);
    t.is(good.received[0]!.headers.host, `hooks.example.test:${good.port}`);
    t.is(internal.received.length, 0);
  } finally {
    await good.close();
    await internal.close();
    await env.close();
  }
});

test('test_endpoint posts a signed sample event and returns the status and response text', async (t) => {
  const env = await setup('sqlite');
  const receiver = await startReceiver();
  try {
    const svc = env.make();
    receiver.handler = (_r, res) => {
      res.writeHead(202);
      res.end('accepted');
    };
    const out = await svc.testEndpoint({ event_name: 'user.signup', endpoint: receiver.url, headers: { authorization: 'Bearer abc' } });
    t.deepEqual(out, { http_status: 202, response: 'accepted' });
    const got = receiver.received[0]!;
    t.is(got.headers.authorization, 'Bearer abc');
    verifyWebhook(SECRET, got.headers as Record<string, string>, got.body, { now: Math.floor(env.clock.now / 1000) });
    const body = JSON.parse(got.body) as { event_name: string; user: { email: string } };
    t.is(body.event_name, 'user.signup');
    t.is(body.user.email, 'test_endpoint@example.com');
    await receiver.close();
    const down = await t.throwsAsync(svc.testEndpoint({ event_name: 'user.signup', endpoint: receiver.url }));
    t.is((down as LatchkeyError).code, 'unavailable');
  } finally {
    await env.close();
  }
});
