/**
 * better-auth as a web application runs it, for bench/peers.ts: its handler
 * on a bare `node:http` server, email and password enabled, on a SQLite file
 * through Node's built-in driver, its schema migrated at start. Passwords are
 * hashed with bcrypt at the same cost as the Latchkey server it is compared
 * with (better-auth's own default is scrypt), through the `bcrypt` package,
 * the usual choice for its custom hash hooks (Latchkey hashes with
 * `@node-rs/bcrypt`, the same algorithm and format), and its rate limiter
 * is off, as Latchkey's is raised, so both sides do the same work per
 * request.
 *
 *   node bench/peers/better_auth_server.ts DB_FILE BCRYPT_COST
 *
 * Prints one JSON line `{"ready": true, "url": …}` once it listens.
 */
import { createServer } from 'node:http';
import { DatabaseSync } from 'node:sqlite';
import bcrypt from 'bcrypt';
import { betterAuth } from 'better-auth';
import { getMigrations } from 'better-auth/db/migration';
import { toNodeHandler } from 'better-auth/node';

const [file, costArg] = process.argv.slice(2);
if (file === undefined || costArg === undefined) throw new Error('usage: better_auth_server.ts DB_FILE BCRYPT_COST');
const cost = Number(costArg);

const database = new DatabaseSync(file);
database.exec('PRAGMA journal_mode = WAL');
database.exec('PRAGMA synchronous = NORMAL');

const server = createServer();
await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
const { port } = server.address() as { port: number };
const url = `http://127.0.0.1:${port}`;

const auth = betterAuth({
  baseURL: url,
  secret: 'bench-better-auth-secret-0123456789abcdef0123456789',
  database,
  emailAndPassword: {
    enabled: true,
    password: {
      hash: (password: string) => bcrypt.hash(password, cost),
      verify: ({ hash, password }: { hash: string; password: string }) => bcrypt.compare(password, hash),
    },
  },
  rateLimit: { enabled: false },
  telemetry: { enabled: false },
  trustedOrigins: [url],
});

const { runMigrations } = await getMigrations(auth.options);
await runMigrations();

server.on('request', toNodeHandler(auth));
process.stdout.write(`${JSON.stringify({ ready: true, url })}\n`);
process.on('SIGTERM', () => server.close(() => process.exit(0)));
