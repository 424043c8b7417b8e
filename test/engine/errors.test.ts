import test from 'ava';
import { ERROR_STATUS, LatchkeyError, toPublicError } from '../../engine/errors.ts';

test('toPublicError keeps our errors and hides everything else as internal', (t) => {
  const ours = new LatchkeyError('not_found', 'no such thing', { reason: 'model_not_found' });
  t.is(toPublicError(ours), ours);
  const hidden = toPublicError(new TypeError('secret detail at /srv/x.ts:12'));
  t.is(hidden.code, 'internal');
  t.false(hidden.message.includes('secret'));
  t.false(JSON.stringify(hidden).includes('secret'));
});

test('every code maps to an HTTP and a gRPC status', (t) => {
  for (const [code, s] of Object.entries(ERROR_STATUS)) {
    t.true(s.http >= 400 && s.http < 600, code);
    t.true(s.grpc >= 1 && s.grpc <= 16, code);
  }
  t.deepEqual(ERROR_STATUS.unauthenticated, { http: 401, grpc: 16 });
  t.deepEqual(ERROR_STATUS.failed_precondition, { http: 400, grpc: 9 });
});
