import test from 'ava';
import { DynamoDatabase, inTransaction, dynamoDatabase } from '../../auth/index.ts';
import type { LatchkeyError } from '../../engine/errors.ts';
import { createTestDynamo } from '../helpers/dynamodb.ts';

test('DynamoDB client: a missing table is created once (twice is a no-op), and conditional writes decide races', async (t) => {
  const d = await createTestDynamo();
  try {
    const def = { name: 'things', indexes: [{ name: 'by_owner', pk: 'owner', sk: 'at', sortNumeric: true }] };
    await Promise.all([d.db.ensureTable(def), d.db.ensureTable(def)]);
    // A second client (another process) finds the table there.
    const other = DynamoDatabase.open({ region: 'us-east-1', endpoint: d.url, accessKeyId: 'k', secretAccessKey: 's', tablePrefix: d.prefix });
    await other.ensureTable(def);
    other.close();
    // 20 writers race for one key under attribute_not_exists: exactly one wins.
    const wins = await Promise.all(
      Array.from({ length: 20 }, (_, i) => d.db.put('things', { pk: 'unique', sk: '-', who: i }, { expression: 'attribute_not_exists(pk)' })),
    );
    t.is(wins.filter(Boolean).length, 1);
    // A conditional update that does not hold changes nothing and answers undefined.
    t.is(await d.db.update('things', 'unique', '-', { set: { who: 99 } }, { expression: '#w = :x', names: { '#w': 'who' }, values: { ':x': -1 } }), undefined);
    const won = wins.indexOf(true);
    t.like(await d.db.get('things', 'unique', '-'), { who: won });
    t.like(await d.db.update('things', 'unique', '-', { set: { who: 99 }, add: { n: 2 } }, { expression: '#w = :x', names: { '#w': 'who' }, values: { ':x': won } }), { who: 99, n: 2 });
    // Queries read every page, in order or reversed, with a limit and through an index.
    for (let i = 0; i < 30; i++) await d.db.put('things', { pk: 'p', sk: String(i).padStart(4, '0'), owner: i % 2 ? 'odd' : 'even', at: i, blob: 'x'.repeat(40_000) });
    const all = await d.db.query('things', { pk: ['pk', 'p'] });
    t.is(all.length, 30);
    t.deepEqual((await d.db.query('things', { pk: ['pk', 'p'], descending: true, limit: 3 })).map((r) => r['at']), [29, 28, 27]);
    t.deepEqual((await d.db.query('things', { index: 'by_owner', pk: ['owner', 'odd'], sk: ['at', '>', 24] })).map((r) => r['at']), [25, 27, 29]);
    t.is((await d.db.scan('things', { expression: '#o = :o', names: { '#o': 'owner' }, values: { ':o': 'even' } })).length, 15);
    t.like(await d.db.delete('things', 'p', '0000'), { at: 0 });
    t.is(await d.db.delete('things', 'p', '0000'), undefined);
    t.true(await d.db.ping());
  } finally {
    await d.drop();
  }
});

test('DynamoDB client: bad settings are refused with invalid_argument before any request', (t) => {
  for (const options of [
    { region: '' },
    { region: 'eu-west-1', endpoint: 'not a url' },
    { region: 'eu-west-1', accessKeyId: 'only-the-id' },
    { region: 'eu-west-1', tablePrefix: 'no spaces' },
  ]) {
    const err = t.throws(() => DynamoDatabase.open(options)) as LatchkeyError;
    t.is(err.code, 'invalid_argument');
    t.is(err.reason, 'invalid_database_config');
  }
});

test('DynamoDB unit of work: afterCommit runs after the work, and not when it fails', async (t) => {
  const d = await createTestDynamo();
  try {
    const db = dynamoDatabase(d.db);
    const seen: string[] = [];
    await inTransaction(db, async (tx) => {
      tx.afterCommit(() => seen.push('after'));
      seen.push('work');
    });
    t.deepEqual(seen, ['work', 'after']);
    await t.throwsAsync(
      inTransaction(db, async (tx) => {
        tx.afterCommit(() => seen.push('never'));
        throw new Error('boom');
      }),
    );
    t.deepEqual(seen, ['work', 'after']);
    t.false(await DynamoDatabase.open({ region: 'us-east-1', endpoint: 'http://127.0.0.1:9', accessKeyId: 'a', secretAccessKey: 'b' }).ping(1000));
  } finally {
    await d.drop();
  }
});
