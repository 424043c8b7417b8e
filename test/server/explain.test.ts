/**
 * `explain_permission` and `_fga_explain` over GraphQL, REST and gRPC on the
 * real server: the same answer as `check_permissions`, the tree as JSON on
 * every protocol, the trust rules of `check_permissions` (a user asking about
 * another subject is refused), missing condition parameters by name, and the
 * admin variant audited and closed to users.
 */
import test from 'ava';
import { PROTOCOLS, TEST_ADMIN_SECRET, startTestServer, type TestServer } from '../helpers/server.ts';
import type { AdminService } from '../../admin/index.ts';

const PASSWORD = 'Str0ng!Passw0rd#2024';
const admin = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
const bearer = (token: unknown): Record<string, string> => ({ authorization: `Bearer ${String(token)}` });

const DSL = `model
  schema 1.1
type user
type group
  relations
    define member: [user]
type document
  relations
    define owner: [user]
    define blocked: [user]
    define timed: [user with in_hours]
    define viewer: [group#member] or owner
    define reader: viewer but not blocked
condition in_hours(hour: int) {
  hour < 18
}
`;

interface Node {
  kind: string;
  outcome: string;
  because?: string;
  tuple?: { object: string; relation: string; user: string };
  condition?: { name: string; missing_parameters?: string[] };
  children?: Node[];
}

const all = (n: Node): Node[] => [n, ...(n.children ?? []).flatMap(all)];

let srv: TestServer;
let uid = '';
let token = '';

test.before(async () => {
  srv = await startTestServer({ 'enable-explain-permission': true });
  const model = await srv.call('fga_write_model', { dsl: DSL }, { protocol: 'rest', headers: admin });
  if (model.error !== undefined) throw new Error(JSON.stringify(model.error));
  const s = await srv.call('signup', { email: 'explain@example.com', password: PASSWORD }, { protocol: 'rest' });
  uid = (s.body!['user'] as Record<string, unknown>)['id'] as string;
  token = s.body!['access_token'] as string;
  const w = await srv.call('fga_write_tuples', {
    tuples: [
      { user: `user:${uid}`, relation: 'member', object: 'group:eng' },
      { user: 'group:eng#member', relation: 'viewer', object: 'document:1' },
      { user: `user:${uid}`, relation: 'blocked', object: 'document:1' },
      { user: 'user:other', relation: 'owner', object: 'document:2' },
      { user: `user:${uid}`, relation: 'timed', object: 'document:3', condition: { name: 'in_hours' } },
    ],
  }, { protocol: 'rest', headers: admin });
  if (w.error !== undefined) throw new Error(JSON.stringify(w.error));
});

test.after.always(async () => {
  await srv?.close();
});

test('explain_permission on every protocol: the witness of an allow, the failed branches of a denial, the same answers as check_permissions', async (t) => {
  for (const protocol of PROTOCOLS) {
    const headers = bearer(token);
    const yes = await srv.call('explain_permission', { relation: 'viewer', object: 'document:1' }, { protocol, headers });
    t.is(yes.error, undefined, `${protocol} ${JSON.stringify(yes.error)}`);
    t.is(yes.body?.['allowed'], true, protocol);
    t.is(yes.body?.['relation'], 'viewer');
    t.is(yes.body?.['object'], 'document:1');
    const tree = yes.body?.['tree'] as Node;
    t.is(tree.outcome, 'allowed', protocol);
    t.deepEqual(
      all(tree).filter((n) => n.kind === 'tuple').map((n) => n.tuple),
      [
        { object: 'document:1', relation: 'viewer', user: 'group:eng#member' },
        { object: 'group:eng', relation: 'member', user: `user:${uid}` },
      ],
      protocol,
    );
    const no = await srv.call('explain_permission', { relation: 'reader', object: 'document:1' }, { protocol, headers });
    t.is(no.body?.['allowed'], false, protocol);
    const exclusion = (no.body?.['tree'] as Node).children![0]!;
    t.is(exclusion.kind, 'exclusion', protocol);
    t.is(exclusion.because, 'subtract_allowed', protocol);
    for (const [relation, object] of [['viewer', 'document:1'], ['reader', 'document:1'], ['owner', 'document:2']] as const) {
      const c = await srv.call('check_permissions', { checks: [{ relation, object }] }, { protocol, headers });
      const e = await srv.call('explain_permission', { relation, object }, { protocol, headers });
      t.is(e.body?.['allowed'], (c.body?.['results'] as Array<{ allowed: boolean }>)[0]!.allowed, `${protocol} ${relation} ${object}`);
    }
    // A contextual tuple counts for that one call.
    const ctx = await srv.call('explain_permission', { relation: 'owner', object: 'document:9', contextual_tuples: [{ user: `user:${uid}`, relation: 'owner', object: 'document:9' }] }, { protocol, headers });
    t.is(ctx.body?.['allowed'], true, protocol);
  }
});

test('explain_permission names the missing condition parameters, and the condition evaluated with its context', async (t) => {
  for (const protocol of PROTOCOLS) {
    const headers = bearer(token);
    const missing = await srv.call('explain_permission', { relation: 'timed', object: 'document:3' }, { protocol, headers });
    t.is(missing.error, undefined, protocol);
    t.is(missing.body?.['allowed'], false, protocol);
    t.is((missing.body?.['error'] as { reason: string }).reason, 'missing_condition_parameters', protocol);
    const leaf = all(missing.body?.['tree'] as Node).find((n) => n.because === 'missing_condition_parameters' && n.kind === 'tuple');
    t.deepEqual(leaf?.condition?.missing_parameters, ['hour'], protocol);
    const held = await srv.call('explain_permission', { relation: 'timed', object: 'document:3', context: { hour: 9 } }, { protocol, headers });
    t.is(held.body?.['allowed'], true, protocol);
    t.is(held.body?.['error'] ?? undefined, undefined, protocol);
    const falseNow = await srv.call('explain_permission', { relation: 'timed', object: 'document:3', context: { hour: 20 } }, { protocol, headers });
    t.is(falseNow.body?.['allowed'], false, protocol);
    t.true(all(falseNow.body?.['tree'] as Node).some((n) => n.because === 'condition_false'), protocol);
  }
});

test("explain_permission keeps check_permissions' trust rules: another user's subject is refused, a super-admin may name anyone, no credentials is 401", async (t) => {
  for (const protocol of PROTOCOLS) {
    const foreign = await srv.call('explain_permission', { relation: 'owner', object: 'document:2', user: 'user:other' }, { protocol, headers: bearer(token) });
    t.is(foreign.error?.code, 'permission_denied', protocol);
    t.is(foreign.body, undefined, protocol);
    const checked = await srv.call('check_permissions', { checks: [{ relation: 'owner', object: 'document:2' }], user: 'user:other' }, { protocol, headers: bearer(token) });
    t.is(checked.error?.code, 'permission_denied', protocol);
    const own = await srv.call('explain_permission', { relation: 'viewer', object: 'document:1', user: uid }, { protocol, headers: bearer(token) });
    t.is(own.body?.['allowed'], true, protocol);
    const asAdmin = await srv.call('explain_permission', { relation: 'owner', object: 'document:2', user: 'other' }, { protocol, headers: admin });
    t.is(asAdmin.body?.['allowed'], true, protocol);
    t.is((await srv.call('explain_permission', { relation: 'owner', object: 'document:2' }, { protocol })).error?.code, 'unauthenticated', protocol);
    const bad = await srv.call('explain_permission', { relation: 'nope', object: 'document:2' }, { protocol, headers: bearer(token) });
    t.is(bad.error?.code, 'invalid_argument', protocol);
  }
});

test('_fga_explain: any subject for a super-admin, refused to a user, audited', async (t) => {
  const audit = srv.server.services.admin as AdminService;
  const before = (await audit.audit.list({ action: 'admin.fga_explained' })).pagination.total;
  for (const protocol of PROTOCOLS) {
    const r = await srv.call('fga_explain', { user: 'user:other', relation: 'owner', object: 'document:2' }, { protocol, headers: admin });
    t.is(r.error, undefined, `${protocol} ${JSON.stringify(r.error)}`);
    t.is(r.body?.['allowed'], true, protocol);
    t.deepEqual(all(r.body?.['tree'] as Node).filter((n) => n.kind === 'tuple').map((n) => n.tuple), [{ object: 'document:2', relation: 'owner', user: 'user:other' }], protocol);
    const denied = await srv.call('fga_explain', { user: 'user:nobody', relation: 'viewer', object: 'document:1' }, { protocol, headers: admin });
    t.is(denied.body?.['allowed'], false, protocol);
    t.is((denied.body?.['tree'] as Node).outcome, 'denied', protocol);
    const asUser = await srv.call('fga_explain', { user: 'user:other', relation: 'owner', object: 'document:2' }, { protocol, headers: bearer(token) });
    t.truthy(asUser.error, protocol);
    t.true(['unauthenticated', 'permission_denied'].includes(asUser.error!.code), protocol);
    const badUser = await srv.call('fga_explain', { user: 'not a user', relation: 'owner', object: 'document:2' }, { protocol, headers: admin });
    t.is(badUser.error?.code, 'invalid_argument', protocol);
  }
  t.true((await audit.audit.list({ action: 'admin.fga_explained' })).pagination.total >= before + PROTOCOLS.length * 2);
});

test('explain_permission is off for users unless --enable-explain-permission allows it; a super-admin still explains', async (t) => {
  const plain = await startTestServer();
  try {
    await plain.call('fga_write_model', { dsl: DSL }, { protocol: 'rest', headers: admin });
    const s = await plain.call('signup', { email: 'explain-off@example.com', password: PASSWORD }, { protocol: 'rest' });
    const own = s.body!['access_token'] as string;
    const id = (s.body!['user'] as Record<string, unknown>)['id'] as string;
    for (const protocol of PROTOCOLS) {
      const r = await plain.call('explain_permission', { relation: 'viewer', object: 'document:1' }, { protocol, headers: bearer(own) });
      t.like(r.error, { code: 'failed_precondition', reason: 'explain_permission_disabled' }, protocol);
      const a = await plain.call('explain_permission', { relation: 'viewer', object: 'document:1', user: `user:${id}` }, { protocol, headers: admin });
      t.is(a.error, undefined, `${protocol}: a super-admin explains`);
    }
  } finally {
    await plain.close();
  }
});
