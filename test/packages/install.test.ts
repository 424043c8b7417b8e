/**
 * The published packages, as a user gets them: `npm run build` lays out
 * `@latchkey/engine`, `@latchkey/client` and `latchkey`, `npm pack` makes
 * their tarballs, and each is installed into an empty project (from the local
 * tarballs; their dependencies from the npm cache or registry). There, on
 * Node.js 24 and on Node.js 22:
 *
 * - every TypeScript/JavaScript example of docs/engine.md, docs/storage.md,
 *   docs/dsl.md, docs/clients.md and docs/testing-models.md runs as
 *   written, in a project made by the doc's own `npm install` lines, printing
 *   what the doc says it prints, and type-checks against the published
 *   declarations (testing-models.md's include node:test, vitest and jest
 *   files using `@latchkey/engine/testing`, run by those runners installed
 *   beside it, each required to find and pass every test of the file);
 * - `npx latchkey --version`, `npx latchkey dsl validate` and
 *   `npx latchkey fga test` (assertions and a property) work from the
 *   installed server package, and `latchkey/engine/testing` re-exports the
 *   testing entry point;
 * - the installed server starts and answers `meta` over GraphQL, REST and gRPC
 *   (through the installed client), and the client examples run against it.
 *
 * It also holds the packages to their promises: the engine installs no HTTP
 * framework, native addon, gRPC or SQL driver; the client installs nothing
 * but itself; no test, bench or CI file is in a tarball.
 */
import test from 'ava';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { buildPackages, packPackages, PACKAGES, PACKAGES_OUT } from '../../packages/build.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/databases.ts';
import { freePort } from '../helpers/loopback.ts';
import { REPO_ROOT } from '../helpers/shared.ts';
import { needs } from '../helpers/needs.ts';

const NODE22_PACKAGE = `node-${process.platform}-${process.arch}@22`;
const ADMIN_SECRET = 'install-test-admin-secret';
const CLIENT_ID = 'install-test-client';

interface NodeBinary {
  major: number;
  bin: string;
}

interface Context {
  work: string;
  tarballs: Record<string, string>;
  nodes: NodeBinary[];
}

let ctx: Context | undefined;
const cleanups: (() => Promise<void> | void)[] = [];

/** The environment of a child process: this one's, without npm's own variables, `node` of the given binary first on PATH. */
function childEnv(node: NodeBinary, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.toLowerCase().startsWith('npm_')) env[k] = v;
  env.PATH = `${dirname(node.bin)}:${process.env.PATH ?? ''}`;
  env.NO_UPDATE_NOTIFIER = '1';
  return { ...env, ...extra };
}

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(cmd, args, { cwd, env, encoding: 'utf8', timeout: 300_000, maxBuffer: 64 * 1024 * 1024 });
  return { status: r.status ?? -1, stdout: r.stdout ?? '', stderr: `${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}

function mustRun(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): string {
  const r = run(cmd, args, cwd, env);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} (in ${cwd}) exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

function context(): Context {
  if (ctx === undefined) throw new Error('the packages were not built');
  return ctx;
}

const node24 = (): NodeBinary => context().nodes[0]!;

/** An empty ESM project. */
function project(name: string): string {
  const dir = join(context().work, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name, private: true, type: 'module' }, null, 2)}\n`);
  return dir;
}

/** `npm install` of package names, our own taken from the packed tarballs. */
function npmInstall(dir: string, names: string[]): void {
  // The server's own dependencies on the engine and client packages come from their tarballs too.
  const all = names.includes('latchkey') ? [...new Set([...names, '@latchkey/engine', '@latchkey/client'])] : names;
  // A package the repository itself depends on (fast-check, vitest, jest) is installed at the version of its lockfile.
  const specs = all.map((n) => context().tarballs[n] ?? (n.startsWith('-') || n.lastIndexOf('@') > 0 ? n : `${n}@${lockedVersion(n) ?? 'latest'}`));
  mustRun('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', ...specs], dir, childEnv(node24()));
}

/**
 * The test runners docs/testing-models.md's examples run under, at fixed versions (not dependencies of the
 * repository: the project's own tests use ava, and vitest's toolchain has optional packages the registry mirror of
 * CI may lack, which `npm ci` of the repository would refuse while `npm install` in a user's project skips them).
 */
const RUNNERS: Record<string, string> = { vitest: '5.1.2', jest: '30.5.2' };

/** The version of a package to install: a runner's fixed one, or the repository lockfile's for its own dependencies. */
function lockedVersion(name: string): string | undefined {
  if (RUNNERS[name] !== undefined) return RUNNERS[name];
  const lock = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string }> };
  return lock.packages[`node_modules/${name}`]?.version;
}

/**
 * Runs one test file with the runner installed in the project (vitest, or
 * jest with Node's VM modules for ES modules), reading its JSON report.
 */
function runTests(dir: string, runner: 'vitest' | 'jest', file: string, node: NodeBinary, env: NodeJS.ProcessEnv): { status: number; stdout: string; stderr: string; report?: { total: number; passed: number } } {
  const reportFile = `${file}.report.json`;
  const args = runner === 'vitest'
    ? [join(dir, 'node_modules', 'vitest', 'vitest.mjs'), 'run', '--reporter=json', `--outputFile=${reportFile}`, basename(file)]
    : [join(dir, 'node_modules', 'jest', 'bin', 'jest.js'), '--json', `--outputFile=${reportFile}`, '--rootDir', dirname(file), basename(file)];
  const r = run(node.bin, args, dirname(file), runner === 'jest' ? { ...env, NODE_OPTIONS: '--experimental-vm-modules' } : env);
  try {
    // Both write the same report format (jest's).
    const report = JSON.parse(readFileSync(reportFile, 'utf8')) as { numTotalTests: number; numPassedTests: number };
    return { ...r, report: { total: report.numTotalTests, passed: report.numPassedTests } };
  } catch {
    return r;
  }
}

/** Names of every package installed in a project. */
function installed(dir: string): Set<string> {
  const lock = JSON.parse(readFileSync(join(dir, 'node_modules', '.package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
  return new Set(Object.keys(lock.packages).map((p) => p.slice(p.lastIndexOf('node_modules/') + 'node_modules/'.length)));
}

interface DocBlock {
  lang: string;
  code: string;
  /** What runs it: plain `node`, or the test runner it imports. */
  runner: 'node' | 'vitest' | 'jest';
  /** The text of the "Running it prints:" block after it, when there is one. */
  prints?: string;
}

/** The fenced blocks of a doc, each code block paired with the output the doc says it prints. */
function docBlocks(file: string): { installs: string[][]; examples: DocBlock[] } {
  const text = readFileSync(join(REPO_ROOT, 'docs', file), 'utf8');
  const fences = [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```\n/gm)].map((m) => ({ lang: m[1]!, code: m[2]!, start: m.index, end: m.index + m[0].length }));
  const installs: string[][] = [];
  const examples: DocBlock[] = [];
  fences.forEach((f, i) => {
    if (f.lang === 'sh') {
      for (const line of f.code.split('\n')) if (line.startsWith('npm install ')) installs.push(line.slice('npm install '.length).trim().split(/\s+/));
    }
    if (f.lang !== 'ts' && f.lang !== 'js') return;
    const next = fences[i + 1];
    const between = next === undefined ? '' : text.slice(f.end, next.start).trim();
    const runner = /from 'vitest'/.test(f.code) ? 'vitest' : /from '@jest\/globals'/.test(f.code) ? 'jest' : 'node';
    examples.push({ lang: f.lang, code: f.code, runner, ...(next !== undefined && between === 'Running it prints:' ? { prints: next.code } : {}) });
  });
  return { installs, examples };
}

/** Writes a doc's examples into `<project>/<sub>/` and type-checks them against the installed declarations. */
function writeExamples(dir: string, sub: string, examples: DocBlock[]): string[] {
  const runDir = join(dir, sub);
  mkdirSync(runDir, { recursive: true });
  return examples.map((e, i) => {
    // A test runner finds its files by name: `*.test.mts` (vitest), `*.test.mjs` (jest).
    const file = join(runDir, `example_${i + 1}${e.runner === 'node' ? '' : '.test'}.${e.lang === 'ts' ? 'mts' : 'mjs'}`);
    writeFileSync(file, e.code);
    return file;
  });
}

function typecheck(dir: string, files: string[]): void {
  const tsconfig = {
    compilerOptions: {
      target: 'ES2024',
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      strict: true,
      exactOptionalPropertyTypes: true,
      noUncheckedIndexedAccess: true,
      allowImportingTsExtensions: true,
      noEmit: true,
      skipLibCheck: true,
      typeRoots: [join(REPO_ROOT, 'node_modules', '@types')],
      types: ['node'],
    },
    files,
  };
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2));
  mustRun(node24().bin, [join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(dir, 'tsconfig.json')], dir, childEnv(node24()));
}

interface InstalledServer {
  url: string;
  grpc: string;
  stop(): Promise<void>;
}

/** Starts the installed server (`node_modules/latchkey/bin/latchkey.js`) on a fresh SQLite file. */
async function startInstalledServer(dir: string, node: NodeBinary): Promise<InstalledServer> {
  for (let attempt = 0; ; attempt++) {
    const [http, grpc, metrics] = [await freePort(), await freePort(), await freePort()];
    const data = await mkdtemp(join(tmpdir(), 'lk-installed-'));
    const child: ChildProcess = spawn(
      node.bin,
      [
        join(dir, 'node_modules', 'latchkey', 'bin', 'latchkey.js'),
        '--database-type=sqlite', `--database-url=sqlite:${join(data, 'latchkey.sqlite')}`,
        `--admin-secret=${ADMIN_SECRET}`, `--client-id=${CLIENT_ID}`, '--client-secret=install-test-secret',
        '--jwt-type=HS256', '--jwt-secret=install-test-jwt-secret-0123456789abcdef',
        '--host=127.0.0.1', `--http-port=${http}`, `--grpc-port=${grpc}`, `--metrics-port=${metrics}`,
        '--log-level=error',
      ],
      { cwd: dir, env: childEnv(node), stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const url = `http://127.0.0.1:${http}`;
    const stop = async (): Promise<void> => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
      await rm(data, { recursive: true, force: true });
    };
    const deadline = Date.now() + 30_000;
    let up = false;
    while (Date.now() < deadline && child.exitCode === null) {
      // Readiness: gRPC opens after the HTTP listener (and /healthz) is up.
      up = await fetch(`${url}/readyz`).then((r) => r.ok, () => false);
      if (up) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    if (up) return { url, grpc: `127.0.0.1:${grpc}`, stop };
    await stop();
    if (attempt >= 2) throw new Error(`the installed server did not start on Node ${node.major}:\n${stderr}`);
  }
}

test.before(async () => {
  const work = await mkdtemp(join(tmpdir(), 'lk-packages-'));
  cleanups.push(() => rm(work, { recursive: true, force: true }));
  buildPackages();
  const tarballs = packPackages(join(work, 'tarballs'));
  // Node.js 22 from the registry's per-platform package: its `node` package would claim the same bin as
  // the Node.js 24 the project pins, so it is fetched here rather than installed as a devDependency.
  const nodeDir = join(work, 'node22');
  mkdirSync(nodeDir, { recursive: true });
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.toLowerCase().startsWith('npm_')) delete env[k];
  const packed = JSON.parse(mustRun('npm', ['pack', '--prefer-offline', '--json', '--loglevel=error', NODE22_PACKAGE], nodeDir, env)) as [{ filename: string }];
  mustRun('tar', ['xzf', packed[0].filename, 'package/bin/node'], nodeDir, env);
  const node22 = join(nodeDir, 'package', 'bin', 'node');
  ctx = { work, tarballs, nodes: [{ major: 24, bin: process.execPath }, { major: 22, bin: node22 }] };
  for (const n of ctx.nodes) {
    const v = mustRun(n.bin, ['--version'], work, env).trim();
    if (!v.startsWith(`v${n.major}.`)) throw new Error(`expected Node ${n.major}, ${n.bin} is ${v}`);
  }
});

test.after.always(async () => {
  for (const c of cleanups.reverse()) await c();
});

test.serial('the tarballs hold compiled code, declarations, README, LICENSE and the proto, and no tests, benches or CI files', (t) => {
  for (const spec of PACKAGES) {
    const dir = join(PACKAGES_OUT, spec.dir);
    const [report] = JSON.parse(mustRun('npm', ['pack', '--dry-run', '--json', '--loglevel=error'], dir, childEnv(node24()))) as [{ files: { path: string }[] }];
    const files = report.files.map((f) => f.path);
    t.deepEqual(files.filter((f) => /^(test|bench|\.ci|docs|packages|node_modules)\//.test(f) || f.endsWith('.ts') && !f.endsWith('.d.ts')), [], spec.name);
    for (const required of ['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md']) t.true(files.includes(required), `${spec.name}: ${required}`);
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
      exports: Record<string, { types: string; default: string } | string>;
      engines: { node: string };
      bin?: Record<string, string>;
    };
    t.is(manifest.engines.node, '>=22.13');
    for (const [subpath, target] of Object.entries(manifest.exports)) {
      const targets = typeof target === 'string' ? [target] : [target.types, target.default];
      for (const f of targets) t.true(files.includes(f.replace(/^\.\//, '')), `${spec.name} export ${subpath} → ${f}`);
    }
    // Every compiled module comes with its declarations and source map (the server's one-line re-exports at the top level and the
    // static files served as they are, such as the dashboard's page script, excepted); those static files are all there.
    const assets = new Set(spec.assets ?? []);
    const compiled = files.filter((f) => f.endsWith('.js') && f.includes('/') && !f.startsWith('bin/') && !assets.has(f));
    for (const asset of assets) t.true(files.includes(asset), `${spec.name}: ${asset}`);
    t.true(compiled.length > 0);
    t.deepEqual(compiled.filter((f) => !files.includes(`${f}.map`) || !files.includes(f.replace(/\.js$/, '.d.ts'))), [], `${spec.name}: maps and declarations`);
    for (const bin of Object.values(manifest.bin ?? {})) t.true(files.includes(bin.replace(/^\.\//, '')), `${spec.name} bin ${bin}`);
    if (spec.name !== '@latchkey/engine') t.true(files.includes('api/latchkey.proto'), `${spec.name}: the proto`);
  }
});

test.serial('the installed server: npx latchkey --version, dsl validate, fga test, and meta over GraphQL, REST and gRPC, on Node 24 and 22', async (t) => {
  t.timeout(600_000);
  const dir = project('server');
  npmInstall(dir, ['latchkey']);
  const got = installed(dir);
  t.log(`npm install latchkey installs ${got.size} packages`);
  t.true(got.has('@latchkey/engine') && got.has('@latchkey/client'), 'the server depends on the engine and client packages');

  writeFileSync(join(dir, 'model.fga'), 'model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define owner: [user]\n    define viewer: [user] or owner\n');
  writeFileSync(join(dir, 'broken.fga'), 'model\n  schema 1.1\ntype doc\n  relations\n    define viewer: [user]\n');
  writeFileSync(
    join(dir, 'store.fga.yaml'),
    [
      'name: docs', 'model_file: ./model.fga', 'tuples:', '  - user: user:anne', '    relation: owner', '    object: doc:1', 'tests:', '  - name: owners view',
      '    check:', '      - user: user:anne', '        object: doc:1', '        assertions:', '          viewer: true', '          owner: true',
      '      - user: user:bob', '        object: doc:1', '        assertions:', '          viewer: false',
      '    list_objects:', '      - user: user:anne', '        type: doc', '        assertions:', '          viewer: [doc:1]',
      'properties:', '  - name: owners view', '    implies: [doc#owner, doc#viewer]', '    seed: 1', '    runs: 50', '',
    ].join('\n'),
  );
  const version = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

  // The installed client, with the gRPC libraries the server brings, asks for meta over each protocol.
  t.true(existsSync(join(dir, 'node_modules', '@grpc', 'grpc-js')), 'the gRPC peers are installed with the server');
  writeFileSync(
    join(dir, 'meta_probe.mjs'),
    [
      "import { LatchkeyClient } from '@latchkey/client';",
      'const out = {};',
      "for (const protocol of ['graphql', 'rest', 'grpc']) {",
      '  const client = new LatchkeyClient({ client_id: process.env.LATCHKEY_CLIENT_ID, service_url: process.env.LATCHKEY_URL, protocol, grpc_endpoint: process.env.LATCHKEY_GRPC });',
      '  const meta = await client.meta();',
      '  out[protocol] = { version: meta.version, client_id: meta.client_id };',
      '  await client.close();',
      '}',
      'console.log(JSON.stringify(out));',
    ].join('\n'),
  );

  for (const node of context().nodes) {
    const env = childEnv(node);
    t.is(mustRun('npx', ['--no-install', 'latchkey', '--version'], dir, env).trim(), version, `Node ${node.major}: --version`);
    t.regex(mustRun('npx', ['--no-install', 'latchkey', 'dsl', 'validate', 'model.fga'], dir, env), /valid/, `Node ${node.major}: dsl validate`);
    const broken = run('npx', ['--no-install', 'latchkey', 'dsl', 'validate', 'broken.fga'], dir, env);
    t.is(broken.status, 1, `Node ${node.major}: an invalid model exits 1`);
    t.regex(broken.stdout + broken.stderr, /broken\.fga:5:\d+: error/);
    const fgaTest = mustRun('npx', ['--no-install', 'latchkey', 'fga', 'test', 'store.fga.yaml'], dir, env);
    t.regex(fgaTest, /5 passed, 0 failed/, `Node ${node.major}: fga test`);
    t.regex(fgaTest, /^ok {3}property 'owners view': held on 50 generated stores \(seed 1\)$/m, `Node ${node.major}: fga test property`);
    t.is(
      mustRun(node.bin, ['--input-type=module', '-e', "const m = await import('latchkey/engine/testing'); console.log(typeof m.assertModelProperty, typeof m.storeArbitrary)"], dir, env).trim(),
      'function function',
      `Node ${node.major}: latchkey/engine/testing`,
    );

    const server = await startInstalledServer(dir, node);
    try {
      const rest = (await (await fetch(`${server.url}/v1/meta`)).json()) as { version: string };
      t.is(rest.version, version);
      // The pages, whose files the package carries as they are.
      t.is((await fetch(`${server.url}/playground/graphiql.js`)).status, 200, `Node ${node.major}: the playground's GraphiQL`);
      for (const page of ['/app', '/dashboard', '/playground']) {
        const res = await fetch(`${server.url}${page}`);
        t.is(res.status, 200, `Node ${node.major}: ${page}`);
        t.regex(await res.text(), /<!DOCTYPE html>/i, `Node ${node.major}: ${page}`);
      }
      const probe = JSON.parse(
        mustRun(node.bin, ['meta_probe.mjs'], dir, childEnv(node, { LATCHKEY_URL: server.url, LATCHKEY_CLIENT_ID: CLIENT_ID, LATCHKEY_GRPC: server.grpc })),
      ) as Record<string, { version: string; client_id: string }>;
      const expected = { version, client_id: CLIENT_ID };
      t.deepEqual(probe, { graphql: expected, rest: expected, grpc: expected }, `Node ${node.major}: meta over the three protocols`);
    } finally {
      await server.stop();
    }
  }
});

const MISSING_PEER_PROBES: Record<string, string> = {
  'engine.md': "await import('@latchkey/engine/sql').then(() => console.log('loaded'), (e) => console.log(e.code, e.reason));\n",
  'clients.md': [
    "import { LatchkeyClient } from '@latchkey/client';",
    "const client = new LatchkeyClient({ client_id: 'c', service_url: 'http://127.0.0.1:9', protocol: 'grpc' });",
    "await client.meta().then(() => console.log('answered'), (e) => console.log(e.code, e.reason));",
    '',
  ].join('\n'),
};

const SERVER_ONLY = ['express', '@node-rs/bcrypt', 'graphql', 'graphql-http', 'jose', 'ioredis', 'nodemailer', 'otplib', 'prom-client', 'minimist', 'rate-limiter-flexible'];
const GRPC = ['@grpc/grpc-js', '@grpc/proto-loader', '@grpc/reflection', 'grpc-health-check'];
const SQL = ['sequelize', 'pg', 'mysql2', 'sqlite3', 'better-sqlite3', 'tedious', 'mariadb'];

for (const [doc, footprint] of [
  ['engine.md', { forbidden: [...SERVER_ONLY, ...GRPC, ...SQL], only: undefined }],
  ['dsl.md', { forbidden: [...SERVER_ONLY, ...GRPC, ...SQL], only: undefined }],
  ['storage.md', { forbidden: [...SERVER_ONLY, ...GRPC], only: undefined }],
  ['clients.md', { forbidden: [...SERVER_ONLY, ...SQL, '@latchkey/engine', 'latchkey'], only: ['@latchkey/client'] }],
  // The engine, then fast-check (at the repository's locked version), vitest and jest (at RUNNERS' versions) beside it,
  // the doc's further install lines: the examples run under node:test, vitest and jest.
  ['testing-models.md', { forbidden: [...SERVER_ONLY, ...GRPC, ...SQL], only: undefined }],
] as const) {
  // docs/storage.md's examples run on PostgreSQL.
  needs(test, ...(doc === 'storage.md' ? (['postgres'] as const) : [])).serial(`docs/${doc}: installed as the doc says, every example runs on Node 24 and 22 and prints what the doc says`, async (t) => {
    t.timeout(600_000);
    const { installs, examples } = docBlocks(doc);
    t.true(installs.length > 0, 'the doc has an npm install line');
    t.true(examples.length > 0, 'the doc has examples');
    t.true(installs[0]!.some((n) => n.startsWith('@latchkey/')), 'the first install line installs a Latchkey package');
    const dir = project(doc.replace('.md', ''));
    installs.forEach((names, i) => {
      npmInstall(dir, names);
      if (i !== 0) return;
      // The footprint of the doc's first install line, before any optional extra.
      const got = installed(dir);
      t.log(`${doc}: npm install ${names.join(' ')} installs ${got.size} packages`);
      t.deepEqual(footprint.forbidden.filter((n) => got.has(n)), [], `${doc}: nothing of the server, gRPC or SQL`);
      if (footprint.only !== undefined) t.deepEqual([...got].sort(), [...footprint.only].sort());
      // What is left out says so: the SQL store without sequelize, gRPC without its libraries.
      const probe = MISSING_PEER_PROBES[doc];
      if (probe !== undefined) {
        writeFileSync(join(dir, 'missing_peer.mjs'), probe);
        t.is(mustRun(node24().bin, ['missing_peer.mjs'], dir, childEnv(node24())).trim(), 'failed_precondition missing_dependency', `${doc}: missing optional peer`);
      }
    });

    let server: InstalledServer | undefined;
    for (const node of context().nodes) {
      const files = writeExamples(dir, `node${node.major}`, examples);
      if (node.major === 24) typecheck(dir, files.filter((f) => f.endsWith('.mts')));
      const env: Record<string, string> = {};
      let database: TestDatabase | undefined;
      if (doc === 'storage.md') {
        database = await createTestDatabase('postgres', 'lk_pkg');
        env.DATABASE_URL = database.url;
      }
      if (doc === 'clients.md') {
        server = await startInstalledServer(join(context().work, 'server'), node);
        Object.assign(env, { LATCHKEY_URL: server.url, LATCHKEY_CLIENT_ID: CLIENT_ID, LATCHKEY_ADMIN_SECRET: ADMIN_SECRET, LATCHKEY_GRPC: server.grpc });
      }
      try {
        examples.forEach((example, i) => {
          const file = files[i]!;
          if (example.runner !== 'node') {
            // A test file: its runner must find it and pass every test in it.
            const r = runTests(dir, example.runner, file, node, childEnv(node, env));
            t.is(r.status, 0, `Node ${node.major}, docs/${doc} example ${i + 1} under ${example.runner}:\n${example.code}\n${r.stdout}\n${r.stderr}`);
            const tests = example.code.match(/^test\(/gm)?.length ?? 0;
            t.true(tests > 0, `docs/${doc} example ${i + 1} declares its tests`);
            t.deepEqual(r.report, { total: tests, passed: tests }, `Node ${node.major}, docs/${doc} example ${i + 1}: ${example.runner} ran and passed all ${tests} tests`);
            return;
          }
          const r = run(node.bin, [file], dirname(file), childEnv(node, env));
          t.is(r.status, 0, `Node ${node.major}, docs/${doc} example ${i + 1}:\n${example.code}\n${r.stdout}\n${r.stderr}`);
          if (example.prints !== undefined) t.is(r.stdout, example.prints, `Node ${node.major}, docs/${doc} example ${i + 1} prints what the doc says`);
        });
      } finally {
        await server?.stop();
        await database?.drop();
      }
    }
  });
}

