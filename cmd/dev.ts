/**
 * `npm run dev`: the full server on an embedded SQLite file with a clearly
 * labelled development configuration. Fresh secrets are generated and printed
 * once; extra flags on the command line override the defaults.
 */
import { mkdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { main } from './cli.ts';

const dir = resolve(import.meta.dirname, '..', '.dev');
mkdirSync(dir, { recursive: true });
const secret = (): string => randomBytes(24).toString('base64url');
const adminSecret = secret();
const clientId = `dev-${randomBytes(4).toString('hex')}`;
const clientSecret = secret();

const flags = [
  '--env=development',
  '--database-type=sqlite',
  `--database-url=sqlite:${resolve(dir, 'latchkey.sqlite')}`,
  '--host=127.0.0.1',
  `--admin-secret=${adminSecret}`,
  `--client-id=${clientId}`,
  `--client-secret=${clientSecret}`,
  '--jwt-type=HS256',
  `--jwt-secret=${secret()}`,
  '--app-cookie-secure=false',
  '--admin-cookie-secure=false',
];

process.stderr.write(
  [
    '',
    '==================== DEVELOPMENT CONFIGURATION — NOT FOR PRODUCTION ====================',
    `  database       SQLite file ${resolve(dir, 'latchkey.sqlite')}`,
    '  bind           127.0.0.1 (HTTP :8080, gRPC :9091, metrics :8081)',
    '  JWT            HS256 with a fresh random secret; cookies without Secure',
    `  admin secret   ${adminSecret}`,
    `  client id      ${clientId}`,
    `  client secret  ${clientSecret}`,
    '  These secrets are shown once and change on every start.',
    '  Try: curl http://127.0.0.1:8080/v1/meta',
    '=========================================================================================',
    '',
  ].join('\n'),
);

process.exit(await main(['serve', ...flags, ...process.argv.slice(2)]));
