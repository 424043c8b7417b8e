import test from 'ava';
import { openSequelize } from '../../engine/sql/sqlite_sequelize.ts';
import { runMigrations, type Migration } from '../../engine/sql/migrate.ts';
import { createTestDatabase, sqlBackends } from '../helpers/databases.ts';

const migrations: Migration[] = [
  {
    id: '0001_create_things',
    async up({ sequelize, transaction }) {
      await sequelize.query('CREATE TABLE things (id VARCHAR(36) PRIMARY KEY, name VARCHAR(64))', { transaction });
    },
  },
  {
    id: '0002_index_things',
    async up({ sequelize, transaction }) {
      await sequelize.query('CREATE INDEX things_name ON things (name)', { transaction });
    },
  },
];

for (const backend of sqlBackends()) {
  test(`migrations apply once, in order, and are idempotent (${backend})`, async (t) => {
    const db = await createTestDatabase(backend);
    const sequelize = openSequelize(db.url, { logging: false });
    try {
      // Two concurrent runners (as two starting processes would be): each migration applies exactly once.
      const [a, b] = await Promise.all([
        runMigrations(sequelize, 'test', migrations),
        runMigrations(sequelize, 'test', migrations),
      ]);
      t.deepEqual([...a, ...b].sort(), ['0001_create_things', '0002_index_things']);
      t.deepEqual(await runMigrations(sequelize, 'test', migrations), []);
      await sequelize.query("INSERT INTO things (id, name) VALUES ('1', 'x')");
      const [rows] = await sequelize.query('SELECT name FROM things');
      t.deepEqual(rows, [{ name: 'x' }]);
      // Another component has its own history.
      t.deepEqual(await runMigrations(sequelize, 'other', []), []);
    } finally {
      await sequelize.close();
      await db.drop();
    }
  });
}
