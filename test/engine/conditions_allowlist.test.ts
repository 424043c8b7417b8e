/**
 * A model version being written may use in its conditions only what
 * OpenFGA's CEL environment declares (cel-go's standard library, the
 * parameter types and `ipaddress`): each function family the CEL library
 * has beyond it (string and bytes extensions, `cel.bind`, `math.`,
 * `strings.`, `optional`, `sets.`, `lists.`, `base64.`) is refused at write,
 * as DSL and as JSON, naming the condition and the function; a model using
 * every declared function, macro and name writes and evaluates; a version
 * stored before the refusal (written straight into the store, as an older
 * release left it) keeps loading and answering on the memory store and on
 * every SQL backend, while writing it again is refused.
 */
import test from 'ava';
import { ulid } from 'ulid';
import { Engine, LatchkeyError, MemoryStore, type AuthorizationModel, type TupleStore } from '../../engine/index.ts';
import { transformDslToModel } from '../../dsl/index.ts';
import { sqlBackends } from '../helpers/databases.ts';
import { openSqlStore } from './sql_helpers.ts';

/** A condition `c(s: string, l: list<int>, m: map<string>)` on doc#viewer with `expression`, as DSL. */
function dslWith(expression: string): string {
  return `model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user with c]\ncondition c(s: string, l: list<int>, m: map<string>) {\n  ${expression}\n}\n`;
}

/** The same model as OpenFGA JSON. */
function jsonWith(expression: string): AuthorizationModel {
  return {
    schema_version: '1.1',
    type_definitions: [
      { type: 'user' },
      { type: 'doc', relations: { viewer: { this: {} } }, metadata: { relations: { viewer: { directly_related_user_types: [{ type: 'user', condition: 'c' }] } } } },
    ],
    conditions: {
      c: {
        name: 'c',
        expression,
        parameters: {
          s: { type_name: 'TYPE_NAME_STRING' },
          l: { type_name: 'TYPE_NAME_LIST', generic_types: [{ type_name: 'TYPE_NAME_INT' }] },
          m: { type_name: 'TYPE_NAME_MAP', generic_types: [{ type_name: 'TYPE_NAME_STRING' }] },
        },
      },
    },
  } as AuthorizationModel;
}

/** [family, expression, the reference the refusal names]. Each expression type-checks in the CEL library or fails only for the missing function. */
const REFUSED: readonly (readonly [string, string, string])[] = [
  ['strings extension', 's.substring(1) == "ello"', 'substring'],
  ['strings extension', 's.split(",").size() == 1', 'split'],
  ['strings extension', 's.trim() == s', 'trim'],
  ['strings extension', 's.lowerAscii() == s', 'lowerAscii'],
  ['strings extension', 's.upperAscii() == s', 'upperAscii'],
  ['strings extension', '[s, s].join(",") == s', 'join'],
  ['strings extension', 's.indexOf("l") == 2', 'indexOf'],
  ['strings extension', 's.lastIndexOf("l") == 3', 'lastIndexOf'],
  ['strings extension', 's.replace("l", "L") == s', 'replace'],
  ['strings extension', 's.charAt(0) == "h"', 'charAt'],
  ['strings extension', 's.reverse() == s', 'reverse'],
  ['strings extension', '"%s".format([s]) == s', 'format'],
  ['strings extension', 'strings.quote(s) == s', 'strings.quote'],
  ['strings extension', 's.trim().lowerAscii() == s', 'trim'],
  ['encoders', 'b"ab".hex() == "6162"', 'hex'],
  ['encoders', 'b"ab".base64() == "YWI="', 'base64'],
  ['encoders', 'b"ab".string() == "ab"', 'string'],
  ['encoders', 'b"ab".at(0) == 97', 'at'],
  ['encoders', 'b"ab".json() == m', 'json'],
  ['encoders', 'base64.encode(b"ab") == "YWI="', 'base64.encode'],
  ['bindings', 'cel.bind(x, s, x == "hello")', 'cel.bind'],
  ['math', 'math.greatest(1, 2) == 2', 'math.greatest'],
  ['math', 'math.abs(-1) == 1', 'math.abs'],
  ['optional types', 'optional.of(s).hasValue()', 'optional.of'],
  ['optional types', 'optional.none() == optional.none()', 'optional.none'],
  ['optional types', 'optional == optional', 'optional'],
  ['sets', 'sets.contains(l, [1])', 'sets.contains'],
  ['lists', 'lists.range(3) == l', 'lists.range'],
  ['undeclared function', 'foo(s)', 'foo'],
  ['undeclared method', 's.foo()', 'foo'],
  ['a refused function inside a macro', 'l.exists(x, string(x).lowerAscii() == s)', 'lowerAscii'],
];

function refusal(err: unknown): Record<string, unknown> {
  if (!(err instanceof LatchkeyError)) return { not: String(err) };
  return { code: err.code, reason: err.reason, openfga_code: err.details?.['openfga_code'], condition: err.details?.['condition'], reference: err.details?.['reference'] };
}

test('each function family outside OpenFGA\'s CEL environment is refused at write, as DSL and as JSON, naming the condition and the function', async (t) => {
  const e = new Engine();
  for (const [family, expression, reference] of REFUSED) {
    for (const [form, input] of [['dsl', { dsl: dslWith(expression) }], ['json', jsonWith(expression)]] as const) {
      const err = await t.throwsAsync(e.writeModel(input));
      t.deepEqual(refusal(err), { code: 'invalid_argument', reason: 'invalid_authorization_model', openfga_code: 2056, condition: 'c', reference }, `${family} (${form}): ${expression}`);
      t.true(err!.message.includes(`condition 'c' does not compile: undeclared reference to '${reference}'`), err!.message);
    }
  }
  t.is(await e.readModel(), undefined, 'no refused version was stored');
});

test('syntax and overloads the environment lacks are refused too: optional field selection, two-variable comprehensions', async (t) => {
  const e = new Engine();
  for (const expression of ['m.?k.hasValue()', 'l.all(i, x, x > 0)', 'l.exists(i, x, x == 1)']) {
    const err = await t.throwsAsync(e.writeModel(jsonWith(expression)));
    t.like(refusal(err), { code: 'invalid_argument', reason: 'invalid_authorization_model', condition: 'c' }, expression);
  }
});

/** Every function, macro and name OpenFGA's environment declares, each condition within the default cost limit. */
const ALLOWED = `model
  schema 1.1
type user
type doc
  relations
    define strings: [user with strings]
    define conversions: [user with conversions]
    define time: [user with time]
    define zones: [user with zones]
    define macros: [user with macros]
    define transforms: [user with transforms]
    define map_filter: [user with map_filter]
    define ip: [user with ip]
    define names: [user with names]
condition strings(s: string) {
  size(s) == 5 && s.size() == 5 && s.contains("ell") && s.startsWith("he") && s.endsWith("lo") && s.matches("^h.*o$") && matches(s, "l+") && s in ["hello"]
}
condition conversions(i: int, u: uint, d: double, s: string) {
  int(d) == 2 && uint(i) == 3u && double(u) == 4.0 && string(i) == "3" && bytes(s) == b"hello" && bool("true") && int("7") == 7 && dyn(i) == 3 && type(i) == int && type(s) == string && type(b"") == bytes && type([1]) == list && type(null) == null_type && type(u) == uint && type(d) == double && type(true) == bool && type(type(1)) == type
}
condition time(t: timestamp, d: duration) {
  t == timestamp("2024-03-05T06:07:08.009Z") && d == duration("1h2m3s") && t.getFullYear() == 2024 && t.getMonth() == 2 && t.getDayOfYear() == 64 && t.getDayOfMonth() == 4 && t.getDate() == 5 && t.getDayOfWeek() == 2 && t.getHours() == 6 && t.getMinutes() == 7 && t.getSeconds() == 8 && t.getMilliseconds() == 9
}
condition zones(t: timestamp, d: duration) {
  d.getHours() == 1 && d.getMinutes() == 62 && d.getSeconds() == 3723 && d.getMilliseconds() == 250 && t.getHours("Europe/Paris") == 7 && t.getDate("+02:00") == 5 && type(t) == google.protobuf.Timestamp && type(d) == google.protobuf.Duration && int(t) == 1709618828 && string(d) == "3723.25s"
}
condition macros(l: list<int>, m: map<string>) {
  has(m.k) && l.all(x, x > 0) && l.exists(x, x == 2) && l.exists_one(x, x == 3) && "k" in m && 2 in l && type(m) == map
}
condition transforms(l: list<int>) {
  l.map(x, x * 2) == [2, 6] && l.filter(x, x > 2) == [3]
}
condition map_filter(l: list<int>) {
  l.map(x, x > 1, x) == [3]
}
condition ip(ip: ipaddress, a: string) {
  ip.in_cidr("10.0.0.0/8") && ipaddress(a) == ip
}
condition names(math: int, strings: string, l: list<int>) {
  math > 1 && strings == "x" && l.all(optional, optional > 0) && l.exists(cel, cel == math)
}
`;

/** [relation, a context under which the condition holds, one under which it does not]. */
const ALLOWED_CASES: readonly (readonly [string, Record<string, unknown>, Record<string, unknown>])[] = [
  ['strings', { s: 'hello' }, { s: 'jello' }],
  ['conversions', { i: 3, u: 4, d: 2.5, s: 'hello' }, { i: 3, u: 4, d: 3.5, s: 'hello' }],
  ['time', { t: '2024-03-05T06:07:08.009Z', d: '1h2m3s' }, { t: '2024-03-05T06:07:08.010Z', d: '1h2m3s' }],
  ['zones', { t: '2024-03-05T06:07:08.009Z', d: '1h2m3.25s' }, { t: '2024-03-05T06:07:08.009Z', d: '1h2m3.5s' }],
  ['macros', { l: [1, 2, 3], m: { k: 'v' } }, { l: [1, 2, 3, 3], m: { k: 'v' } }],
  ['transforms', { l: [1, 3] }, { l: [1, 4] }],
  ['map_filter', { l: [1, 3] }, { l: [1, 2] }],
  ['ip', { ip: '10.1.2.3', a: '10.1.2.3' }, { ip: '10.1.2.3', a: '10.1.2.4' }],
  ['names', { math: 2, strings: 'x', l: [1, 2] }, { math: 3, strings: 'x', l: [1, 2] }],
];

test('a model using every function, macro and name OpenFGA\'s CEL environment declares writes, as DSL and as JSON, and evaluates', async (t) => {
  for (const input of [{ dsl: ALLOWED }, transformDslToModel(ALLOWED)]) {
    const e = new Engine();
    await e.writeModel(input);
    await e.write({ writes: ALLOWED_CASES.map(([relation]) => ({ user: 'user:a', relation, object: 'doc:1', condition: { name: relation } })) });
    for (const [relation, yes, no] of ALLOWED_CASES) {
      t.true((await e.check({ user: 'user:a', relation, object: 'doc:1', context: yes })).allowed, `${relation} ${JSON.stringify(yes)}`);
      t.false((await e.check({ user: 'user:a', relation, object: 'doc:1', context: no })).allowed, `${relation} ${JSON.stringify(no)}`);
    }
  }
});

/** A model written before the refusal: its conditions use functions OpenFGA's environment lacks. */
const STORED_DSL = `model
  schema 1.1
type user
type doc
  relations
    define viewer: [user with named]
    define editor: [user with bound]
condition named(s: string) {
  s.lowerAscii().substring(0, 3) == "adm" && b"ab".hex() == "6162"
}
condition bound(n: int) {
  cel.bind(twice, n * 2, twice > 10)
}
`;

async function storedModelAnswers(t: import('ava').ExecutionContext, store: TupleStore): Promise<void> {
  const model = transformDslToModel(STORED_DSL);
  const id = ulid();
  await store.writeModel({ id, ...model });
  const e = new Engine({ store });
  await e.write({
    writes: [
      { user: 'user:a', relation: 'viewer', object: 'doc:1', condition: { name: 'named' } },
      { user: 'user:a', relation: 'editor', object: 'doc:1', condition: { name: 'bound', context: { n: 6 } } },
      { user: 'user:b', relation: 'editor', object: 'doc:2', condition: { name: 'bound', context: { n: 5 } } },
    ],
  });
  t.true((await e.check({ user: 'user:a', relation: 'viewer', object: 'doc:1', context: { s: 'ADMIN' } })).allowed);
  t.false((await e.check({ user: 'user:a', relation: 'viewer', object: 'doc:1', context: { s: 'guest' } })).allowed);
  t.true((await e.check({ user: 'user:a', relation: 'editor', object: 'doc:1', modelId: id })).allowed);
  t.false((await e.check({ user: 'user:b', relation: 'editor', object: 'doc:2' })).allowed);
  t.deepEqual((await e.listObjects({ user: 'user:a', relation: 'viewer', type: 'doc', context: { s: 'Admin' } })).objects, ['doc:1']);
  // Writing the same model as a new version is refused; the stored one stays the latest and keeps answering.
  const err = await t.throwsAsync(e.writeModel(model));
  t.like(refusal(err), { code: 'invalid_argument', reason: 'invalid_authorization_model', condition: 'named', reference: 'lowerAscii' });
  t.is((await e.readModel())?.id, id);
  // A second engine on the same store loads the stored version afresh.
  t.true((await new Engine({ store }).check({ user: 'user:a', relation: 'viewer', object: 'doc:1', context: { s: 'admin' } })).allowed);
}

test('a stored model version that uses functions outside the environment keeps loading and answering (memory store)', async (t) => {
  await storedModelAnswers(t, new MemoryStore());
});

for (const backend of sqlBackends()) {
  test(`a stored model version that uses functions outside the environment keeps loading and answering (sql ${backend})`, async (t) => {
    const opened = await openSqlStore(backend);
    try {
      await storedModelAnswers(t, opened.store);
    } finally {
      await opened.teardown();
    }
  });
}
