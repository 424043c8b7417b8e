/**
 * The clients' cookie jar (an internal helper, tested directly): whatever
 * sequence of Set-Cookie values arrives, the Cookie header carries exactly the
 * latest value of every cookie not expired. FC_SEED replays a failing run.
 */
import test from 'ava';
import fc from 'fast-check';
import { CookieJar } from '../../client/cookie_jar.ts';

const cookieName = fc.stringMatching(/^[A-Za-z0-9_-]{1,12}$/);
const cookieValue = fc.stringMatching(/^[A-Za-z0-9._~%-]{1,24}$/);

test('cookie jar (internal), property: the latest value of each cookie is sent, and Max-Age=0 removes it', (t) => {
  t.notThrows(() =>
    fc.assert(
      fc.property(fc.array(fc.tuple(cookieName, fc.option(cookieValue, { nil: undefined })), { maxLength: 30 }), (ops) => {
        const jar = new CookieJar(() => 0);
        const expected = new Map<string, string>();
        for (const [name, value] of ops) {
          if (value === undefined) {
            jar.store([`${name}=gone; Path=/; Max-Age=0`]);
            expected.delete(name);
          } else {
            jar.store([`${name}=${value}; Path=/; HttpOnly`]);
            expected.set(name, value);
          }
        }
        const sent = jar.header();
        const parsed = new Map((sent ? sent.split('; ') : []).map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)]));
        return parsed.size === expected.size && [...expected].every(([k, v]) => parsed.get(k) === v);
      }),
      { numRuns: process.env.CI ? 1000 : 200, ...(process.env.FC_SEED ? { seed: Number(process.env.FC_SEED) } : {}) },
    ),
  );
});
