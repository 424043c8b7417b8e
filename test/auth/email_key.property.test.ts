/**
 * The email comparison rule (auth/user_store_types.ts: `emailKey`,
 * `normalizeEmail`) as properties: any string and its fullwidth, upper-case
 * or invisible-character variants either compare equal or are refused with
 * `invalid_argument` (reason `invalid_email`); a variant holding an invisible
 * character inside it is always refused; the key is stable (a stored key is
 * its own key), so what is stored is found again. FC_SEED=<seed> replays a run.
 */
import test from 'ava';
import fc from 'fast-check';
import { LatchkeyError } from '../../engine/errors.ts';
import { emailKey, normalizeEmail } from '../../auth/index.ts';

const numRuns = process.env['CI'] ? 2000 : 300;
const seed = process.env['FC_SEED'] === undefined ? {} : { seed: Number(process.env['FC_SEED']) };

/** Printable ASCII as its fullwidth forms (U+FF01..U+FF5E), the space as the ideographic space. */
const fullwidth = (s: string): string => s.replace(/[\x20-\x7e]/g, (c) => (c === ' ' ? '\u3000' : String.fromCodePoint(c.charCodeAt(0) + 0xfee0)));

/** Characters that do not show: format controls and other default-ignorable code points. */
const INVISIBLE = fc.constantFrom(
  '\u00ad', '\u034f', '\u061c', '\u115f', '\u180e', '\u200b', '\u200c', '\u200d', '\u200e', '\u200f', '\u202a', '\u202e',
  '\u2060', '\u2063', '\u2066', '\u2069', '\u3164', '\ufe00', '\ufe0f', '\ufeff', '\uffa0', '\u{1d173}', '\u{e0001}', '\u{e0041}', '\u{e01ef}',
);
const PICTOGRAPH = /\p{Extended_Pictographic}/u;

/** What callers type: ASCII, any Unicode, or an address-like mix; no pictographs (a joiner between two of them shows). */
const typed = fc
  .oneof(
    fc.string({ unit: 'grapheme-ascii', maxLength: 24 }),
    fc.string({ unit: 'grapheme', maxLength: 12 }),
    fc.tuple(fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 10 }), fc.string({ unit: 'grapheme', maxLength: 4 }), fc.domain()).map(([a, b, d]) => `${a}${b}@${d}`),
  )
  .filter((s) => !PICTOGRAPH.test(s));

/** The normalised form, or `refused` for invalid_argument/invalid_email (anything else fails the property). */
function outcome(s: string): string | undefined {
  try {
    return normalizeEmail(s);
  } catch (err) {
    if (err instanceof LatchkeyError && err.code === 'invalid_argument' && err.reason === 'invalid_email') return 'refused';
    throw err;
  }
}

test('a string and its fullwidth and upper-case spellings have one key', (t) => {
  fc.assert(
    fc.property(fc.string({ unit: 'grapheme-ascii', maxLength: 40 }), (s) => {
      const plain = outcome(s);
      return outcome(fullwidth(s)) === plain && outcome(fullwidth(s.toUpperCase())) === plain && outcome(s.toUpperCase()) === plain;
    }),
    { numRuns, ...seed },
  );
  // The issue's own look-alike, pinned whatever the run's size.
  t.is(outcome('ｋａｔｅ@ｅｘａｍｐｌｅ.ｃｏｍ'), 'kate@example.com');
  t.is(outcome('KATE@Example.COM'), 'kate@example.com');
});

test('an invisible character anywhere in a string: the same key, or refused; inside the trimmed string: always refused', (t) => {
  fc.assert(
    fc.property(typed, INVISIBLE, fc.nat(), (s, c, at) => {
      const i = at % (s.length + 1);
      const variant = `${s.slice(0, i)}${c}${s.slice(i)}`;
      const got = outcome(variant);
      if (got !== 'refused' && got !== outcome(s)) return false;
      if (emailKey(variant) !== emailKey(s)) return false;
      // Between two characters of what is left once trimmed, nothing excuses it.
      const trimmed = s.trim();
      if (trimmed.length >= 2) {
        const inside = `${trimmed.slice(0, 1)}${c}${trimmed.slice(1)}`;
        if (outcome(inside) !== 'refused') return false;
      }
      return true;
    }),
    { numRuns, ...seed },
  );
  t.is(outcome('ka\u200bte@example.com'), 'refused');
  t.is(outcome('kate@exam\u2060ple.com'), 'refused');
  t.is(emailKey('ka\u200bte@example.com'), emailKey('kate@example.com'));
});

test('the key is stable: a stored key is its own key, and normalising it again changes nothing', (t) => {
  fc.assert(
    fc.property(fc.oneof(typed, fc.string({ unit: 'binary', maxLength: 16 }), fc.string({ unit: 'grapheme', maxLength: 16 })), (s) => {
      const k = emailKey(s);
      if (k === undefined) return true;
      return emailKey(k) === k && outcome(k) === k;
    }),
    { numRuns, ...seed },
  );
  const key = emailKey(' ＫＡＴＥ@example.com ');
  t.is(key, 'kate@example.com');
  t.is(emailKey(key!), key);
});
