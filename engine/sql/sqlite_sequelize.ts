/**
 * Sequelize instances on SQLite always use {@link nodeSqliteDriver}, so that
 * every SQLite connection of the process is in one SQLite library (Node's
 * built-in `node:sqlite`); see docs/storage.md ("SQLite driver").
 */
import { Sequelize, type Options } from 'sequelize';
import { nodeSqliteDriver } from './node_sqlite_driver.ts';

/** A Sequelize instance on the SQLite file `storage` (`:memory:` for an in-memory database). */
export function sqliteSequelize(storage: string, options: Options = {}): Sequelize {
  return new Sequelize({ ...options, dialect: 'sqlite', storage, dialectModule: nodeSqliteDriver });
}

/**
 * A Sequelize instance for a database URL; `sqlite:` URLs get the `node:sqlite` driver, and
 * `mariadb:` URLs open with the `mysql` dialect (mysql2 speaks the MariaDB protocol; Sequelize's own
 * `mariadb` dialect would ask for the `mariadb` package, which this project does not use). The
 * scheme picks the dialect whatever `options.dialect` says.
 */
export function openSequelize(url: string, options: Options = {}): Sequelize {
  if (url.startsWith('sqlite:')) return new Sequelize(url, { ...options, dialectModule: nodeSqliteDriver });
  return new Sequelize(mysqlForMariadb(url), options);
}

/** `mariadb://…` (any case) as `mysql://…`; any other URL unchanged. */
function mysqlForMariadb(url: string): string {
  return /^mariadb:/i.test(url) ? `mysql:${url.slice('mariadb:'.length)}` : url;
}
