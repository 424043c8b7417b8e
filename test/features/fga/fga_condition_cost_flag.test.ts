/**
 * --fga-condition-cost-limit reaches the server's engine: with the default
 * (100, OpenFGA's) a condition that costs more is `condition_cost_exceeded`
 * on check_permissions over every protocol, never an allow; with the limit
 * raised the same check answers.
 */
import test from 'ava';
import type { Engine } from '../../../engine/index.ts';
import { PROTOCOLS, TEST_ADMIN_SECRET, startTestServer, type TestServer } from '../../helpers/server.ts';

const admin = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
const DSL = 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user with listed]\ncondition listed(names: list<string>) {\n  "admin" in names\n}\n';
// `"admin" in names` costs 1 + the list's size: 151 here.
const NAMES = [...Array.from({ length: 149 }, (_, i) => `u${i}`), 'admin'];

/** check_permissions over each protocol: `true`/`false`, or the error's reason. */
async function answers(srv: TestServer): Promise<Array<boolean | string>> {
  const m = await srv.call('fga_write_model', { dsl: DSL }, { protocol: 'rest', headers: admin });
  if (m.error) throw new Error(`fga_write_model: ${m.error.code} ${m.error.message}`);
  const s = await srv.call('signup', { email: `cost-${Date.now()}-${Math.random()}@example.com`, password: 'correct horse battery' }, { protocol: 'rest' });
  const token = s.body!['access_token'] as string;
  const uid = (s.body!['user'] as Record<string, unknown>)['id'] as string;
  const w = await srv.call('fga_write_tuples', { tuples: [{ user: `user:${uid}`, relation: 'viewer', object: 'doc:1', condition: { name: 'listed' } }] }, { protocol: 'rest', headers: admin });
  if (w.error) throw new Error(`fga_write_tuples: ${w.error.code} ${w.error.message}`);
  const out: Array<boolean | string> = [];
  for (const protocol of PROTOCOLS) {
    const r = await srv.call('check_permissions', { checks: [{ relation: 'viewer', object: 'doc:1', context: { names: NAMES } }] }, { protocol, headers: { authorization: `Bearer ${token}` } });
    out.push(r.error ? `${r.error.code}/${r.error.reason ?? ''}` : (r.body!['results'] as Array<{ allowed: boolean }>)[0]!.allowed);
  }
  return out;
}

test('by default a condition costing more than 100 is condition_cost_exceeded on every protocol', async (t) => {
  const srv = await startTestServer({ 'fga-store': 'memory' });
  try {
    t.is((srv.server.services.engine as Engine).limits.conditionCostLimit, 100);
    t.deepEqual(await answers(srv), PROTOCOLS.map(() => 'invalid_argument/condition_cost_exceeded'));
  } finally {
    await srv.close();
  }
});

test('--fga-condition-cost-limit 151 lets the same check answer', async (t) => {
  const srv = await startTestServer({ 'fga-store': 'memory', 'fga-condition-cost-limit': 151 });
  try {
    t.is((srv.server.services.engine as Engine).limits.conditionCostLimit, 151);
    t.deepEqual(await answers(srv), PROTOCOLS.map(() => true));
  } finally {
    await srv.close();
  }
});
