/**
 * Storage bootstrap on every configured SQL backend: SQLite always,
 * PostgreSQL and MySQL/MariaDB when their URLs are given (required in CI).
 */
import test from 'ava';
import { sqlBackends } from '../../helpers/databases.ts';
import { needs } from '../../helpers/needs.ts';
import { PROTOCOLS, TEST_ADMIN_SECRET, startTestServer } from '../../helpers/server.ts';

const FGA_DSL = 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n';

for (const backend of sqlBackends()) {
  test(`${backend}: the server starts, is ready, and serves meta on every protocol`, async (t) => {
    const server = await startTestServer({}, { backend });
    try {
      const ready = await fetch(`${server.httpUrl}/readyz`);
      t.is(ready.status, 200);
      for (const protocol of PROTOCOLS) {
        const r = await server.call('meta', {}, { protocol });
        t.is(r.error, undefined, protocol);
        t.is(r.body?.client_id, 'test-client-id', protocol);
      }
    } finally {
      await server.close();
    }
  });

  test(`${backend}: restarting on the same database is idempotent (migrations re-run as no-ops)`, async (t) => {
    const first = await startTestServer({}, { backend });
    const url = first.database.url;
    await first.server.close();
    try {
      const { parseFlags, startServer } = await import('../../../cmd/index.ts');
      const parsed = parseFlags([
        `--database-type=${backend}`,
        `--database-url=${url}`,
        '--admin-secret=s',
        '--client-id=c',
        '--client-secret=cs',
        '--jwt-type=HS256',
        '--jwt-secret=x',
        '--host=127.0.0.1',
        '--http-port=0',
        '--grpc-port=0',
        '--metrics-port=0',
        '--log-level=silent',
      ]);
      if (!parsed.ok) return t.fail(parsed.problems.join('\n'));
      const again = await startServer(parsed.config);
      try {
        t.is((await fetch(`${again.httpUrl}/readyz`)).status, 200);
      } finally {
        await again.close();
      }
    } finally {
      await first.database.drop();
    }
  });
}

if (sqlBackends().includes('mysql')) {
  test('mariadb: --database-type mariadb speaks to a MySQL/MariaDB server', async (t) => {
    const server = await startTestServer({ 'database-type': 'mariadb' }, { backend: 'mysql' });
    try {
      t.is((await fetch(`${server.httpUrl}/readyz`)).status, 200);
      const r = await server.call('meta', {}, { protocol: 'rest' });
      t.is(r.error, undefined);
    } finally {
      await server.close();
    }
  });

  // A mariadb:// URL opens on mysql2 (Sequelize's own mariadb dialect would exit asking for the mariadb package).
  const mariadbUrl = (url: string): string => url.replace(/^mysql:/, 'mariadb:');

  test('mariadb: a mariadb:// --database-url opens the main database and the FGA store on it', async (t) => {
    const { createTestDatabase } = await import('../../helpers/databases.ts');
    const db = await createTestDatabase('mysql');
    try {
      const server = await startTestServer({ 'database-type': 'mariadb', 'database-url': mariadbUrl(db.url) });
      try {
        t.is((await fetch(`${server.httpUrl}/readyz`)).status, 200);
        t.is((await server.call('meta', {}, { protocol: 'rest' })).error, undefined);
        const written = await server.call('fga_write_model', { dsl: FGA_DSL }, { protocol: 'rest', headers: { 'x-service-admin-secret': TEST_ADMIN_SECRET } });
        t.is(written.error, undefined, 'FGA runs on the main database');
      } finally {
        await server.close();
      }
    } finally {
      await db.drop();
    }
  });

  test('mariadb: a mariadb:// --fga-store-url opens the separate FGA store', async (t) => {
    const { createTestDatabase } = await import('../../helpers/databases.ts');
    const fga = await createTestDatabase('mysql');
    try {
      const server = await startTestServer({ 'fga-store': 'mariadb', 'fga-store-url': mariadbUrl(fga.url) });
      try {
        const written = await server.call('fga_write_model', { dsl: FGA_DSL }, { protocol: 'rest', headers: { 'x-service-admin-secret': TEST_ADMIN_SECRET } });
        t.is(written.error, undefined, 'FGA is enabled on the mariadb:// store');
      } finally {
        await server.close();
      }
    } finally {
      await fga.drop();
    }
  });
}

needs(test, 'postgres')('postgres: individual host/port/name/user flags build the connection', async (t) => {
  const url = process.env.LATCHKEY_TEST_POSTGRES_URL;
  if (!url || !sqlBackends().includes('postgres')) {
    t.pass('PostgreSQL not configured');
    return;
  }
  const { createTestDatabase } = await import('../../helpers/databases.ts');
  const db = await createTestDatabase('postgres');
  const u = new URL(db.url);
  try {
    const server = await startTestServer({
      'database-type': 'postgres',
      'database-url': '',
      'database-host': u.hostname,
      'database-port': Number(u.port || 5432),
      'database-name': u.pathname.slice(1),
      'database-username': decodeURIComponent(u.username),
      ...(u.password ? { 'database-password': decodeURIComponent(u.password) } : {}),
    });
    try {
      t.is((await fetch(`${server.httpUrl}/readyz`)).status, 200);
    } finally {
      await server.close();
    }
  } finally {
    await db.drop();
  }
});
