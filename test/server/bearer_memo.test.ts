/**
 * A connection's BearerMemo answers each header with its own token: a client
 * that changes the header on a keep-alive connection (another user, another
 * scheme) is never answered with the token of the header before.
 */
import test from 'ava';
import fc from 'fast-check';
import { BearerMemo, bearerToken, extractCredentials } from '../../server/context.ts';

test('the memo answers every header as the parse does, whatever came before on the connection', (t) => {
  const header = fc.oneof(
    fc.constantFrom('Bearer a.b.c', 'Bearer x.y.z', 'bearer  a.b.c ', 'Basic abc', 'Bearer ', 'Bearer a b', ''),
    fc.string({ maxLength: 20 }).map((s) => `Bearer ${s}`),
  );
  fc.assert(
    fc.property(fc.array(header, { minLength: 1, maxLength: 12 }), (headers) => {
      const memo = new BearerMemo();
      for (const h of headers) {
        if (memo.of(h) !== bearerToken(h)) return false;
        if (extractCredentials({ authorization: h }, memo).bearer !== extractCredentials({ authorization: h }).bearer) return false;
      }
      return true;
    }),
  );
  const memo = new BearerMemo();
  t.is(memo.of('Bearer token-of-anne'), 'token-of-anne');
  t.is(memo.of('Bearer token-of-bob'), 'token-of-bob');
  t.is(memo.of('Basic abc'), undefined);
  t.is(memo.of('Bearer token-of-bob'), 'token-of-bob');
});
