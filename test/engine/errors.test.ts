import test from 'ava';
import { dependencyError, ERROR_STATUS, isDependencyFailure, LatchkeyError, OUTAGE_RETRY_AFTER_SECONDS, toPublicError } from '../../engine/errors.ts';

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

test('dependency failures, by driver code or error class, become unavailable with a retry hint; anything else does not', async (t) => {
  const { ConnectionRefusedError, ConnectionAcquireTimeoutError, DatabaseError, UniqueConstraintError } = await import('sequelize');
  const coded = (code: string): Error => Object.assign(new Error('x'), { code });
  const outages: unknown[] = [
    new ConnectionRefusedError(coded('ECONNREFUSED')),
    new ConnectionAcquireTimeoutError(new Error('pool exhausted')),
    new DatabaseError(Object.assign(coded('57P01'), { sql: 'SELECT 1', parameters: [] }) as never),
    coded('PROTOCOL_CONNECTION_LOST'),
    coded('ECONNRESET'),
    coded('08006'),
    coded('53300'),
    coded('SQLITE_READONLY'),
    coded('SQLITE_IOERR'),
    coded('SQLITE_CANTOPEN'),
    coded('SQLITE_FULL'),
    Object.assign(new Error('retries exhausted'), { name: 'MaxRetriesPerRequestError' }),
    new AggregateError([coded('ECONNREFUSED'), coded('ECONNREFUSED')]),
    new LatchkeyError('internal', 'store error', { cause: coded('ETIMEDOUT') }),
  ];
  for (const err of outages) {
    t.true(isDependencyFailure(err), String(err));
    const pub = toPublicError(err);
    t.is(pub.code, 'unavailable', String(err));
    t.is(pub.details?.['retry_after_seconds'], OUTAGE_RETRY_AFTER_SECONDS);
    t.false(JSON.stringify(pub).includes('x'.repeat(2)));
  }
  const ours = toPublicError(new LatchkeyError('unavailable', 'session store unavailable', { reason: 'session_store_unavailable' }));
  t.is(ours.reason, 'session_store_unavailable');
  t.is(ours.details?.['retry_after_seconds'], OUTAGE_RETRY_AFTER_SECONDS);
  for (const err of [new TypeError('bug'), new UniqueConstraintError({}), coded('23505'), coded('ER_DUP_ENTRY'), new LatchkeyError('internal', 'bug', { cause: new TypeError('x') })]) {
    t.false(isDependencyFailure(err), String(err));
    t.is(toPublicError(err).code, 'internal');
  }
  t.is(dependencyError(new LatchkeyError('not_found', 'gone')), undefined);
});
