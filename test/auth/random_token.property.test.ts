import test from 'ava';
import fc from 'fast-check';
import { randomBase64url } from '../../auth/random_token.ts';

const numRuns = process.env['CI'] ? 300 : 100;

test('any run of draws of any sizes: each value is base64url of exactly its bytes, and no value repeats', async (t) => {
  const seen = new Set<string>();
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 8, max: 1024 }), { minLength: 1, maxLength: 60 }), async (sizes) => {
        for (const n of sizes) {
          const v = randomBase64url(n);
          if (!/^[A-Za-z0-9_-]+$/.test(v) || Buffer.from(v, 'base64url').length !== n || Buffer.from(v, 'base64url').toString('base64url') !== v) return false;
          if (seen.has(v)) return false;
          seen.add(v);
        }
        return true;
      }),
      { numRuns },
    ),
  );
  t.true(seen.size > numRuns);
});

test('bytes drawn across many refills are spread evenly over 0–255', (t) => {
  const counts = new Array<number>(256).fill(0);
  const draws = 40_000;
  for (let i = 0; i < draws; i++) for (const b of Buffer.from(randomBase64url(16), 'base64url')) counts[b]!++;
  const expected = (draws * 16) / 256;
  const chi2 = counts.reduce((sum, c) => sum + (c - expected) ** 2 / expected, 0);
  // 255 degrees of freedom: the 99.99th percentile is about 350; a fixed or zeroed byte sends it into the thousands.
  t.true(chi2 < 350, `chi-square ${chi2.toFixed(1)}`);
});

test('a size that is not a positive whole number is refused', (t) => {
  for (const n of [0, -1, 1.5, Number.NaN]) t.throws(() => randomBase64url(n), { instanceOf: RangeError });
});
