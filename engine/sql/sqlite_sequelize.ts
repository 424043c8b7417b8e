/**
 * Sequelize instances on SQLite always use {@link nodeSqliteDriver}, so that
 * every SQLite connection of the process is in one SQLite library (Node's
 * built-in `node:sqlite`); see docs/storage.md ("SQLite driver").
 */
import { createRequire } from 'node:module';
import type { Options, Sequelize } from 'sequelize';
import type { SqliteDatabase } from './sqlite_database.ts';
import { nodeSqliteDriver } from './node_sqlite_driver.ts';

/**
 * sequelize's constructor, loaded when the first instance is built: a process
 * whose only SQL database is a {@link SqliteDatabase} (the server on SQLite)
 * never loads it.
 */
function sequelizeClass(): typeof Sequelize {
  return (createRequire(import.meta.url)('sequelize') as { Sequelize: typeof Sequelize }).Sequelize;
}

/** A Sequelize instance on the SQLite file `storage` (`:memory:` for an in-memory database). */
export function sqliteSequelize(storage: string, options: Options = {}): Sequelize {
  return new (sequelizeClass())({ ...options, dialect: 'sqlite', storage, dialectModule: nodeSqliteDriver });
}

/**
 * A Sequelize instance for a database URL; `sqlite:` URLs get the `node:sqlite` driver, and
 * `mariadb:` URLs open with the `mysql` dialect (mysql2 speaks the MariaDB protocol; Sequelize's own
 * `mariadb` dialect would ask for the `mariadb` package, which this project does not use). The
 * scheme picks the dialect whatever `options.dialect` says.
 */
export function openSequelize(url: string, options: Options = {}): Sequelize {
  const SequelizeClass = sequelizeClass();
  if (url.startsWith('sqlite:')) return new SequelizeClass(url, { ...options, dialectModule: nodeSqliteDriver });
  return new SequelizeClass(mysqlForMariadb(url), options);
}

/** `mariadb://…` (any case) as `mysql://…`; any other URL unchanged. */
function mysqlForMariadb(url: string): string {
  return /^mariadb:/i.test(url) ? `mysql:${url.slice('mariadb:'.length)}` : url;
}
