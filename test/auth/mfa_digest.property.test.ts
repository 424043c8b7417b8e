/**
 * Properties of the one-time-code digests (internal helpers otpDigest and
 * digestsEqual, exported for this test): a code matches its own digest and
 * no other code's, nor the digest made for another user or under another
 * key; malformed digests never match.
 */
import test from 'ava';
import fc from 'fast-check';
import { digestsEqual, otpDigest } from '../../auth/index.ts';

const numRuns = process.env['CI'] ? 1000 : 200;
const key = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((a) => Buffer.from(a));
const code = fc.string({ minLength: 1, maxLength: 16 });
const userId = fc.uuid();

test('a code matches its own digest, and a digest matches only the same key, user and code (internal helpers)', (t) => {
  t.notThrows(() =>
    fc.assert(
      fc.property(key, key, userId, userId, code, code, (k1, k2, u1, u2, c1, c2) => {
        const stored = otpDigest(k1, u1, c1);
        if (!digestsEqual(otpDigest(k1, u1, c1), stored)) return false;
        const same = k1.equals(k2) && u1 === u2 && c1 === c2;
        return digestsEqual(otpDigest(k2, u2, c2), stored) === same;
      }),
      { numRuns },
    ),
  );
});

test('a malformed or truncated digest never matches (internal helpers)', (t) => {
  t.notThrows(() =>
    fc.assert(
      fc.property(key, userId, code, fc.string({ maxLength: 70 }), fc.integer({ min: 0, max: 63 }), (k, u, c, junk, cut) => {
        const stored = otpDigest(k, u, c);
        return !digestsEqual(junk, stored) && !digestsEqual(stored.slice(0, cut), stored) && !digestsEqual(stored, stored.slice(0, cut));
      }),
      { numRuns },
    ),
  );
});
