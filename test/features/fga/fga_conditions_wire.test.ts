/**
 * Conditions and context over our own operations, on GraphQL, REST and gRPC
 * alike: `fga_write_tuples` writes a tuple's condition and stored context and
 * `fga_read_tuples` returns them; `check_permissions` takes a `context` per
 * check and contextual tuples with conditions; `list_permissions` takes a
 * `context`, and without one (or without a condition's parameters) lists the
 * unconditional grants and reports the conditional ones in
 * `undecided_permissions`, never listing a grant whose condition failed.
 */
import test from 'ava';
import { PROTOCOLS, TEST_ADMIN_SECRET, startTestServer, type TestServer } from '../../helpers/server.ts';

const ADMIN = { 'x-service-admin-secret': TEST_ADMIN_SECRET };
const MODEL = `model
  schema 1.1
type user
type doc
  relations
    define viewer: [user, user with in_hours]
condition in_hours(hour: int, start: int) {
  hour >= start && hour < 18
}
`;

let srv: TestServer;
test.before(async () => {
  srv = await startTestServer();
  const r = await srv.call('fga_write_model', { dsl: MODEL }, { protocol: 'rest', headers: ADMIN });
  if (r.status !== 200) throw new Error(JSON.stringify(r.error));
});
test.after.always(async () => {
  await srv?.close();
});

for (const protocol of PROTOCOLS) {
  test(`${protocol}: tuples carry their condition and context; checks and listings take a context`, async (t) => {
    const signup = await srv.call('signup', { email: `cond-${protocol}@example.com`, password: 'a long enough passphrase' }, { protocol });
    t.is(signup.status, protocol === 'grpc' ? 0 : 200, JSON.stringify(signup.error));
    const token = signup.body!['access_token'] as string;
    const userId = (signup.body!['user'] as { id: string }).id;
    const bearer = { authorization: `Bearer ${token}` };
    const subject = `user:${userId}`;
    const object = `doc:${protocol}-1`;

    const written = await srv.call('fga_write_tuples', { tuples: [{ user: subject, relation: 'viewer', object, condition: { name: 'in_hours', context: { start: 9 } } }] }, { protocol, headers: ADMIN });
    t.is(written.error, undefined);
    const read = await srv.call('fga_read_tuples', { object }, { protocol, headers: ADMIN });
    t.deepEqual(read.body?.['tuples'], [{ user: subject, relation: 'viewer', object, condition: { name: 'in_hours', context: { start: 9 } }, expires_at: null }]);

    const checked = await srv.call(
      'check_permissions',
      {
        checks: [
          { relation: 'viewer', object, context: { hour: 10 } },
          { relation: 'viewer', object, context: { hour: 20 } },
          {
            relation: 'viewer',
            object: `doc:${protocol}-2`,
            contextual_tuples: [{ user: subject, relation: 'viewer', object: `doc:${protocol}-2`, condition: { name: 'in_hours', context: { start: 12 } } }],
            context: { hour: 10 },
          },
          {
            relation: 'viewer',
            object: `doc:${protocol}-2`,
            contextual_tuples: [{ user: subject, relation: 'viewer', object: `doc:${protocol}-2`, condition: { name: 'in_hours', context: { start: 8 } } }],
            context: { hour: 10 },
          },
        ],
      },
      { protocol, headers: bearer },
    );
    t.is(checked.error, undefined);
    t.deepEqual((checked.body?.['results'] as { allowed: boolean }[]).map((r) => r.allowed), [true, false, false, true]);

    // A condition whose parameter is missing cannot be decided: an error, never a silent deny or allow.
    const undecided = await srv.call('check_permissions', { checks: [{ relation: 'viewer', object }] }, { protocol, headers: bearer });
    t.is(undecided.error?.code, 'invalid_argument');
    // A context that is not an object is refused.
    const notObject = await srv.call('check_permissions', { checks: [{ relation: 'viewer', object, context: [1, 2] }] }, { protocol, headers: bearer });
    t.is(notObject.error?.code, 'invalid_argument');

    const listed = await srv.call('list_permissions', { relation: 'viewer', object_type: 'doc', context: { hour: 10 } }, { protocol, headers: bearer });
    t.deepEqual(listed.body?.['objects'], [object]);
    const late = await srv.call('list_permissions', { relation: 'viewer', object_type: 'doc', context: { hour: 19 } }, { protocol, headers: bearer });
    t.deepEqual(late.body?.['objects'], []);

    // A tuple whose condition is not in the model is refused, and deleting ignores the condition.
    const unknown = await srv.call('fga_write_tuples', { tuples: [{ user: subject, relation: 'viewer', object: `doc:${protocol}-3`, condition: { name: 'nope' } }] }, { protocol, headers: ADMIN });
    t.is(unknown.error?.code, 'invalid_argument');
    const deleted = await srv.call('fga_delete_tuples', { tuples: [{ user: subject, relation: 'viewer', object }] }, { protocol, headers: ADMIN });
    t.is(deleted.error, undefined);
    t.deepEqual((await srv.call('fga_read_tuples', { object }, { protocol, headers: ADMIN })).body?.['tuples'], []);
  });
}

for (const protocol of PROTOCOLS) {
  test(`${protocol}: list_permissions without a condition's parameters lists the other grants and reports the undecided ones`, async (t) => {
    const signup = await srv.call('signup', { email: `undecided-${protocol}@example.com`, password: 'a long enough passphrase' }, { protocol });
    t.is(signup.error, undefined);
    const bearer = { authorization: `Bearer ${signup.body!['access_token'] as string}` };
    const subject = `user:${(signup.body!['user'] as { id: string }).id}`;
    const plain = `doc:${protocol}-plain`;
    const conditional = `doc:${protocol}-conditional`;
    const written = await srv.call(
      'fga_write_tuples',
      { tuples: [{ user: subject, relation: 'viewer', object: plain }, { user: subject, relation: 'viewer', object: conditional, condition: { name: 'in_hours', context: { start: 9 } } }] },
      { protocol, headers: ADMIN },
    );
    t.is(written.error, undefined);

    for (const input of [{}, { relation: 'viewer', object_type: 'doc' }, { context: {} }, { context: { start: 1 } }]) {
      const listed = await srv.call('list_permissions', input, { protocol, headers: bearer });
      t.is(listed.error, undefined, JSON.stringify(input));
      t.deepEqual(listed.body?.['permissions'], [{ object: plain, relation: 'viewer' }], `${JSON.stringify(input)}: only the unconditional grant is listed`);
      t.deepEqual(listed.body?.['objects'], [plain]);
      t.deepEqual(listed.body?.['undecided_permissions'], [{ object: conditional, relation: 'viewer', missing_parameters: ['hour'] }], `${JSON.stringify(input)}: the conditional grant is reported`);
      t.false(listed.body?.['truncated'] as boolean);
    }

    const inHours = await srv.call('list_permissions', { context: { hour: 10 } }, { protocol, headers: bearer });
    t.deepEqual(inHours.body?.['permissions'], [{ object: conditional, relation: 'viewer' }, { object: plain, relation: 'viewer' }]);
    t.deepEqual(inHours.body?.['undecided_permissions'], []);
    const late = await srv.call('list_permissions', { context: { hour: 19 } }, { protocol, headers: bearer });
    t.deepEqual(late.body?.['permissions'], [{ object: plain, relation: 'viewer' }], 'a grant whose condition is false is not listed');
    t.deepEqual(late.body?.['undecided_permissions'], [], 'nor reported: it was decided');
    const wrongType = await srv.call('list_permissions', { context: { hour: 'ten' } }, { protocol, headers: bearer });
    t.is(wrongType.error?.code, 'invalid_argument', 'a context value of the wrong type is still an error');
  });
}
