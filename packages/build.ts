/**
 * Builds the three published packages from this one source tree
 * (`npm run build`; `npm run build -- --pack` also writes their tarballs):
 *
 * - `@latchkey/engine`: `engine/` and `dsl/` (the FGA engine, its stores, the
 *   modeling language); SQL storage at `@latchkey/engine/sql` with sequelize
 *   and the drivers as optional peers; property tests of a model at
 *   `@latchkey/engine/testing` with fast-check as an optional peer.
 * - `@latchkey/client`: the user and admin clients (`client/` and
 *   the few files it shares with the server); gRPC at `@latchkey/client/grpc`
 *   with grpc-js and proto-loader as optional peers.
 * - `latchkey`: the server and the `latchkey` command, depending on the two.
 *
 * The sources compile once (tsc, with declarations and source maps) into
 * `dist/tsc/`. Each package then takes the files reachable from its entry
 * points, in the same relative layout, into `dist/packages/<dir>/`. The
 * server's imports of the engine's files become imports of
 * `@latchkey/engine`, so an installed server runs on the installed engine.
 * A package's dependencies are the bare imports its files make, at the
 * ranges of the root package.json; an import the table does not account for
 * fails the build.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

export const REPO_ROOT = resolve(import.meta.dirname, '..');
const TSC_OUT = join(REPO_ROOT, 'dist', 'tsc');
export const PACKAGES_OUT = join(REPO_ROOT, 'dist', 'packages');

interface PackageSpec {
  /** Folder under dist/packages/ and packages/ (its README). */
  dir: string;
  name: string;
  description: string;
  keywords: string[];
  /** Subpath → module (without extension) in the compiled tree. */
  exports: Record<string, string>;
  /** Modules loaded other than by a literal import (worker files, computed imports). */
  extraEntries?: string[];
  /** Non-code files copied as they are. */
  assets?: string[];
  /** Dependencies no file imports by name: database drivers sequelize loads itself, files served to browsers. */
  extraDependencies?: string[];
  /** Bare imports that are optional peers rather than dependencies. */
  optionalPeers?: string[];
  /** Compiled module → the package specifier that replaces imports of it. */
  external?: Record<string, string>;
  bin?: Record<string, string>;
  /** Files written into the package: path → contents. */
  generated?: Record<string, string>;
}

const ENGINE_EXTERNAL: Record<string, string> = {
  'engine/index': '@latchkey/engine',
  'engine/errors': '@latchkey/engine',
  'engine/sql/index': '@latchkey/engine/sql',
  'engine/sql/migrate': '@latchkey/engine/sql',
  'engine/sql/sql_database': '@latchkey/engine/sql',
  'engine/testing/index': '@latchkey/engine/testing',
  'dsl/index': '@latchkey/engine/dsl',
};

const reexport = (spec: string): string => `export * from '${spec}';\n`;

export const PACKAGES: PackageSpec[] = [
  {
    dir: 'engine',
    name: '@latchkey/engine',
    description: "An embeddable, OpenFGA-compatible fine-grained authorization engine: OpenFGA's modeling language, tuple stores (memory, SQLite, PostgreSQL, MySQL), Check, BatchCheck, ListObjects, ListUsers, Expand and conditions",
    keywords: ['authorization', 'fga', 'openfga', 'rebac', 'zanzibar', 'permissions'],
    exports: { '.': 'engine/index', './sql': 'engine/sql/index', './dsl': 'dsl/index', './testing': 'engine/testing/index' },
    // fast-check only for `./testing`: a peer, so a project's properties and ours share one fast-check.
    optionalPeers: ['sequelize', 'pg', 'mysql2', 'fast-check'],
  },
  {
    dir: 'client',
    name: '@latchkey/client',
    description: 'User and admin clients for a Latchkey server, asynchronous and synchronous, over GraphQL, REST or gRPC',
    keywords: ['authentication', 'authorization', 'client', 'graphql', 'grpc'],
    exports: { '.': 'client/index', './grpc': 'client/grpc_call' },
    extraEntries: ['client/sync_worker'],
    assets: ['api/latchkey.proto'],
    optionalPeers: ['@grpc/grpc-js', '@grpc/proto-loader'],
  },
  {
    dir: 'server',
    name: 'latchkey',
    description: 'Identity, session and fine-grained authorization server with an embeddable OpenFGA-compatible engine',
    keywords: ['authentication', 'authorization', 'identity', 'oauth', 'openid-connect', 'fga', 'openfga', 'server'],
    exports: { '.': 'cmd/index', './engine': 'engine', './engine/sql': 'engine_sql', './engine/testing': 'engine_testing', './dsl': 'dsl', './client': 'client' },
    extraEntries: ['cmd/cli', 'cmd/dsl_command', 'cmd/fga_command'],
    assets: ['api/latchkey.proto', 'transports/web/dashboard/page.html', 'transports/web/dashboard/page.css', ...['core.js', 'users.js', 'webhooks.js', 'templates.js', 'organizations.js', 'sso.js', 'audit.js', 'authz.js', 'clients.js'].map((f) => `transports/web/dashboard/${f}`)],
    external: ENGINE_EXTERNAL,
    // Loaded by name, not imported: the database drivers (by sequelize), the playground's browser builds (served as files)
    // and the WebAuthn browser build (inlined in /app); fast-check, the engine's optional peer that `latchkey fga test`
    // properties and `fga diff` need through `@latchkey/engine/testing`.
    extraDependencies: ['pg', 'mysql2', 'graphiql', 'react', 'react-dom', '@simplewebauthn/browser', 'fast-check'],
    bin: { latchkey: 'bin/latchkey.js' },
    generated: {
      'bin/latchkey.js': "#!/usr/bin/env node\n// The `latchkey` command. The compile cache keeps compiled modules between runs (see the repository's bin/latchkey.js).\nimport { enableCompileCache } from 'node:module';\n\nenableCompileCache?.();\nconst { main } = await import('../cmd/cli.js');\nconst status = await main(process.argv.slice(2));\nprocess.exit(status);\n",
      // The subpaths of earlier single-package releases, kept as re-exports.
      'engine.js': reexport('@latchkey/engine'),
      'engine.d.ts': reexport('@latchkey/engine'),
      'engine_sql.js': reexport('@latchkey/engine/sql'),
      'engine_sql.d.ts': reexport('@latchkey/engine/sql'),
      'engine_testing.js': reexport('@latchkey/engine/testing'),
      'engine_testing.d.ts': reexport('@latchkey/engine/testing'),
      'dsl.js': reexport('@latchkey/engine/dsl'),
      'dsl.d.ts': reexport('@latchkey/engine/dsl'),
      'client.js': reexport('@latchkey/client'),
      'client.d.ts': reexport('@latchkey/client'),
    },
  },
];

/** Node versions the packages are tested on (test/packages/install.test.ts) and claim. */
export const ENGINES = { node: '>=22.13' };

const BUILTINS = new Set(builtinModules);

/**
 * Every module specifier a compiled file names, with the span of its text;
 * TypeScript's own scanner, so that specifiers in comments and strings (the
 * TSDoc examples) are not taken for imports.
 */
function specifiers(text: string): { spec: string; start: number; end: number }[] {
  return ts.preProcessFile(text, true, true).importedFiles.map((f) => ({
    spec: f.fileName,
    start: f.pos + 1,
    end: f.pos + 1 + f.fileName.length,
  }));
}

function packageOf(spec: string): string {
  const parts = spec.split('/');
  return spec.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
}

function isBuiltin(spec: string): boolean {
  return spec.startsWith('node:') || BUILTINS.has(spec);
}

function fail(message: string): never {
  throw new Error(`build: ${message}`);
}

/** Module id (relative path without extension) of a relative specifier in `fromId`. */
function resolveId(fromId: string, spec: string): string {
  const target = join(dirname(fromId), spec).replace(/\\/g, '/');
  return target.replace(/\.d\.ts$|\.js$|\.ts$/, '');
}

interface Collected {
  modules: Set<string>;
  bare: Set<string>;
}

/** The modules reachable from the entry points, through .js and .d.ts imports. */
function collect(spec: PackageSpec): Collected {
  const modules = new Set<string>();
  const bare = new Set<string>();
  const pending = [...Object.values(spec.exports), ...(spec.extraEntries ?? [])];
  const generatedIds = new Set(Object.keys(spec.generated ?? {}).map((f) => f.replace(/\.d\.ts$|\.js$/, '')));
  while (pending.length > 0) {
    const id = pending.pop()!;
    if (modules.has(id) || generatedIds.has(id)) continue;
    const js = join(TSC_OUT, `${id}.js`);
    if (!existsSync(js)) fail(`${spec.name}: module ${id} is not in the compiled tree`);
    modules.add(id);
    for (const file of [js, join(TSC_OUT, `${id}.d.ts`)]) {
      if (!existsSync(file)) continue;
      for (const { spec: s } of specifiers(readFileSync(file, 'utf8'))) {
        if (s.startsWith('.')) {
          const target = resolveId(id, s);
          if (spec.external?.[target] !== undefined) continue;
          if (spec.external !== undefined && /^(engine|dsl)\//.test(target)) {
            fail(`${spec.name}: ${id} imports ${target}, which is not an entry point of @latchkey/engine`);
          }
          pending.push(target);
        } else if (!isBuiltin(s)) {
          bare.add(packageOf(s));
        }
      }
    }
  }
  return { modules, bare };
}

/**
 * Rewrites relative imports of external modules to their package specifiers,
 * and the `.ts` extensions tsc leaves in declaration files to `.js`.
 */
function rewrite(text: string, id: string, external: Record<string, string> | undefined): string {
  let out = '';
  let last = 0;
  for (const { spec, start, end } of specifiers(text)) {
    if (!spec.startsWith('.')) continue;
    let replacement = external?.[resolveId(id, spec)];
    if (replacement === undefined && spec.endsWith('.ts') && !spec.endsWith('.d.ts')) replacement = `${spec.slice(0, -3)}.js`;
    if (replacement === undefined) continue;
    out += text.slice(last, start) + replacement;
    last = end;
  }
  return out + text.slice(last);
}

function rootManifest(): { version: string; license: string; dependencies: Record<string, string>; repository?: unknown } {
  return JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as ReturnType<typeof rootManifest>;
}

function write(file: string, text: string): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
}

function buildPackage(spec: PackageSpec): void {
  const root = rootManifest();
  const out = join(PACKAGES_OUT, spec.dir);
  const { modules, bare } = collect(spec);

  for (const id of modules) {
    for (const ext of ['.js', '.d.ts', '.js.map']) {
      const from = join(TSC_OUT, `${id}${ext}`);
      if (!existsSync(from)) continue;
      const text = readFileSync(from, 'utf8');
      write(join(out, `${id}${ext}`), ext === '.js.map' ? text : rewrite(text, id, spec.external));
    }
  }
  for (const asset of spec.assets ?? []) {
    mkdirSync(dirname(join(out, asset)), { recursive: true });
    copyFileSync(join(REPO_ROOT, asset), join(out, asset));
  }
  for (const [file, text] of Object.entries(spec.generated ?? {})) write(join(out, file), text);

  const dependencies: Record<string, string> = {};
  const peerDependencies: Record<string, string> = {};
  const peerDependenciesMeta: Record<string, { optional: true }> = {};
  const optional = new Set(spec.optionalPeers ?? []);
  if (spec.external !== undefined) {
    for (const target of new Set(Object.values(spec.external))) bare.add(packageOf(target));
  }
  for (const [file, text] of Object.entries(spec.generated ?? {})) {
    if (!file.endsWith('.js')) continue;
    for (const { spec: s } of specifiers(text)) if (!s.startsWith('.') && !isBuiltin(s)) bare.add(packageOf(s));
  }
  for (const name of spec.extraDependencies ?? []) bare.add(name);
  for (const name of [...bare].sort()) {
    const range = name.startsWith('@latchkey/') ? root.version : root.dependencies[name];
    if (range === undefined) fail(`${spec.name} imports ${name}, which is not a dependency of the root package.json`);
    if (optional.has(name)) {
      peerDependencies[name] = range;
      peerDependenciesMeta[name] = { optional: true };
    } else {
      dependencies[name] = range;
    }
  }
  for (const name of optional) {
    if (peerDependencies[name] === undefined) {
      const range = root.dependencies[name] ?? fail(`${spec.name}: optional peer ${name} has no range in the root package.json`);
      peerDependencies[name] = range;
      peerDependenciesMeta[name] = { optional: true };
    }
  }

  const exportsMap: Record<string, { types: string; default: string } | string> = {};
  for (const [subpath, id] of Object.entries(spec.exports)) {
    exportsMap[subpath] = { types: `./${id}.d.ts`, default: `./${id}.js` };
  }
  exportsMap['./package.json'] = './package.json';
  const topLevel = new Set<string>();
  for (const id of modules) topLevel.add(id.split('/')[0]!);
  for (const file of [...(spec.assets ?? []), ...Object.keys(spec.generated ?? {})]) {
    topLevel.add(file.includes('/') ? file.split('/')[0]! : file);
  }
  topLevel.add('CHANGELOG.md');
  const manifest = {
    name: spec.name,
    version: root.version,
    description: spec.description,
    keywords: spec.keywords,
    license: root.license,
    type: 'module',
    engines: ENGINES,
    ...(spec.bin === undefined ? {} : { bin: spec.bin }),
    exports: exportsMap,
    files: [...topLevel].sort(),
    ...(Object.keys(dependencies).length === 0 ? {} : { dependencies }),
    ...(Object.keys(peerDependencies).length === 0 ? {} : { peerDependencies, peerDependenciesMeta }),
  };
  write(join(out, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  copyFileSync(join(REPO_ROOT, 'packages', spec.dir, 'README.md'), join(out, 'README.md'));
  copyFileSync(join(REPO_ROOT, 'LICENSE'), join(out, 'LICENSE'));
  copyFileSync(join(REPO_ROOT, 'CHANGELOG.md'), join(out, 'CHANGELOG.md'));
}

function run(cmd: string, args: string[], cwd = REPO_ROOT): string {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8' });
  if (r.status !== 0) fail(`${cmd} ${args.join(' ')} failed:\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

/** Compiles the sources and lays out the three packages; returns their folders. */
export function buildPackages(): Record<string, string> {
  rmSync(TSC_OUT, { recursive: true, force: true });
  rmSync(PACKAGES_OUT, { recursive: true, force: true });
  run(process.execPath, [join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(REPO_ROOT, 'tsconfig.build.json')]);
  const dirs: Record<string, string> = {};
  for (const spec of PACKAGES) {
    buildPackage(spec);
    dirs[spec.name] = join(PACKAGES_OUT, spec.dir);
  }
  return dirs;
}

/** `npm pack` of each built package into `destination`; returns name → tarball path. */
export function packPackages(destination: string): Record<string, string> {
  mkdirSync(destination, { recursive: true });
  const tarballs: Record<string, string> = {};
  for (const spec of PACKAGES) {
    const outJson = run('npm', ['pack', '--json', '--pack-destination', destination], join(PACKAGES_OUT, spec.dir));
    const [{ filename }] = JSON.parse(outJson) as [{ filename: string }];
    tarballs[spec.name] = join(destination, filename);
  }
  return tarballs;
}

if (import.meta.main) {
  const dirs = buildPackages();
  for (const [name, dir] of Object.entries(dirs)) console.log(`${name}: ${relative(REPO_ROOT, dir)}`);
  if (process.argv.includes('--pack')) {
    for (const [name, file] of Object.entries(packPackages(PACKAGES_OUT))) console.log(`${name}: ${relative(REPO_ROOT, file)}`);
  }
}
