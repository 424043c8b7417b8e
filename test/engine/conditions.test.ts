import test from 'ava';
import { Engine, LatchkeyError } from '../../engine/index.ts';

const DSL = `model
  schema 1.1
type user
type doc
  relations
    define c_int: [user with c_int]
    define c_uint: [user with c_uint]
    define c_double: [user with c_double]
    define c_bool: [user with c_bool]
    define c_string: [user with c_string]
    define c_duration: [user with c_duration]
    define c_timestamp: [user with c_timestamp]
    define c_ip: [user with c_ip]
    define c_list: [user with c_list]
    define c_map: [user with c_map]
condition c_int(x: int) {
  x > 10
}
condition c_uint(x: uint) {
  x > 10u
}
condition c_double(x: double) {
  x > 1.5
}
condition c_bool(x: bool) {
  x
}
condition c_string(x: string) {
  x.startsWith("ad") && x.matches("^[a-z]+$")
}
condition c_duration(x: duration) {
  x > duration("1h")
}
condition c_timestamp(x: timestamp, now: timestamp) {
  x + duration("1h") > now
}
condition c_ip(ip: ipaddress, cidr: string) {
  ip.in_cidr(cidr)
}
condition c_list(x: list<string>) {
  "admin" in x && x.exists(s, s == "ops")
}
condition c_map(x: map<int>) {
  "k" in x && x["k"] > 2
}
`;

const CASES: [string, Record<string, unknown>, Record<string, unknown>][] = [
  ['c_int', { x: 11 }, { x: 10 }],
  ['c_uint', { x: 11 }, { x: 3 }],
  ['c_double', { x: 1.75 }, { x: 1.25 }],
  ['c_bool', { x: true }, { x: false }],
  ['c_string', { x: 'admin' }, { x: 'Admin' }],
  ['c_duration', { x: '90m' }, { x: '30m' }],
  ['c_timestamp', { x: '2024-01-01T10:30:00Z', now: '2024-01-01T11:00:00Z' }, { x: '2024-01-01T09:00:00Z', now: '2024-01-01T11:00:00Z' }],
  ['c_ip', { ip: '10.1.2.3', cidr: '10.0.0.0/8' }, { ip: '192.168.0.1', cidr: '10.0.0.0/8' }],
  ['c_ip', { ip: '2001:db8::1', cidr: '2001:db8::/32' }, { ip: '2001:db9::1', cidr: '2001:db8::/32' }],
  ['c_list', { x: ['admin', 'ops'] }, { x: ['admin'] }],
  ['c_map', { x: { k: 3 } }, { x: { j: 3 } }],
];

async function engine(): Promise<Engine> {
  const e = new Engine();
  await e.writeModel({ dsl: DSL });
  const writes = [...new Set(CASES.map(([c]) => c))].map((c) => ({ user: 'user:a', relation: c, object: 'doc:1', condition: { name: c } }));
  await e.write({ writes });
  return e;
}

function reason(err: unknown): string | undefined {
  return err instanceof LatchkeyError ? err.reason : `not a LatchkeyError: ${String(err)}`;
}

test('every parameter type converts from request context and evaluates', async (t) => {
  const e = await engine();
  for (const [relation, yes, no] of CASES) {
    t.true((await e.check({ user: 'user:a', relation, object: 'doc:1', context: yes })).allowed, `${relation} ${JSON.stringify(yes)}`);
    t.false((await e.check({ user: 'user:a', relation, object: 'doc:1', context: no })).allowed, `${relation} ${JSON.stringify(no)}`);
  }
});

test('values of the wrong type are errors, not answers', async (t) => {
  const e = await engine();
  const bad: [string, Record<string, unknown>][] = [
    ['c_int', { x: 1.5 }],
    ['c_int', { x: 'eleven' }],
    ['c_uint', { x: -1 }],
    ['c_bool', { x: 'true' }],
    ['c_duration', { x: 'soon' }],
    ['c_timestamp', { x: 'yesterday', now: '2024-01-01T11:00:00Z' }],
    ['c_ip', { ip: 'not-an-ip', cidr: '10.0.0.0/8' }],
    ['c_list', { x: 'admin' }],
    ['c_map', { x: { k: 'three' } }],
  ];
  for (const [relation, context] of bad) {
    const err = await t.throwsAsync(e.check({ user: 'user:a', relation, object: 'doc:1', context }));
    t.is(reason(err), 'invalid_condition_context', `${relation} ${JSON.stringify(context)}`);
  }
});

test('a missing parameter is an error; tuple context wins over request context', async (t) => {
  const e = await engine();
  t.is(reason(await t.throwsAsync(e.check({ user: 'user:a', relation: 'c_timestamp', object: 'doc:1', context: { x: '2024-01-01T10:30:00Z' } }))), 'missing_condition_parameters');
  await e.write({ writes: [{ user: 'user:b', relation: 'c_int', object: 'doc:1', condition: { name: 'c_int', context: { x: 100 } } }] });
  t.true((await e.check({ user: 'user:b', relation: 'c_int', object: 'doc:1', context: { x: 1 } })).allowed);
  t.true((await e.check({ user: 'user:b', relation: 'c_int', object: 'doc:1' })).allowed);
});

test('an invalid cidr is an evaluation error', async (t) => {
  const e = await engine();
  const err = await t.throwsAsync(e.check({ user: 'user:a', relation: 'c_ip', object: 'doc:1', context: { ip: '10.0.0.1', cidr: '10.0.0.0' } }));
  t.is(reason(err), 'condition_evaluation_failed');
});

test('conditions in contextual tuples are validated like writes', async (t) => {
  const e = await engine();
  const ok = await e.check({
    user: 'user:c',
    relation: 'c_int',
    object: 'doc:1',
    contextualTuples: [{ user: 'user:c', relation: 'c_int', object: 'doc:1', condition: { name: 'c_int', context: { x: 50 } } }],
  });
  t.true(ok.allowed);
  const err = await t.throwsAsync(
    e.check({
      user: 'user:c',
      relation: 'c_int',
      object: 'doc:1',
      contextualTuples: [{ user: 'user:c', relation: 'c_int', object: 'doc:1', condition: { name: 'c_int', context: { y: 50 } } }],
    }),
  );
  t.is((err as LatchkeyError).details?.['openfga_code'], 2027);
});
