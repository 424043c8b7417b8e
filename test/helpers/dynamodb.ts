/**
 * Test helper: a DynamoDB-API service for the DynamoDB main-database tests.
 * dynalite (an in-memory DynamoDB implementation) is started in this test
 * process on a free loopback port at the first call and stopped when the last
 * database handed out is dropped; every call gets a fresh table prefix, so
 * test files and tests never share tables. It needs no service of the
 * machine, so it always runs, in CI too.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import dynalite from 'dynalite';
import { DynamoDatabase } from '../../auth/index.ts';

export interface TestDynamo {
  /** The endpoint, for `--database-url`. */
  url: string;
  /** The table prefix of this database. */
  prefix: string;
  /** A client on this prefix (closed by `drop`). */
  db: DynamoDatabase;
  /** Server flags for this database. */
  flags: string[];
  /** Closes the client and, with the last database, the service. Safe to call twice. */
  drop(): Promise<void>;
}

let server: Promise<{ server: Server; url: string }> | undefined;
let users = 0;

function start(): Promise<{ server: Server; url: string }> {
  return new Promise((resolve, reject) => {
    const s = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 }) as Server;
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      resolve({ server: s, url: `http://127.0.0.1:${port}` });
    });
  });
}

/** A fresh, empty DynamoDB main database (its own table prefix) on the test process's dynalite. */
export async function createTestDynamo(): Promise<TestDynamo> {
  server ??= start();
  users++;
  const { url } = await server;
  const prefix = `t${Date.now().toString(36)}${randomBytes(3).toString('hex')}_`;
  const db = DynamoDatabase.open({ region: 'us-east-1', endpoint: url, accessKeyId: 'test', secretAccessKey: 'test', tablePrefix: prefix });
  let dropped = false;
  return {
    url,
    prefix,
    db,
    flags: ['--database-type=dynamodb', `--database-url=${url}`, '--cloud-region=us-east-1', '--cloud-access-key-id=test', '--cloud-secret-access-key=test', `--cloud-table-prefix=${prefix}`],
    async drop() {
      if (dropped) return;
      dropped = true;
      db.close();
      if (--users === 0 && server) {
        const running = server;
        server = undefined;
        const { server: s } = await running;
        s.closeAllConnections();
        await new Promise<void>((r) => s.close(() => r()));
      }
    },
  };
}
