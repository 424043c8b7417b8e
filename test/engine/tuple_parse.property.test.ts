/**
 * The object and user parsers scan a string once; they must accept and split
 * exactly what OpenFGA's rules (written here as regular expressions, the
 * plain statement of them) accept, for every string.
 */
import test from 'ava';
import fc from 'fast-check';
import { formatUser, tryParseObject, tryParseUser, type ParsedObject, type ParsedUser } from '../../engine/tuple.ts';

// The rules, stated directly: no whitespace or control characters, at most 512 characters.
// eslint-disable-next-line no-control-regex
const BAD = /[\s\u0000-\u001f\u007f]/u;
const RELATION = /^[^:#@*\s]{1,50}$/u;

function ruleObject(s: string): ParsedObject | undefined {
  if (s.length > 512 || BAD.test(s)) return undefined;
  const i = s.indexOf(':');
  if (i <= 0) return undefined;
  const type = s.slice(0, i);
  const id = s.slice(i + 1);
  if (id === '' || id.includes(':') || id.includes('#') || type.includes('#') || type.includes('@')) return undefined;
  return { type, id };
}

function ruleUser(s: string): ParsedUser | undefined {
  if (s.length > 512 || BAD.test(s)) return undefined;
  const hash = s.indexOf('#');
  if (hash >= 0) {
    const obj = ruleObject(s.slice(0, hash));
    const relation = s.slice(hash + 1);
    if (obj === undefined || obj.id === '*' || !RELATION.test(relation)) return undefined;
    return { kind: 'userset', type: obj.type, id: obj.id, relation };
  }
  const obj = ruleObject(s);
  if (obj === undefined) return undefined;
  return obj.id === '*' ? { kind: 'wildcard', type: obj.type } : { kind: 'object', type: obj.type, id: obj.id };
}

// Characters that matter to the rules, with ordinary ones, spaces of every kind, controls and surrogates.
const CHARS = [':', '#', '@', '*', 'a', 'b', '1', '_', '-', '|', ' ', '\t', '\n', '\u0000', '\u001f', '\u007f', '\u0085', '\u00a0', '\u1680', '\u2000', '\u200a', '\u200b', '\u2028', '\u202f', '\u3000', '\ufeff', 'é', '😀', '\ud800', '\udc00'];
const piece = fc.constantFrom(...CHARS);
const word = fc.array(piece, { maxLength: 12 }).map((cs) => cs.join(''));
const longWord = fc.nat({ max: 600 }).map((n) => 'x'.repeat(n));
/** Strings shaped like objects and users (type:id#relation with noise), and arbitrary ones. */
const candidate = fc.oneof(
  word,
  fc.tuple(word, word, word).map(([t, i, r]) => `${t}:${i}#${r}`),
  fc.tuple(word, word).map(([t, i]) => `${t}:${i}`),
  fc.tuple(fc.stringMatching(/^[a-z]{1,8}$/), fc.stringMatching(/^[a-z0-9*@]{0,8}$/), fc.oneof(longWord.map((w) => w.slice(0, 60)), word)).map(([t, i, r]) => `${t}:${i}#${r}`),
  fc.tuple(fc.stringMatching(/^[a-z]{1,4}$/), longWord).map(([t, i]) => `${t}:${i}`),
  fc.string({ unit: 'binary', maxLength: 40 }),
);

test('the object parser accepts and splits exactly what the rules accept', (t) => {
  t.notThrows(() => fc.assert(fc.property(candidate, (s) => t.deepEqual(tryParseObject(s), ruleObject(s))), { numRuns: 20_000 }));
});

test('the user parser accepts and splits exactly what the rules accept', (t) => {
  t.notThrows(() => fc.assert(fc.property(candidate, (s) => t.deepEqual(tryParseUser(s), ruleUser(s))), { numRuns: 20_000 }));
});

test('a valid user string is its own canonical form', (t) => {
  t.notThrows(() =>
    fc.assert(
      fc.property(candidate, (s) => {
        const u = tryParseUser(s);
        if (u !== undefined) t.is(formatUser(u), s);
      }),
      { numRuns: 20_000 },
    ),
  );
});

test('the edge cases the scan keeps apart', (t) => {
  for (const s of ['user:*', 'user:**', 'user:a*', 'user:*#member', 'group:a@b#member', 'group:a#mem@ber', 'group:a#mem*ber', 'a@b:c', 'a:b@c', 'a:', ':a', 'a:b:c', 'a:b#c#d', 'a:b#', `a:b#${'r'.repeat(50)}`, `a:b#${'r'.repeat(51)}`, `a:${'i'.repeat(508)}`, `a:${'i'.repeat(509)}`, 'a:b\u00a0', 'a:b\u0085']) {
    t.deepEqual(tryParseObject(s), ruleObject(s), `object ${JSON.stringify(s)}`);
    t.deepEqual(tryParseUser(s), ruleUser(s), `user ${JSON.stringify(s)}`);
  }
  t.deepEqual(tryParseUser('user:*'), { kind: 'wildcard', type: 'user' });
  t.is(tryParseUser('group:a#mem@ber'), undefined);
  t.deepEqual(tryParseUser('group:a@b#member'), { kind: 'userset', type: 'group', id: 'a@b', relation: 'member' });
});
