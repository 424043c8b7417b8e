import test from 'ava';
import fc from 'fast-check';
import { openSequelize } from '../../engine/sql/sqlite_sequelize.ts';
import { createTestDatabase } from '../helpers/databases.ts';
import { AuditLog, isPrivateAddress, migrateAdminStore, validateEndpoint, verifyWebhook, signWebhook } from '../../admin/index.ts';
import type { LatchkeyError } from '../../engine/errors.ts';

const runs = (local: number): number => (process.env.CI ? local * 5 : local);

const BLOCKED_V4: Array<[number, number]> = [
  [0x00000000, 8], [0x0a000000, 8], [0x64400000, 10], [0x7f000000, 8], [0xa9fe0000, 16], [0xac100000, 12],
  [0xc0000000, 24], [0xc0000200, 24], [0xc0586300, 24], [0xc0a80000, 16], [0xc6120000, 15], [0xc6336400, 24],
  [0xcb007100, 24], [0xe0000000, 4], [0xf0000000, 4],
];
const inBlocked = (n: number): boolean => BLOCKED_V4.some(([net, bits]) => (n >>> (32 - bits)) === (net >>> (32 - bits)));
const dotted = (n: number): string => [24, 16, 8, 0].map((s) => (n >>> s) & 0xff).join('.');
const hex4 = (n: number): string => `${((n >>> 16) & 0xffff).toString(16)}:${(n & 0xffff).toString(16)}`;

test('SSRF guard: an IPv4 address is refused exactly when it is in a blocked range, in every spelling', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 0, max: 0xffffffff }), async (n) => {
      const blocked = inBlocked(n);
      t.is(isPrivateAddress(dotted(n), 4), blocked);
      t.is(isPrivateAddress(`::ffff:${dotted(n)}`, 6), blocked);
      for (const url of [`http://${dotted(n)}/`, `http://${n}/`, `http://0x${n.toString(16)}/`, `http://[::ffff:${hex4(n)}]/`]) {
        const outcome = await validateEndpoint(url, { allowPrivate: false }).then(
          () => 'ok',
          (e: LatchkeyError) => e.reason,
        );
        t.is(outcome, blocked ? 'invalid_endpoint' : 'ok', url);
      }
    }),
    { numRuns: runs(200) },
  );
});

test('SSRF guard: NAT64, 6to4, Teredo, ULA, link-local and multicast IPv6 are always refused', async (t) => {
  const prefixes = ['64:ff9b::', '2002:', '2001:0:', 'fc00:', 'fd12:', 'fe80::', 'ff02::'];
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...prefixes), fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 2, maxLength: 2 }), async (prefix, tail) => {
      const addr = prefix.endsWith('::') ? `${prefix}${tail.map((x) => x.toString(16)).join(':')}` : `${prefix}${tail.map((x) => x.toString(16)).join(':')}::1`;
      const e = await validateEndpoint(`http://[${addr}]/`, { allowPrivate: false }).catch((err: LatchkeyError) => err);
      t.is((e as LatchkeyError).reason, 'invalid_endpoint', addr);
    }),
    { numRuns: runs(100) },
  );
});

test('signatures: any change to the id, the timestamp or one byte of the body is rejected', (t) => {
  fc.assert(
    fc.property(fc.string({ minLength: 1 }), fc.uuid(), fc.integer({ min: 1, max: 2_000_000_000 }), fc.nat(), (body, id, ts, pos) => {
      const headers = signWebhook('k', id, ts, body);
      t.is(verifyWebhook('k', headers, body, { now: ts }), id);
      const i = pos % body.length;
      const changed = body.slice(0, i) + String.fromCharCode((body.charCodeAt(i) + 1) % 0xffff) + body.slice(i + 1);
      t.throws(() => verifyWebhook('k', headers, changed, { now: ts }));
      t.throws(() => verifyWebhook('k', { ...headers, 'webhook-id': `${id}x` }, body, { now: ts }));
      t.throws(() => verifyWebhook('k', { ...headers, 'webhook-timestamp': String(ts + 1) }, body, { now: ts }));
    }),
    { numRuns: runs(100) },
  );
});

test('audit log: concatenated pages equal the unpaginated read, for any filter and page size', async (t) => {
  const db = await createTestDatabase('sqlite');
  const sequelize = openSequelize(db.url, { logging: false });
  try {
    await migrateAdminStore(sequelize);
    const log = new AuditLog({ sequelize });
    const actions = ['a.one', 'a.two', 'a.three'];
    for (let i = 0; i < 37; i++) {
      await log.record({ actor_type: 'system', actor_id: `u${i % 4}`, action: actions[i % 3]!, resource_type: 'thing', resource_id: String(i) });
    }
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 15 }), fc.option(fc.constantFrom(...actions), { nil: undefined }), fc.option(fc.constantFrom('u0', 'u1', 'u2', 'u3'), { nil: undefined }), async (limit, action, actorId) => {
        const filter = { ...(action ? { action } : {}), ...(actorId ? { actor_id: actorId } : {}) };
        const all = await log.list({ ...filter, pagination: { limit: 100 } });
        const pages: string[] = [];
        for (let page = 1; ; page++) {
          const p = await log.list({ ...filter, pagination: { page, limit } });
          t.is(p.pagination.total, all.pagination.total);
          t.is(p.pagination.offset, (page - 1) * limit);
          pages.push(...p.audit_logs.map((r) => r.id));
          if (p.audit_logs.length < limit) break;
        }
        t.deepEqual(pages, all.audit_logs.map((r) => r.id));
      }),
      { numRuns: runs(30) },
    );
  } finally {
    await sequelize.close();
    await db.drop();
  }
});
