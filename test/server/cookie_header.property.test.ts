/**
 * `parseCookieHeader` answers as its reference does (split on `;`, trimmed,
 * quotes dropped, first occurrence wins, each value percent-decoded or kept as
 * it is when it does not decode) for any header, those with `%` escapes,
 * malformed ones and quoted values included.
 */
import test from 'ava';
import fc from 'fast-check';
import { parseCookieHeader } from '../../server/context.ts';

function reference(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!header) return out;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    if (!name || Object.hasOwn(out, name)) continue;
    let value = part.slice(eq + 1).trim();
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1);
    try {
      out[name] = decodeURIComponent(value);
    } catch {
      out[name] = value;
    }
  }
  return out;
}

const piece = fc.oneof(
  fc.constantFrom('cookie_session', 'cookie_session_domain', 'mfa', '=', ';', ' ', '"', '%', '%2', '%41', '%E2%82%AC', '%ZZ', '%C3', 'a', '-_.~'),
  fc.string({ maxLength: 4 }),
);
const header = fc.array(piece, { maxLength: 24 }).map((xs) => xs.join(''));

test('parseCookieHeader answers as the reference for any header', (t) => {
  fc.assert(fc.property(header, (h) => JSON.stringify(parseCookieHeader(h)) === JSON.stringify(reference(h))), { numRuns: 2000 });
  t.deepEqual(parseCookieHeader('cookie_session=abc-_DEF; cookie_session_domain=x%41y; bad=%E0%A4%A; q="v%20w"'), {
    cookie_session: 'abc-_DEF',
    cookie_session_domain: 'xAy',
    bad: '%E0%A4%A',
    q: 'v w',
  });
});
