/**
 * The SCIM filter and PATCH path parser (auth/scim_filter.ts): the RFC 7644
 * §3.4.2.2 examples parse to the trees they mean, precedence and grouping
 * hold, bad filters are refused with a message, and a generated filter
 * printed and parsed again gives the same tree (fast-check). The evaluator
 * answers the RFC's examples against a resource.
 */
import test from 'ava';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { matches, parseFilter, parsePatchPath, printFilter, ScimFilterError, type AttrPath, type CompValue, type Filter } from '../../auth/scim_filter.ts';

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const exact = (p: string) => p === 'id' || p === 'externalid';

test('the RFC 7644 filter examples parse', (t) => {
  t.deepEqual(parseFilter('userName Eq "john"'), { kind: 'compare', op: 'eq', path: { name: 'userName' }, value: 'john' });
  t.deepEqual(parseFilter('name.familyName co "O\'Malley"'), { kind: 'compare', op: 'co', path: { name: 'name', sub: 'familyName' }, value: "O'Malley" });
  t.deepEqual(parseFilter(`${USER}:userName sw "J"`), { kind: 'compare', op: 'sw', path: { uri: USER, name: 'userName' }, value: 'J' });
  t.deepEqual(parseFilter('title pr'), { kind: 'pr', path: { name: 'title' } });
  t.deepEqual(parseFilter('meta.lastModified gt "2011-05-13T04:42:34Z"').kind, 'compare');
  t.deepEqual(parseFilter('emails[type eq "work" and value co "@example.com"]'), {
    kind: 'valuePath',
    path: { name: 'emails' },
    filter: {
      kind: 'and',
      left: { kind: 'compare', op: 'eq', path: { name: 'type' }, value: 'work' },
      right: { kind: 'compare', op: 'co', path: { name: 'value' }, value: '@example.com' },
    },
  });
  t.deepEqual(parseFilter(`${ENTERPRISE}:manager.value eq "26118915"`), { kind: 'compare', op: 'eq', path: { uri: ENTERPRISE, name: 'manager', sub: 'value' }, value: '26118915' });
  t.deepEqual(parseFilter('active eq True'), { kind: 'compare', op: 'eq', path: { name: 'active' }, value: true });
  t.deepEqual(parseFilter('x eq null'), { kind: 'compare', op: 'eq', path: { name: 'x' }, value: null });
  t.deepEqual(parseFilter('n ge -1.5e2'), { kind: 'compare', op: 'ge', path: { name: 'n' }, value: -150 });
});

test('or binds loosest, then and, then not; parentheses group', (t) => {
  const a = { kind: 'pr', path: { name: 'a' } } as const;
  const b = { kind: 'pr', path: { name: 'b' } } as const;
  const c = { kind: 'pr', path: { name: 'c' } } as const;
  t.deepEqual(parseFilter('a pr or b pr and c pr'), { kind: 'or', left: a, right: { kind: 'and', left: b, right: c } });
  t.deepEqual(parseFilter('(a pr or b pr) and c pr'), { kind: 'and', left: { kind: 'or', left: a, right: b }, right: c });
  t.deepEqual(parseFilter('not (a pr) and b pr'), { kind: 'and', left: { kind: 'not', filter: a }, right: b });
  t.deepEqual(parseFilter('a pr AND b pr OR c pr'), { kind: 'or', left: { kind: 'and', left: a, right: b }, right: c });
});

test('bad filters are refused with a reason', (t) => {
  for (const bad of ['', 'userName', 'userName eq', 'userName xx "a"', 'userName eq "a', 'userName eq john', '(userName pr', 'userName pr)', 'a pr and', 'emails[type eq "w"', 'emails[x[y pr]]', 'a.b.c pr', 'bad:uri:x pr', 'a eq "\\q"', 'a pr b pr', '&a pr']) {
    t.throws(() => parseFilter(bad), { instanceOf: ScimFilterError }, bad);
  }
  t.throws(() => parseFilter(`${'('.repeat(40)}a pr${')'.repeat(40)}`), { instanceOf: ScimFilterError, message: /nests at most/ });
  t.throws(() => parseFilter(`a eq "${'x'.repeat(5000)}"`), { instanceOf: ScimFilterError, message: /at most/ });
});

test('PATCH paths: attributes, extension attributes, value paths with a sub-attribute', (t) => {
  t.deepEqual(parsePatchPath('active'), { kind: 'attr', path: { name: 'active' } });
  t.deepEqual(parsePatchPath('name.givenName'), { kind: 'attr', path: { name: 'name', sub: 'givenName' } });
  t.deepEqual(parsePatchPath(`${ENTERPRISE}:department`), { kind: 'attr', path: { uri: ENTERPRISE, name: 'department' } });
  t.deepEqual(parsePatchPath('members[value eq "2819c223-7f76-453a-919d-413861904646"]'), {
    kind: 'valuePath', path: { name: 'members' }, filter: { kind: 'compare', op: 'eq', path: { name: 'value' }, value: '2819c223-7f76-453a-919d-413861904646' },
  });
  t.deepEqual(parsePatchPath('emails[type eq "work"].value'), {
    kind: 'valuePath', path: { name: 'emails' }, filter: { kind: 'compare', op: 'eq', path: { name: 'type' }, value: 'work' }, sub: 'value',
  });
  for (const bad of ['', 'a..b', 'emails[type eq "work"', 'emails[type eq "work"]value', 'name.givenName[x pr]']) t.throws(() => parsePatchPath(bad), { instanceOf: ScimFilterError }, bad);
});

test('the evaluator: case-insensitive strings except caseExact attributes, multi-valued attributes, extensions, value paths', (t) => {
  const user = {
    schemas: [USER, ENTERPRISE],
    id: 'Abc',
    userName: 'Bjensen@Example.com',
    name: { familyName: "O'Malley", givenName: 'Barbara' },
    active: true,
    emails: [{ value: 'bjensen@example.com', type: 'work', primary: true }, { value: 'babs@jensen.org', type: 'home' }],
    [ENTERPRISE]: { employeeNumber: '701984', manager: { value: '26118915' } },
  };
  const m = (f: string) => matches(parseFilter(f), user, USER, exact);
  t.true(m('userName eq "bjensen@example.com"'));
  t.false(m('id eq "abc"'), 'id is caseExact');
  t.true(m('id eq "Abc"'));
  t.true(m('name.familyName co "malley"'));
  t.true(m('emails co "jensen.org"'));
  t.true(m('emails[type eq "work" and value ew "example.com"]'));
  t.false(m('emails[type eq "home" and value ew "example.com"]'));
  t.true(m('emails.type eq "home"'));
  t.true(m(`${ENTERPRISE}:employeeNumber eq "701984"`));
  t.true(m(`${ENTERPRISE}:manager.value eq "26118915"`));
  t.true(m('active eq true and not (title pr)'));
  t.false(m('active eq false or userName sw "x"'));
  t.true(m(`${USER}:userName sw "BJ"`));
  t.true(m('title eq null'));
});

const NAME = fc.constantFrom('userName', 'displayName', 'emails', 'active', 'x-1', 'a_b', 'not', 'and');
const PATH: fc.Arbitrary<AttrPath> = fc.record(
  { uri: fc.constantFrom('urn:ietf:params:scim:schemas:extension:enterprise:2.0:User', 'urn:example:1.0'), name: NAME, sub: fc.constantFrom('value', 'type', 'givenName') },
  { requiredKeys: ['name'] },
);
const VALUE: fc.Arbitrary<CompValue> = fc.oneof(fc.string(), fc.integer().map((n) => (Object.is(n, -0) ? 0 : n)), fc.boolean(), fc.constant(null));
const OP = fc.constantFrom('eq', 'ne', 'co', 'sw', 'ew', 'gt', 'ge', 'lt', 'le' as const);

function filterOf(inValue: boolean): fc.Arbitrary<Filter> {
  return fc.letrec<{ f: Filter }>((tie) => ({
    f: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.record({ kind: fc.constant('pr' as const), path: inValue ? PATH.map((p) => ({ name: p.name })) : PATH }),
      fc.record({ kind: fc.constant('compare' as const), op: OP, path: inValue ? PATH.map((p) => ({ name: p.name })) : PATH, value: VALUE }),
      fc.record({ kind: fc.constantFrom('and' as const, 'or' as const), left: tie('f'), right: tie('f') }),
      fc.record({ kind: fc.constant('not' as const), filter: tie('f') }),
      ...(inValue ? [] : [fc.record({ kind: fc.constant('valuePath' as const), path: NAME.map((name) => ({ name })), filter: filterOf(true) })]),
    ),
  })).f;
}

test('printing a generated filter and parsing it again gives the same tree', (t) => {
  let compared = 0;
  t.notThrows(() =>
    fc.assert(
      fc.property(filterOf(false), (f) => {
        const text = printFilter(f);
        fc.pre(text.length <= 4096);
        compared++;
        // fast-check builds records without a prototype; the parser makes plain objects.
        return isDeepStrictEqual(parseFilter(text), JSON.parse(JSON.stringify(f)));
      }),
      { numRuns: 300 },
    ),
  );
  t.true(compared > 0, 'filters were printed and parsed');
});
