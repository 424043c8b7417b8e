/**
 * Test helper: what a test needs beyond Node.js and this repository, and
 * what happens when it is missing.
 *
 * A fresh clone has no `../shared` beside it, no database URLs, and maybe no
 * Chromium, haproxy or database server programs. Outside CI a test that needs
 * one of them is skipped, with the reason in its title (ava lists it as
 * `- [skip] … — skipped: <what is missing>: <how to provide it>`); with `CI`
 * set everything is required, and a missing one fails the file at load, as
 * `databases.ts` does for the URLs.
 *
 *   const test = needs(anyTest, 'chromium');          // every test of the file
 *   needs(test, 'shared')('reads the matrix', (t) => …); // one test
 *   if (missing('shared') === undefined) { …tests made from the data… }
 *
 * `npm test` (test/run_all.ts) prints `absent()` once at the end of the run,
 * one line per missing thing: that also covers the backend loops
 * (`sqlBackends()`, `if (redisUrl())`) that leave their PostgreSQL, MySQL and
 * Redis variants out without a skipped test.
 */
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { SHARED_DIR } from './shared.ts';

/** The Chromium the browser tests drive (test/helpers/loopback.ts `launchChromium`). */
export const CHROMIUM_PATH = '/usr/bin/chromium';

const envSet = (name: string) => (): boolean => (process.env[name] ?? '').length > 0;
/** True when `cmd` is on the PATH and runs (each program answers `--version`/`-v` and exits 0). */
const runs = (cmd: string, arg: string) => (): boolean => spawnSync(cmd, [arg], { stdio: 'ignore', timeout: 30_000 }).status === 0;

const NEEDS = {
  shared: {
    present: () => existsSync(SHARED_DIR),
    missing: '../shared is missing (OpenFGA and CEL conformance data, the security matrix)',
    how: "check out the project's shared material beside this repository as ../shared (README.md, Tests)",
  },
  postgres: {
    present: envSet('LATCHKEY_TEST_POSTGRES_URL'),
    missing: 'PostgreSQL is not configured',
    how: 'set LATCHKEY_TEST_POSTGRES_URL, e.g. postgres://postgres@127.0.0.1:5432/test (a role that may create databases)',
  },
  mysql: {
    present: envSet('LATCHKEY_TEST_MYSQL_URL'),
    missing: 'MySQL/MariaDB is not configured',
    how: 'set LATCHKEY_TEST_MYSQL_URL, e.g. mysql://root@127.0.0.1:3306/test (a user that may create databases)',
  },
  redis: {
    present: envSet('LATCHKEY_TEST_REDIS_URL'),
    missing: 'Redis is not configured',
    how: 'set LATCHKEY_TEST_REDIS_URL, e.g. redis://127.0.0.1:6379',
  },
  chromium: {
    present: () => existsSync(CHROMIUM_PATH),
    missing: `Chromium is not installed at ${CHROMIUM_PATH}`,
    how: 'install it (Debian: apt-get install chromium)',
  },
  haproxy: {
    present: runs('haproxy', '-v'),
    missing: 'haproxy is not on the PATH',
    how: 'install it (Debian: apt-get install haproxy)',
  },
  'postgres-server': {
    present: () => runs('initdb', '--version')() && runs('postgres', '--version')(),
    missing: "PostgreSQL's initdb and postgres are not on the PATH",
    how: 'install the PostgreSQL server and put its bin directory on the PATH (Debian: apt-get install postgresql; /usr/lib/postgresql/<version>/bin)',
  },
  'mariadb-server': {
    present: () => runs('mariadb-install-db', '--version')() && runs('mariadbd', '--version')(),
    missing: 'MariaDB\'s mariadb-install-db and mariadbd are not on the PATH',
    how: 'install the MariaDB server (Debian: apt-get install mariadb-server)',
  },
  'redis-server': {
    present: runs('redis-server', '--version'),
    missing: 'redis-server is not on the PATH',
    how: 'install it (Debian: apt-get install redis-server)',
  },
  ss: {
    present: runs('ss', '-V'),
    missing: "iproute2's ss is not on the PATH",
    how: 'install it (Debian: apt-get install iproute2)',
  },
} as const satisfies Record<string, { present: () => boolean; missing: string; how: string }>;

/** Something a test may need that a machine with only Node.js and this repository lacks. */
export type Need = keyof typeof NEEDS;

const inCi = (): boolean => Boolean(process.env['CI']);

const found = new Map<Need, boolean>();
function present(need: Need): boolean {
  let p = found.get(need);
  if (p === undefined) found.set(need, (p = NEEDS[need].present()));
  return p;
}

/** The one line that says what is missing and how to provide it. */
export function reasonFor(need: Need): string {
  return `${NEEDS[need].missing}: ${NEEDS[need].how}`;
}

/**
 * Why a test that needs `needs` cannot run here, or undefined when it can.
 * With `CI` set nothing may be missing: throws instead of answering.
 */
export function missing(...needs: Need[]): string | undefined {
  const absentHere = needs.filter((n) => !present(n));
  if (absentHere.length === 0) return undefined;
  const reason = absentHere.map(reasonFor).join('; ');
  if (inCi()) throw new Error(`${reason} (required with CI set)`);
  return reason;
}

/** Every need missing on this machine, with its one line; none in CI (there they fail the tests). */
export function absent(): { need: Need; reason: string }[] {
  return (Object.keys(NEEDS) as Need[]).filter((n) => !present(n)).map((n) => ({ need: n, reason: reasonFor(n) }));
}

const HOOKS = new Set<PropertyKey>(['before', 'beforeEach', 'after', 'afterEach']);
const PASSED_THROUGH = new Set<PropertyKey>(['todo', 'meta', 'macro']);

interface Skippable {
  skip(title: string, implementation: () => void): void;
}

/**
 * ava's `test` (or `test.serial`, …) when everything in `needs` is present.
 * Otherwise, outside CI, a stand-in of the same shape: each test declared
 * through it is registered as skipped, its title followed by
 * ` — skipped: <reason>`, and its hooks do not run (they would set up what is
 * missing). With `CI` set a missing need throws (see `missing`).
 */
export function needs<T extends object>(test: T, ...needs: Need[]): T {
  const reason = missing(...needs);
  if (reason === undefined) return test;
  const root = test as unknown as Skippable & Record<PropertyKey, unknown>;
  const titled = (args: unknown[]): string => {
    const [first, ...rest] = args;
    if (typeof first === 'string') return first;
    const title = (first as { title?: (provided: undefined, ...a: unknown[]) => string } | undefined)?.title;
    return typeof title === 'function' ? title(undefined, ...rest) : 'untitled';
  };
  const standIn = (hook: boolean): unknown =>
    new Proxy(() => undefined, {
      apply(_target, _this, args: unknown[]) {
        if (!hook) root.skip(`${titled(args)} — skipped: ${reason}`, () => undefined);
      },
      get(_target, prop) {
        if (PASSED_THROUGH.has(prop)) return root[prop];
        return standIn(hook || HOOKS.has(prop));
      },
    });
  return standIn(false) as T;
}

/**
 * For tests made from data that needs `need` (the YAML suites of
 * `../shared/conformance`): `load()` when it is present. Otherwise, outside
 * CI, one skipped test titled `title` stands for the tests the data would
 * have made, and `none` is returned; with `CI` set a missing need throws.
 */
export function loadOrSkip<T>(test: object, title: string, need: Need, load: () => T, none: T): T {
  if (missing(need) === undefined) return load();
  (needs(test, need) as unknown as (title: string, implementation: () => void) => void)(title, () => undefined);
  return none;
}
