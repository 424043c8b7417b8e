/**
 * The contract's page-size bound and the admin service's are one number: the
 * wire refuses exactly the pages the service would refuse.
 */
import test from 'ava';
import { MAX_PAGE_LIMIT as WIRE_LIMIT, OPERATIONS, validate } from '../../api/index.ts';
import { MAX_PAGE_LIMIT as SERVICE_LIMIT, normalizePagination } from '../../admin/index.ts';

test('the wire and the admin service bound a page alike', (t) => {
  t.is(WIRE_LIMIT, SERVICE_LIMIT);
  const users = OPERATIONS.find((op) => op.name === 'users')!;
  t.notThrows(() => validate(users.input, { pagination: { limit: SERVICE_LIMIT } }));
  t.throws(() => validate(users.input, { pagination: { limit: SERVICE_LIMIT + 1 } }));
  t.notThrows(() => normalizePagination({ limit: WIRE_LIMIT }));
  t.throws(() => normalizePagination({ limit: WIRE_LIMIT + 1 }));
});
