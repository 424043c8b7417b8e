/**
 * Flags: defaults, validation, every startup refusal with its message and
 * exit status, `--help`, and the process entry's SIGTERM handling.
 */
import test from 'ava';
import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { jwtVerify } from 'jose';
import { ADMIN_SECRET_FATAL, FLAGS, helpText, parseFlags } from '../../cmd/index.ts';
import { REPO_ROOT } from '../helpers/shared.ts';
import { createTestDatabase } from '../helpers/databases.ts';
import { startTestServer } from '../helpers/server.ts';

const BIN = resolve(REPO_ROOT, 'bin', 'latchkey.js');

const VALID = [
  '--database-type=sqlite',
  '--database-url=sqlite:/tmp/never-opened.sqlite',
  '--admin-secret=s',
  '--client-id=c',
  '--client-secret=cs',
  '--jwt-type=HS256',
  '--jwt-secret=x',
];

function without(prefix: string, argv = VALID): string[] {
  return argv.filter((a) => !a.startsWith(`--${prefix}=`));
}

function problems(argv: string[]): string[] {
  const r = parseFlags(argv);
  return r.ok ? [] : r.problems;
}

test('valid flags give a frozen config with the spec defaults', (t) => {
  const r = parseFlags(VALID);
  if (!r.ok) return t.fail(r.problems.join('\n'));
  const c = r.config;
  t.is(c.httpPort, 8080);
  t.is(c.grpcPort, 9091);
  t.is(c.host, '0.0.0.0');
  t.is(c.metricsPort, 8081);
  t.is(c.metricsHost, '127.0.0.1');
  t.deepEqual(c.allowedOrigins, ['*']);
  t.true(c.enableGraphqlIntrospection);
  t.is(c.rateLimitRps, 30);
  t.is(c.rateLimitBurst, 20);
  t.true(c.enableGrpc);
  t.deepEqual(c.trustedProxies, []);
  t.is(c.httpBodyLimit, 1024 * 1024);
  t.true(c.httpRequestTimeout > 0);
  t.true(c.httpHeadersTimeout > 0);
  t.true(Object.isFrozen(c));
  t.true(Object.isFrozen(c.allowedOrigins));
  t.throws(() => {
    (c as unknown as Record<string, unknown>).httpPort = 1;
  });
});

test('flag values are typed: ints, booleans, durations, lists', (t) => {
  const r = parseFlags([
    ...VALID,
    '--http-port',
    '9000',
    '--enable-signup=false',
    '--enable-grpc',
    '--http-request-timeout=45s',
    '--allowed-origins=https://a.example, https://b.example',
    '--roles=user,admin',
    '--default-roles=user',
  ]);
  if (!r.ok) return t.fail(r.problems.join('\n'));
  t.is(r.config.httpPort, 9000);
  t.false(r.config.enableSignup);
  t.true(r.config.enableGrpc);
  t.is(r.config.httpRequestTimeout, 45_000);
  t.deepEqual(r.config.allowedOrigins, ['https://a.example', 'https://b.example']);
  t.deepEqual(r.config.roles, ['user', 'admin']);
});

test('an empty or missing admin secret is refused with the exact fatal message', (t) => {
  t.true(problems(without('admin-secret')).includes(ADMIN_SECRET_FATAL));
  t.true(problems([...without('admin-secret'), '--admin-secret=']).includes(ADMIN_SECRET_FATAL));
  t.true(problems([...without('admin-secret'), '--admin-secret=   ']).includes(ADMIN_SECRET_FATAL));
  t.is(ADMIN_SECRET_FATAL, 'FATAL: --admin-secret is required and must not be empty.');
});

test('missing client id or client secret is refused', (t) => {
  t.true(problems(without('client-id')).some((p) => p.includes('--client-id')));
  t.true(problems(without('client-secret')).some((p) => p.includes('--client-secret')));
});

test('missing or inconsistent JWT options are refused', (t) => {
  t.true(problems(without('jwt-type')).some((p) => p.includes('--jwt-type is required')));
  t.true(problems(without('jwt-secret')).some((p) => p.includes('--jwt-secret is required when --jwt-type is HS256')));
  const rs = [...without('jwt-secret', without('jwt-type')), '--jwt-type=RS256'];
  const ps = problems(rs);
  t.true(ps.some((p) => p.includes('--jwt-private-key is required')));
  t.true(ps.some((p) => p.includes('--jwt-public-key is required')));
  t.true(problems([...without('jwt-type'), '--jwt-type=XX1']).some((p) => p.startsWith('--jwt-type must be one of')));
  t.deepEqual(problems([...rs, '--jwt-private-key=k', '--jwt-public-key=p']), []);
});

test('missing database options are refused; unsupported database types are refused clearly', (t) => {
  t.true(problems(without('database-type')).some((p) => p.includes('--database-type is required')));
  t.true(problems(without('database-url')).some((p) => p.includes('--database-url')));
  const pg = [...without('database-url', without('database-type')), '--database-type=postgres'];
  t.true(problems(pg).some((p) => p.includes('--database-host with --database-name')));
  t.deepEqual(problems([...pg, '--database-host=db', '--database-name=lk']), []);
  const mongo = problems([...without('database-type'), '--database-type=mongodb']);
  t.true(mongo.some((p) => p.includes('mongodb is not supported by this server')));
});

test('dynamodb: --cloud-region is required, the key pair goes together, the endpoint is an http(s) URL; the --docdb-* flags are refused', (t) => {
  const base = [...without('database-url', without('database-type')), '--database-type=dynamodb'];
  t.true(problems(base).includes('--cloud-region is required for dynamodb'));
  const ok = [...base, '--cloud-region=eu-west-1'];
  t.deepEqual(problems(ok), [], 'no endpoint and no keys: AWS in the region, with the SDK credential chain');
  t.deepEqual(problems([...ok, '--database-url=http://127.0.0.1:8000', '--cloud-access-key-id=a', '--cloud-secret-access-key=b', '--cloud-table-prefix=prod_']), []);
  t.true(problems([...ok, '--cloud-access-key-id=a']).includes('--cloud-access-key-id and --cloud-secret-access-key must be given together'));
  t.true(problems([...ok, '--database-url=dynamodb.local']).includes('--database-url for dynamodb must be an http:// or https:// endpoint'));
  t.true(problems([...ok, '--cloud-table-prefix=a b']).some((p) => p.startsWith('--cloud-table-prefix may hold only')));
  t.true(problems([...ok, '--fga-store=postgres']).includes('--fga-store postgres needs --fga-store-url'));
  t.deepEqual(problems([...ok, '--fga-store=memory']), []);
  for (const flag of ['docdb-bucket', 'docdb-scope', 'docdb-ram-quota']) {
    t.true(problems([...VALID, `--${flag}=x`]).some((p) => p.startsWith(`--${flag} is not supported by this server: it has no document-database backend`)), flag);
  }
  t.true(problems([...without('database-type'), '--database-type=couchbase']).some((p) => p.includes('couchbase is not supported by this server')));
});

test('--http-port equal to --metrics-port is refused', (t) => {
  t.true(problems([...VALID, '--http-port=9000', '--metrics-port=9000']).includes('--http-port and --metrics-port must differ'));
});

test('inconsistent timeouts and an empty origin list are refused', (t) => {
  t.true(problems([...VALID, '--http-headers-timeout=60s', '--http-request-timeout=30s']).includes('--http-headers-timeout must not exceed --http-request-timeout'));
  t.true(problems([...VALID, '--allowed-origins=']).some((p) => p.startsWith('--allowed-origins must not be empty')));
});

test('--enforce-mfa without a usable second factor is refused at startup (TOTP, email OTP with SMTP, or SMS OTP with the vendor)', (t) => {
  const refused = (argv: string[]): boolean => problems([...VALID, '--enforce-mfa', ...argv]).some((p) => p.startsWith('--enforce-mfa needs a usable second factor'));
  t.true(refused([]), 'no method enabled');
  t.true(refused(['--enable-email-otp']), 'email codes without --smtp-host');
  t.true(refused(['--enable-email-otp', '--enable-sms-otp=false']));
  t.false(refused(['--enable-totp-login']));
  t.false(refused(['--enable-email-otp', '--smtp-host=127.0.0.1']));
  t.false(refused(['--enable-sms-otp', '--sms-account-sid=AC1', '--sms-api-key=k', '--sms-api-secret=s', '--sms-sender=+15550000000']));
  t.deepEqual(problems([...VALID, '--enforce-mfa', '--enable-totp-login']), []);
  // MFA off for the instance: nothing is enforced, nothing to refuse.
  t.deepEqual(problems([...VALID, '--enable-mfa=false']), []);
});

test('passkeys: the relying party comes from --url by default; origins outside the RP ID, non-origins and plain http off localhost are refused', (t) => {
  const on = (argv: string[]): string[] => problems([...VALID, '--enable-passkeys', ...argv]);
  t.deepEqual(on(['--url=https://auth.example.com']), []);
  t.deepEqual(on(['--url=http://localhost:8080']), []);
  t.deepEqual(on(['--url=https://auth.example.com', '--webauthn-rp-id=example.com', '--webauthn-origins=https://app.example.com,https://example.com']), []);
  t.true(on(['--webauthn-rp-id=example.com', '--webauthn-origins=https://evil.net']).some((p) => p.includes('is not within --webauthn-rp-id example.com')));
  t.true(on(['--webauthn-rp-id=example.com', '--webauthn-origins=https://notexample.com']).some((p) => p.includes('is not within')), 'a suffix that is not a parent domain');
  t.true(on(['--webauthn-rp-id=example.com', '--webauthn-origins=https://app.example.com/path']).some((p) => p.includes('is not an origin')));
  t.true(on(['--url=http://auth.example.com']).some((p) => p.includes('must be https')));
  t.true(on(['--webauthn-rp-id=exa mple.com', '--webauthn-origins=https://example.com']).some((p) => p.startsWith('--webauthn-rp-id must be a host name')));
  t.true(problems([...VALID, '--enable-passkeys', '--webauthn-attestation=indirect']).some((p) => p.startsWith('--webauthn-attestation')));
  t.true(on(['--url=http://127.0.0.1:8080']).some((p) => p.startsWith('--webauthn-rp-id must be a domain name, not an IP address')), 'an RP ID is never an IP address');
  // Passkeys off: the relying party is not checked.
  t.deepEqual(problems([...VALID, '--webauthn-origins=https://evil.net', '--webauthn-rp-id=example.com']), []);
});

test('unknown flags, v1 names and --env-file are refused', (t) => {
  t.true(problems([...VALID, '--no-such-flag=1']).includes('unknown flag --no-such-flag'));
  t.true(problems([...VALID, '--database_url=x']).includes('--database_url is deprecated, use --database-url'));
  t.true(problems([...VALID, '--database_type=x']).includes('--database_type is deprecated, use --database-type'));
  t.true(problems([...VALID, '--log_level=x']).includes('--log_level is deprecated, use --log-level'));
  t.true(problems([...VALID, '--redis_url=x']).includes('--redis_url is deprecated, use --redis-url'));
  t.true(problems([...VALID, '--env-file=.env']).some((p) => p.startsWith('--env-file is not supported')));
});

test('bad values are refused with the flag named', (t) => {
  t.true(problems([...VALID, '--http-port=abc']).some((p) => p.startsWith('--http-port must be an integer')));
  t.true(problems([...VALID, '--http-port=70000']).some((p) => p.startsWith('--http-port must be between')));
  t.true(problems([...VALID, '--enable-signup=maybe']).some((p) => p.startsWith('--enable-signup must be true or false')));
  t.true(problems([...VALID, '--trusted-proxies=10.0.0.0/33']).some((p) => p.startsWith('--trusted-proxies')));
  t.true(problems([...VALID, '--log-level=loud']).some((p) => p.startsWith('--log-level must be one of')));
  t.true(problems([...VALID, '--http-port=1', '--http-port=2']).includes('--http-port is given more than once'));
});

test('all problems are reported together', (t) => {
  const ps = problems(['--http-port=5', '--metrics-port=5', '--bogus']);
  t.true(ps.includes(ADMIN_SECRET_FATAL));
  t.true(ps.some((p) => p.includes('--client-id')));
  t.true(ps.some((p) => p.includes('--jwt-type')));
  t.true(ps.some((p) => p.includes('--database-type')));
  t.true(ps.includes('--http-port and --metrics-port must differ'));
  t.true(ps.includes('unknown flag --bogus'));
  t.is(ps[0], ADMIN_SECRET_FATAL, 'the fatal admin-secret line comes first');
});

test('--help text lists every flag with its default', (t) => {
  const help = helpText();
  for (const name of Object.keys(FLAGS)) t.true(help.includes(`--${name} `), name);
  t.true(help.includes('--http-port <int> (default 8080)'));
  t.true(help.includes('--allowed-origins <list> (default *)'));
});

test('every secret flag has a --<name>-file twin that reads the value from a file, trailing line breaks removed', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'lk-flag-files-'));
  try {
    const secret = join(dir, 'admin-secret');
    await writeFile(secret, '  s3cret with spaces \n');
    const crlf = join(dir, 'jwt-secret');
    await writeFile(crlf, 'jwt\r\n\r\n');
    const keys = join(dir, 'preshared-keys');
    await writeFile(keys, 'key-one-12345,key-two-12345\n');
    const r = parseFlags([
      ...without('admin-secret', without('jwt-secret')),
      `--admin-secret-file=${secret}`,
      `--jwt-secret-file=${crlf}`,
      `--openfga-preshared-keys-file=${keys}`,
    ]);
    if (!r.ok) return t.fail(r.problems.join('\n'));
    t.is(r.config.adminSecret, '  s3cret with spaces ', 'only the trailing line break is removed');
    t.is(r.config.jwtSecret, 'jwt');
    t.deepEqual(r.config.openfgaPresharedKeys, ['key-one-12345', 'key-two-12345'], 'the file text is parsed as the flag is');
    const help = helpText();
    for (const [name, row] of Object.entries(FLAGS)) {
      if (row.secret) t.true(help.includes(`--${name}-file <path>`), name);
      else t.false(help.includes(`--${name}-file `), name);
    }
    t.deepEqual(problems([...VALID, '--client-id-file=/etc/hostname']), ['unknown flag --client-id-file'], 'a flag that is not secret has no twin');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a secret flag given with its file twin, or a file twin that cannot be read, is refused with the other problems', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'lk-flag-files-'));
  try {
    const file = join(dir, 'jwt-secret');
    await writeFile(file, 'x\n');
    const both = problems([...VALID, `--jwt-secret-file=${file}`]);
    t.true(both.includes('--jwt-secret and --jwt-secret-file are both given; use one'), both.join('\n'));
    const missing = join(dir, 'absent');
    const p = problems([...without('client-id', without('admin-secret')), `--admin-secret-file=${missing}`, `--database-password-file=${dir}`]);
    t.true(p.includes(`--admin-secret-file: cannot read "${missing}" (no such file)`), p.join('\n'));
    t.true(p.includes(`--database-password-file: cannot read "${dir}" (it is a directory)`), p.join('\n'));
    t.true(p.includes('--client-id is required'), 'listed together with the other problems');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('--jwt-private-key-file: the server signs with a PEM private key read from a file', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'lk-flag-files-'));
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const privatePem = privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  const publicPem = publicKey.export({ type: 'spki', format: 'pem' }) as string;
  const keyFile = join(dir, 'jwt.pem');
  await writeFile(keyFile, privatePem);
  try {
    const r = parseFlags([...without('jwt-type', without('jwt-secret')), '--jwt-type=RS256', `--jwt-private-key-file=${keyFile}`, `--jwt-public-key=${publicPem}`]);
    if (!r.ok) return t.fail(r.problems.join('\n'));
    t.is(r.config.jwtPrivateKey, privatePem.replace(/\n+$/, ''));
    const server = await startTestServer({ 'jwt-type': 'RS256', 'jwt-secret': '', 'jwt-private-key-file': keyFile, 'jwt-public-key': publicPem, 'enable-email-verification': false });
    try {
      const s = await server.call('signup', { email: `key-file-${Date.now()}@example.com`, password: 'correct horse battery' }, { protocol: 'rest' });
      t.is(s.error, undefined);
      const token = s.body!['access_token'] as string;
      const { payload, protectedHeader } = await jwtVerify(token, publicKey);
      t.is(protectedHeader.alg, 'RS256');
      t.truthy(payload.sub);
    } finally {
      await server.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('every spec flag-reference flag exists', (t) => {
  const spec = [
    'env', 'http-port', 'host', 'metrics-port', 'metrics-host', 'log-level', 'grpc-port',
    'database-type', 'database-url', 'database-name', 'database-username', 'database-password', 'database-host', 'database-port',
    'database-cert', 'database-ca-cert', 'database-cert-key', 'docdb-bucket', 'docdb-scope', 'docdb-ram-quota',
    'cloud-region', 'cloud-access-key-id', 'cloud-secret-access-key', 'redis-url', 'fga-store', 'fga-store-url',
    'client-id', 'client-secret', 'admin-secret', 'allowed-origins', 'default-authorize-response-type', 'default-authorize-response-mode',
    'organization-name', 'organization-logo', 'enable-login-page', 'enable-playground', 'enable-graphql-introspection',
    'roles', 'default-roles', 'protected-roles', 'enable-strong-password', 'enable-basic-authentication', 'enable-email-verification',
    'enable-magic-link-login', 'enforce-mfa', 'enable-mfa', 'enable-signup', 'enable-totp-login', 'enable-email-otp', 'enable-sms-otp',
    'enable-mobile-basic-authentication', 'enable-phone-verification', 'app-cookie-secure', 'admin-cookie-secure',
    'jwt-type', 'jwt-secret', 'jwt-private-key', 'jwt-public-key', 'jwt-role-claim', 'custom-access-token-script',
    'smtp-host', 'smtp-port', 'smtp-username', 'smtp-password', 'smtp-sender-email', 'smtp-sender-name', 'smtp-local-name', 'skip-tls-verification',
    'sms-account-sid', 'sms-api-key', 'sms-api-secret', 'sms-sender',
    'google-client-id', 'google-client-secret', 'google-scopes', 'microsoft-tenant-id',
    'reset-password-url', 'disable-admin-header-auth', 'trusted-proxies', 'rate-limit-rps', 'rate-limit-burst', 'enable-grpc',
  ];
  for (const f of spec) t.true(Object.hasOwn(FLAGS, f), f);
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(args: string[], timeoutMs = 90_000): Promise<Run> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`timed out: ${stderr}`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
  });
}

test('the bin: --help exits 0 and lists the flags', async (t) => {
  const r = await run(['--help']);
  t.is(r.code, 0);
  t.true(r.stdout.includes('--admin-secret'));
  const v = await run(['--version']);
  t.is(v.code, 0);
  t.regex(v.stdout, /^\d+\.\d+\.\d+\n$/);
});

test('the bin: a missing admin secret exits non-zero with the exact fatal line, all problems listed', async (t) => {
  const r = await run(['serve', '--client-id=c']);
  t.not(r.code, 0);
  const lines = r.stderr.split('\n');
  t.is(lines[0], ADMIN_SECRET_FATAL);
  t.true(r.stderr.includes('--client-secret is required'));
  t.true(r.stderr.includes('--jwt-type is required'));
  t.true(r.stderr.includes('--database-type is required'));
});

test('the bin: an unreachable database refuses startup with a clear message', async (t) => {
  const r = await run([
    '--database-type=postgres',
    '--database-url=postgres://nobody@127.0.0.1:1/none',
    '--admin-secret=s',
    '--client-id=c',
    '--client-secret=cs',
    '--jwt-type=HS256',
    '--jwt-secret=x',
    '--http-port=0',
    '--grpc-port=0',
    '--metrics-port=0',
  ]);
  t.is(r.code, 1);
  t.regex(r.stderr, /^FATAL: cannot connect to the postgres database at 127\.0\.0\.1:1\/none/);
});

test('the bin: an unreadable secret file refuses startup with a clear line among the other problems', async (t) => {
  const r = await run(['serve', '--admin-secret-file=/nonexistent/latchkey-admin-secret', '--client-id=c']);
  t.is(r.code, 1);
  t.true(r.stderr.includes('FATAL: --admin-secret-file: cannot read "/nonexistent/latchkey-admin-secret" (no such file)'), r.stderr);
  t.true(r.stderr.includes('--client-secret is required'));
});

test('the bin: unknown subcommands and missing subcommand modules are reported', async (t) => {
  const r = await run(['frobnicate']);
  t.is(r.code, 2);
  t.true(r.stderr.includes('unknown command'));
});

test('the bin: SIGTERM stops accepting, closes the database and exits 0', async (t) => {
  const db = await createTestDatabase('sqlite');
  try {
    const child = spawn(
      process.execPath,
      [
        BIN,
        'serve',
        '--database-type=sqlite',
        `--database-url=${db.url}`,
        '--admin-secret=s',
        '--client-id=c',
        '--client-secret=cs',
        '--jwt-type=HS256',
        '--jwt-secret=x',
        '--host=127.0.0.1',
        '--http-port=0',
        '--grpc-port=0',
        '--metrics-port=0',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    const started = await new Promise<string>((resolvePromise, reject) => {
      const timer = setTimeout(() => reject(new Error('server did not start')), 90_000);
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const line = out.split('\n').find((l) => l.includes('"latchkey started"'));
        if (line) {
          clearTimeout(timer);
          resolvePromise((JSON.parse(line) as { http: string }).http);
        }
      });
    });
    const health = await fetch(`${started}/healthz`);
    t.is(health.status, 200);
    const exit = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    child.kill('SIGTERM');
    t.is(await exit, 0);
    t.true(out.includes('"latchkey stopped"'));
    const secretLogged = out.includes('"admin-secret":"s"') || out.includes('"jwt-secret":"x"');
    t.false(secretLogged, 'secrets are redacted in the startup log');
    t.true(out.includes('"admin-secret":"[redacted]"'));
    await t.throwsAsync(fetch(`${started}/healthz`));
  } finally {
    await db.drop();
  }
});
