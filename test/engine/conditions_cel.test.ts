/**
 * Conditions evaluate as OpenFGA's do with cel-go: null comparisons,
 * heterogeneous numbers, durations and timestamps, ipaddress, lists and maps,
 * context conversion, and the evaluation cost limit.
 */
import test from 'ava';
import { Engine, type EngineOptions, LatchkeyError } from '../../engine/index.ts';
import { compileCel } from '../../engine/conditions/cel.ts';

function reason(err: unknown): string | undefined {
  return err instanceof LatchkeyError ? err.reason : `not a LatchkeyError: ${String(err)}`;
}

/** An engine whose model has one relation per condition, `rel_<name>`, and user:a holding each under its condition. */
async function engineWith(conditions: Record<string, { params: string; expr: string }>, options: EngineOptions = {}): Promise<Engine> {
  const names = Object.keys(conditions);
  if (names.some((n) => /\bany\b/u.test(conditions[n]!.params))) return engineFromJson(conditions);
  const dsl = [
    'model',
    '  schema 1.1',
    'type user',
    'type doc',
    '  relations',
    ...names.map((n) => `    define rel_${n}: [user with ${n}]`),
    ...names.map((n) => `condition ${n}(${conditions[n]!.params}) {\n  ${conditions[n]!.expr}\n}`),
    '',
  ].join('\n');
  const e = new Engine(options);
  await e.writeModel({ dsl });
  await e.write({ writes: names.map((n) => ({ user: 'user:a', relation: `rel_${n}`, object: 'doc:1', condition: { name: n } })) });
  return e;
}

const TYPE_NAMES: Record<string, string> = { any: 'ANY', int: 'INT', uint: 'UINT', double: 'DOUBLE', bool: 'BOOL', string: 'STRING', duration: 'DURATION', timestamp: 'TIMESTAMP', ipaddress: 'IPADDRESS' };

function paramType(t: string): Record<string, unknown> {
  const m = /^(list|map)<(\w+)>$/u.exec(t);
  if (m !== null) return { type_name: `TYPE_NAME_${m[1]!.toUpperCase()}`, generic_types: [{ type_name: `TYPE_NAME_${TYPE_NAMES[m[2]!]}` }] };
  return { type_name: `TYPE_NAME_${TYPE_NAMES[t]}` };
}

/** The same model in OpenFGA's JSON form, which can declare `any` parameters (the DSL cannot). */
async function engineFromJson(conditions: Record<string, { params: string; expr: string }>): Promise<Engine> {
  const names = Object.keys(conditions);
  const model = {
    schema_version: '1.1',
    type_definitions: [
      { type: 'user' },
      {
        type: 'doc',
        relations: Object.fromEntries(names.map((n) => [`rel_${n}`, { this: {} }])),
        metadata: { relations: Object.fromEntries(names.map((n) => [`rel_${n}`, { directly_related_user_types: [{ type: 'user', condition: n }] }])) },
      },
    ],
    conditions: Object.fromEntries(
      names.map((n) => [
        n,
        {
          name: n,
          expression: conditions[n]!.expr,
          parameters: Object.fromEntries(conditions[n]!.params.split(/,\s*(?![^<]*>)/u).map((p) => {
            const [k, t] = p.split(':').map((x) => x.trim()) as [string, string];
            return [k, paramType(t)];
          })),
        },
      ]),
    ),
  };
  const e = new Engine();
  await e.writeModel(model as never);
  await e.write({ writes: names.map((n) => ({ user: 'user:a', relation: `rel_${n}`, object: 'doc:1', condition: { name: n } })) });
  return e;
}

async function allowed(e: Engine, name: string, context: Record<string, unknown>): Promise<boolean> {
  return (await e.check({ user: 'user:a', relation: `rel_${name}`, object: 'doc:1', context })).allowed;
}

async function failure(e: Engine, name: string, context: Record<string, unknown>): Promise<string | undefined> {
  try {
    await e.check({ user: 'user:a', relation: `rel_${name}`, object: 'doc:1', context });
    return 'answered';
  } catch (err) {
    return reason(err);
  }
}

async function compiles(params: string, expr: string): Promise<boolean> {
  try {
    await engineWith({ c: { params, expr } });
    return true;
  } catch (err) {
    if (!(err instanceof LatchkeyError) || err.code !== 'invalid_argument') throw err;
    return false;
  }
}

test('x == null and x != null compile where cel-go allows them (duration, timestamp, ipaddress, any) and answer by value', async (t) => {
  const e = await engineWith({
    d_eq: { params: 'x: duration', expr: 'x == null' },
    d_ne: { params: 'x: duration', expr: 'x != null' },
    t_eq: { params: 'x: timestamp', expr: 'null == x' },
    t_ne: { params: 'x: timestamp', expr: 'null != x' },
    ip_eq: { params: 'x: ipaddress', expr: 'x == null' },
    ip_ne: { params: 'x: ipaddress', expr: 'x != null' },
  });
  t.false(await allowed(e, 'd_eq', { x: '1s' }));
  t.true(await allowed(e, 'd_ne', { x: '1s' }));
  t.false(await allowed(e, 't_eq', { x: '2024-01-01T00:00:00Z' }));
  t.true(await allowed(e, 't_ne', { x: '2024-01-01T00:00:00Z' }));
  t.false(await allowed(e, 'ip_eq', { x: '10.0.0.1' }));
  t.true(await allowed(e, 'ip_ne', { x: '10.0.0.1' }));
  const any = await engineWith({ a_eq: { params: 'x: any', expr: 'x == null' }, a_ne: { params: 'x: any', expr: 'null != x' } });
  t.true(await allowed(any, 'a_eq', { x: null }));
  t.false(await allowed(any, 'a_eq', { x: 0 }));
  t.false(await allowed(any, 'a_ne', { x: null }));
  t.true(await allowed(any, 'a_ne', { x: '' }));
  // A null value does not convert to these types: an error, not an answer.
  for (const name of ['d_eq', 'd_ne', 't_eq', 't_ne', 'ip_eq', 'ip_ne']) t.is(await failure(e, name, { x: null }), 'invalid_condition_context', name);
});

test('x == null does not compile on the types cel-go calls not nullable (string, int, uint, double, bool, list, map)', async (t) => {
  for (const type of ['string', 'int', 'uint', 'double', 'bool', 'list<string>', 'map<int>']) {
    t.false(await compiles(`x: ${type}`, 'x == null'), type);
    t.false(await compiles(`x: ${type}`, 'null != x'), type);
  }
});

test('heterogeneous numbers: any-typed values compare by value with ints, uints and doubles', async (t) => {
  const e = await engineWith({
    any_eq_int: { params: 'x: any', expr: 'x == 1' },
    any_in_ints: { params: 'x: any', expr: 'x in [1, 2, 3]' },
    map_eq: { params: 'x: map<any>', expr: 'x == {"a": 1, "b": 2u}' },
    list_eq: { params: 'x: list<any>', expr: 'x == [1, 2u, 3.0]' },
    int_lt_double: { params: 'x: int', expr: 'x < 1.5' },
    uint_gt_int: { params: 'x: uint', expr: 'x > -1' },
    lossy: { params: 'x: int', expr: 'dyn(x) < 9223372036854775807.0' },
    key: { params: 'x: map<string>, k: any', expr: '{1: "one"}[k] == "one"' },
  });
  t.true(await allowed(e, 'any_eq_int', { x: 1 }));
  t.false(await allowed(e, 'any_eq_int', { x: 1.5 }));
  t.true(await allowed(e, 'any_in_ints', { x: 2 }));
  t.true(await allowed(e, 'map_eq', { x: { a: 1, b: 2 } }));
  t.false(await allowed(e, 'map_eq', { x: { a: 1, b: 3 } }));
  t.true(await allowed(e, 'list_eq', { x: [1, 2, 3] }));
  t.true(await allowed(e, 'int_lt_double', { x: 1 }));
  t.false(await allowed(e, 'int_lt_double', { x: 2 }));
  t.true(await allowed(e, 'uint_gt_int', { x: 0 }));
  // cel-go compares an int with a double as float64: 2^63-1 becomes 2^63, so it is not less.
  t.false(await allowed(e, 'lossy', { x: '9223372036854775807' }));
  t.true(await allowed(e, 'key', { x: {}, k: 1 }));
});

test('durations and timestamps: Go duration strings, RFC 3339 with offsets, arithmetic and accessors', async (t) => {
  const e = await engineWith({
    grace: { params: 'issued: timestamp, now: timestamp, grace: duration', expr: 'issued + grace > now' },
    elapsed: { params: 'issued: timestamp, now: timestamp', expr: 'now - issued >= duration("1h30m")' },
    zero: { params: 'd: duration', expr: 'd == duration("0s")' },
    sum: { params: 'a: duration, b: duration', expr: 'a + b == duration("2h")' },
    hours: { params: 't: timestamp', expr: 't.getHours() == 10 && t.getDayOfWeek() == 1' },
    minus: { params: 't: timestamp', expr: 't - duration("24h") < timestamp("2024-01-01T00:00:00Z")' },
    ms: { params: 'd: duration', expr: 'd.getMilliseconds() == 250' },
  });
  t.true(await allowed(e, 'grace', { issued: '2024-01-01T10:00:00Z', now: '2024-01-01T10:20:00Z', grace: '30m' }));
  t.false(await allowed(e, 'grace', { issued: '2024-01-01T10:00:00Z', now: '2024-01-01T10:40:00Z', grace: '30m' }));
  t.true(await allowed(e, 'elapsed', { issued: '2024-01-01T12:00:00+02:00', now: '2024-01-01T11:30:00Z' }));
  t.true(await allowed(e, 'zero', { d: '0' }));
  t.true(await allowed(e, 'sum', { a: '1.5h', b: '+30m' }));
  t.true(await allowed(e, 'sum', { a: '1h59m59s', b: '1000ms' }));
  t.true(await allowed(e, 'hours', { t: '2024-01-01T10:15:00Z' }));
  t.true(await allowed(e, 'minus', { t: '2024-01-01T12:00:00Z' }));
  t.true(await allowed(e, 'ms', { d: '1.25s' }));
  for (const bad of ['1d', '', '.s', '1', 'h']) t.is(await failure(e, 'zero', { d: bad }), 'invalid_condition_context', `duration ${JSON.stringify(bad)}`);
  for (const bad of ['2024-01-01t10:00:00Z', '2024-01-01T10:00:00z', '2024-02-30T00:00:00Z', '2024-01-01T24:00:00Z', '2024-01-01 10:00:00Z', '2024-01-01T10:00Z']) {
    t.is(await failure(e, 'hours', { t: bad }), 'invalid_condition_context', `timestamp ${bad}`);
  }
});

test('timestamps keep nanoseconds (context, literals, arithmetic, string), duration + timestamp compiles, accessors take cel-go time zones', async (t) => {
  const e = await engineWith({
    after: { params: 'a: timestamp, b: timestamp', expr: 'a > b' },
    same: { params: 'a: timestamp, b: timestamp', expr: 'a == b' },
    nanos: { params: 't: timestamp', expr: 'string(t) == "2024-01-01T10:00:00.000000001Z" && t - duration("1ns") == timestamp("2024-01-01T10:00:00Z")' },
    grace: { params: 'issued: timestamp, now: timestamp, grace: duration', expr: 'grace + issued > now' },
    local: { params: 't: timestamp, zone: string', expr: 't.getHours(zone) == 9' },
  });
  t.true(await allowed(e, 'after', { a: '2024-01-01T10:00:00.000000001Z', b: '2024-01-01T10:00:00Z' }));
  t.false(await allowed(e, 'same', { a: '2024-01-01T10:00:00.000000001Z', b: '2024-01-01T10:00:00Z' }));
  t.true(await allowed(e, 'same', { a: '2024-01-01T12:00:00.5+02:00', b: '2024-01-01T10:00:00.500000000Z' }));
  t.true(await allowed(e, 'nanos', { t: '2024-01-01T10:00:00.000000001Z' }));
  t.true(await allowed(e, 'grace', { issued: '2024-01-01T10:00:00Z', now: '2024-01-01T10:20:00Z', grace: '30m' }));
  t.false(await allowed(e, 'grace', { issued: '2024-01-01T10:00:00Z', now: '2024-01-01T10:40:00Z', grace: '30m' }));
  t.true(await allowed(e, 'local', { t: '2024-01-01T07:00:00Z', zone: '+02:00' }));
  t.true(await allowed(e, 'local', { t: '2024-01-01T07:00:00Z', zone: '02:00' }));
  t.true(await allowed(e, 'local', { t: '2024-01-01T14:00:00Z', zone: 'America/New_York' }));
  t.true(await allowed(e, 'local', { t: '2024-07-01T13:00:00Z', zone: 'America/New_York' }));
  t.false(await allowed(e, 'local', { t: '2024-01-01T09:00:00Z', zone: '+05:30' }));
  t.is(await failure(e, 'local', { t: '2024-01-01T07:00:00Z', zone: 'Nowhere/Special' }), 'condition_evaluation_failed');
  t.is(await failure(e, 'local', { t: '2024-01-01T07:00:00Z', zone: '+0200' }), 'condition_evaluation_failed');
});

test('literals and values as cel-go reads them: bytes (escapes, raw, ordering, strict UTF-8), .5, maps with int keys, lists indexed by uint', async (t) => {
  // A JSON model: the expression text as written (the DSL reads fewer CEL forms than CEL has).
  const e = await engineFromJson({
    bytes: { params: 'x: string', expr: "b'ÿ' == b'\\303\\277' && br'\\x41' != b'\\x41' && b'a' < b'b' && bytes(x) > b'a'" },
    utf8: { params: 'x: bool', expr: "x && string(b'\\xff') == ''" },
    keys: { params: 'n: int', expr: "{1: 'one', 2: 'two'}.exists_one(k, k == n)" },
    lookup: { params: 'n: int', expr: "{1: 'one', 2: 'two'}[dyn(uint(n))] == 'two'" },
    index: { params: 'x: list<string>', expr: 'x[dyn(1u)] == "b"' },
    frac: { params: 'x: double', expr: 'x > .5' },
  });
  t.true(await allowed(e, 'bytes', { x: 'b' }));
  t.false(await allowed(e, 'bytes', { x: '' }));
  t.is(await failure(e, 'utf8', { x: true }), 'condition_evaluation_failed');
  t.true(await allowed(e, 'frac', { x: 0.75 }));
  t.false(await allowed(e, 'frac', { x: 0.25 }));
  t.true(await allowed(e, 'keys', { n: 2 }));
  t.false(await allowed(e, 'keys', { n: 3 }));
  t.true(await allowed(e, 'lookup', { n: 2 }));
  t.is(await failure(e, 'lookup', { n: 3 }), 'condition_evaluation_failed');
  t.true(await allowed(e, 'index', { x: ['a', 'b'] }));
  t.is(await failure(e, 'index', { x: ['a'] }), 'condition_evaluation_failed');
});

test('ipaddress: equality and in_cidr follow Go netip (IPv4-mapped and zoned addresses are distinct)', async (t) => {
  const e = await engineWith({
    eq: { params: 'ip: ipaddress, other: string', expr: 'ip == ipaddress(other)' },
    cidr: { params: 'ip: ipaddress, cidr: string', expr: 'ip.in_cidr(cidr)' },
  });
  t.true(await allowed(e, 'eq', { ip: '2001:db8::1', other: '2001:0db8:0:0:0:0:0:1' }));
  t.false(await allowed(e, 'eq', { ip: '10.0.0.1', other: '::ffff:10.0.0.1' }));
  t.false(await allowed(e, 'eq', { ip: 'fe80::1%eth0', other: 'fe80::1' }));
  t.true(await allowed(e, 'cidr', { ip: '10.1.2.3', cidr: '10.1.2.3/8' }));
  t.true(await allowed(e, 'cidr', { ip: '::ffff:10.0.0.1', cidr: '::ffff:10.0.0.0/104' }));
  t.false(await allowed(e, 'cidr', { ip: '::ffff:10.0.0.1', cidr: '10.0.0.0/8' }));
  t.false(await allowed(e, 'cidr', { ip: 'fe80::1%eth0', cidr: 'fe80::/10' }));
  t.true(await allowed(e, 'cidr', { ip: 'fe80::1', cidr: 'fe80::/10' }));
  for (const bad of ['10.0.0.0/08', '10.0.0.0/33', '10.0.0.0', 'fe80::%eth0/10', '10.0.0.0/-1']) t.is(await failure(e, 'cidr', { ip: '10.0.0.1', cidr: bad }), 'condition_evaluation_failed', bad);
  for (const bad of ['010.0.0.1', '10.0.0', 'fe80::1%']) t.is(await failure(e, 'cidr', { ip: bad, cidr: '10.0.0.0/8' }), 'invalid_condition_context', bad);
});

test('lists and maps: macros, membership, indexing, concatenation, size', async (t) => {
  const e = await engineWith({
    list_all: { params: 'x: list<int>', expr: 'x.all(v, v > 0) && x.exists_one(v, v == 2)' },
    list_map: { params: 'x: list<int>', expr: 'x.map(v, v * 2)[1] == 4' },
    list_filter: { params: 'x: list<int>', expr: 'x.filter(v, v > 1).size() == 2' },
    list_cat: { params: 'x: list<int>', expr: '(x + [9])[3] == 9 && x[0] == 1' },
    map_ops: { params: 'm: map<string>', expr: '"role" in m && m["role"] == "admin" && m.all(k, k.size() > 1) && size(m) == 2' },
    nested: { params: 'm: map<any>', expr: 'm.tags.exists(t, t == "ops") && m.level >= 2' },
  });
  t.true(await allowed(e, 'list_all', { x: [1, 2, 3] }));
  t.false(await allowed(e, 'list_all', { x: [1, 2, 2] }));
  t.true(await allowed(e, 'list_map', { x: [1, 2, 3] }));
  t.false(await allowed(e, 'list_map', { x: [1, 3, 3] }));
  t.true(await allowed(e, 'list_filter', { x: [1, 2, 3] }));
  t.false(await allowed(e, 'list_filter', { x: [1, 1, 3] }));
  t.true(await allowed(e, 'list_cat', { x: [1, 2, 3] }));
  t.is(await failure(e, 'list_cat', { x: [1, 2] }), 'condition_evaluation_failed');
  t.true(await allowed(e, 'map_ops', { m: { role: 'admin', team: 'x' } }));
  t.false(await allowed(e, 'map_ops', { m: { role: 'admin', t: 'x' } }));
  t.true(await allowed(e, 'nested', { m: { tags: ['dev', 'ops'], level: 2 } }));
  t.is(await failure(e, 'nested', { m: { tags: ['ops'] } }), 'condition_evaluation_failed');
  // false && (missing key) is false: && absorbs the error, as in cel-go.
  t.false(await allowed(e, 'nested', { m: { tags: ['dev'] } }));
});

test('context values convert per parameter type as OpenFGA converts them', async (t) => {
  const e = await engineWith({
    i: { params: 'x: int', expr: 'x == 1000' },
    u: { params: 'x: uint', expr: 'x == 7u' },
    d: { params: 'x: double', expr: 'x == 2.5' },
  });
  t.true(await allowed(e, 'i', { x: '1000' }));
  t.true(await allowed(e, 'i', { x: '1e3' }));
  t.true(await allowed(e, 'i', { x: 1000.0 }));
  t.true(await allowed(e, 'u', { x: '7' }));
  t.true(await allowed(e, 'd', { x: '2.5' }));
  for (const bad of [' 1000', '1000 ', '0x3e8', '1_000', 'NaN', '', true, null, [1000]]) t.is(await failure(e, 'i', { x: bad }), 'invalid_condition_context', JSON.stringify(bad));
  t.is(await failure(e, 'i', { x: '9223372036854775808' }), 'invalid_condition_context');
  t.is(await failure(e, 'u', { x: -1 }), 'invalid_condition_context');
  t.is(await failure(e, 'u', { x: '18446744073709551616' }), 'invalid_condition_context');
});

test('the cost limit (100) makes an expensive evaluation an error, never an answer; cheaper ones answer', async (t) => {
  const e = await engineWith({
    member: { params: 'x: list<string>', expr: '"admin" in x' },
    exists: { params: 'x: list<string>', expr: 'x.exists(s, s == "admin")' },
    either: { params: 'x: list<string>, ok: bool', expr: 'ok || "admin" in x' },
  });
  const list = (n: number): string[] => Array.from({ length: n }, (_, i) => `u${i}`);
  // `"admin" in x` costs 1 (the identifier) + size(x): 99 elements cost 100, at the limit.
  t.false(await allowed(e, 'member', { x: list(99) }));
  t.is(await failure(e, 'member', { x: list(100) }), 'condition_cost_exceeded');
  t.is(await failure(e, 'member', { x: [...list(200), 'admin'] }), 'condition_cost_exceeded');
  t.is(await failure(e, 'exists', { x: list(40) }), 'condition_cost_exceeded');
  t.false(await allowed(e, 'exists', { x: list(5) }));
  // `||` short-circuits: the right side is never evaluated, so it costs nothing.
  t.true(await allowed(e, 'either', { x: list(500), ok: true }));
  t.is(await failure(e, 'either', { x: list(500), ok: false }), 'condition_cost_exceeded');
});

test('conditionCostLimit: a raised limit lets a costlier condition answer, a lowered one stops a cheap one; check and listObjects alike, and engines for other stores inherit it', async (t) => {
  const conditions = { member: { params: 'x: list<string>', expr: '"admin" in x' } };
  const list = (n: number): string[] => Array.from({ length: n }, (_, i) => `u${i}`);
  // Costs 1 + 151 = 152.
  const context = { x: [...list(150), 'admin'] };
  const byDefault = await engineWith(conditions);
  t.is(byDefault.limits.conditionCostLimit, 100);
  t.is(await failure(byDefault, 'member', context), 'condition_cost_exceeded');
  const raised = await engineWith(conditions, { conditionCostLimit: 152 });
  t.true(await allowed(raised, 'member', context));
  t.false(await allowed(raised, 'member', { x: list(151) }));
  t.deepEqual((await raised.listObjects({ user: 'user:a', relation: 'rel_member', type: 'doc', context })).objects, ['doc:1']);
  t.is(await failure(raised, 'member', { x: [...list(151), 'admin'] }), 'condition_cost_exceeded');
  const lowered = await engineWith(conditions, { conditionCostLimit: 3 });
  t.true(await allowed(lowered, 'member', { x: ['admin'] }));
  t.is(await failure(lowered, 'member', { x: ['a', 'b', 'admin'] }), 'condition_cost_exceeded');
  const listError = await t.throwsAsync(lowered.listObjects({ user: 'user:a', relation: 'rel_member', type: 'doc', context: { x: ['a', 'b', 'admin'] } }));
  t.is(reason(listError), 'condition_cost_exceeded');
  // A model read back from the store (not the instance that wrote it) is compiled with the same limit.
  const reader = new Engine({ store: raised.store, conditionCostLimit: 152 });
  t.true((await reader.check({ user: 'user:a', relation: 'rel_member', object: 'doc:1', context })).allowed);
  const other = await raised.createStore({ name: 'other' });
  t.is(raised.forStore(other.id).limits.conditionCostLimit, 152);
  for (const bad of [0, -1, 1.5, 10_000_001, '100']) {
    const err = t.throws(() => new Engine({ conditionCostLimit: bad as number }));
    t.is(reason(err), 'invalid_option', String(bad));
  }
});

test('(internal compileCel) evaluation costs follow cel-go CostTracker rules', (t) => {
  const cost = (expr: string, vars: Record<string, string>, values: Record<string, unknown>): number => compileCel(expr, vars).run(values).cost;
  t.is(cost('x > 10', { x: 'int' }, { x: 11n }), 2);
  t.is(cost('x.startsWith("ab")', { x: 'string' }, { x: 'abc' }), 2);
  t.is(cost('x == "abcdefghijklmnop"', { x: 'string' }, { x: 'abcdefghijklmnopq' }), 3);
  t.is(cost('"a" in x', { x: 'list<string>' }, { x: ['b', 'c', 'd'] }), 4);
  t.is(cost('m["k"] > 1', { m: 'map<string, int>' }, { m: new Map([['k', 2n]]) }), 3);
  t.is(cost('[1, 2] == [1, 2]', {}, {}), 21);
  t.is(cost('-1 < 0', {}, {}), 1);
  // exists over [1, 2, 3] stopping at 2: list 10, two steps with their predicate (2 each), three loop conditions (3 each), step accumulator reads (1 each), result 1.
  t.is(cost('[1, 2, 3].exists(v, v > 1)', {}, {}), 10 + 2 * 2 + 3 * 3 + 2 + 1);
  t.is(cost('true || x > 1', { x: 'int' }, { x: 1n }), 0);
});

test('(internal compileCel) each compiled program tracks its own cost, also when another has the same expression', (t) => {
  const first = compileCel('"a" in x', { x: 'list<string>' });
  const second = compileCel('"a" in x', { x: 'list<string>' });
  const x = Array.from({ length: 150 }, (_, i) => `u${i}`);
  t.is(first.run({ x }).cost, 151);
  t.is(second.run({ x }).cost, 151);
  t.throws(() => first.run({ x }, 100), { message: /cost limit exceeded/u });
  t.throws(() => second.run({ x }, 100), { message: /cost limit exceeded/u });
});
