/**
 * The dependency direction of conventions §1, enforced: every import of every
 * source file is parsed (TypeScript's parser, so comments and strings never
 * count) and each edge must be allowed by the table below.
 *
 * - A folder may import only the folders and packages its row lists, plus
 *   Node builtins.
 * - Another folder is entered through its `index.ts` only; the shared pieces
 *   every layer uses (the error class, the model types, the migrations runner)
 *   and the process entry the bin runs are the named exceptions.
 * - `dsl` may take only types from `engine` (besides the error class).
 * - In `engine`, sequelize is confined to the SQL adapter, fast-check to
 *   the testing entry point (`engine/testing/`).
 * - The AWS SDK is confined to `auth/dynamodb.ts`.
 * - Domain folders never import `transports`.
 * - No import circles: the file graph has no strongly connected component of
 *   more than one file (conventions §1: what two files both need lives in a
 *   third that imports neither).
 */
import test from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { REPO_ROOT } from './helpers/shared.ts';

type Folder = 'engine' | 'dsl' | 'auth' | 'admin' | 'api' | 'server' | 'transports' | 'client' | 'cmd' | 'bin';

/**
 * Who may import whom. The direction is `cmd → transports → server → admin →
 * auth → engine`, with `api` (the wire contract) and `dsl` as leaves and
 * `client → api`; an edge may skip layers downwards, never run upwards.
 */
const FOLDERS: Record<Folder, { folders: Folder[]; packages: string[] }> = {
  engine: { folders: ['dsl'], packages: ['lru-cache', '@marcbachmann/cel-js', 'sequelize', 'ulid', 'fast-check'] },
  dsl: { folders: ['engine'], packages: ['chevrotain'] },
  auth: { folders: ['engine'], packages: ['jose', '@node-rs/bcrypt', 'otplib', 'qrcode-generator', 'nodemailer', 'sequelize', 'ioredis', 'ulid', '@aws-sdk/client-dynamodb', '@aws-sdk/lib-dynamodb', '@simplewebauthn/server', '@node-saml/node-saml'] },
  admin: { folders: ['engine', 'dsl', 'auth'], packages: ['sequelize', 'ulid'] },
  // The contract: shapes, rows, the gRPC codec; only the error class from below.
  api: { folders: ['engine'], packages: [] },
  server: {
    folders: ['api', 'admin', 'auth', 'engine', 'dsl'],
    // The composition root opens the one database connection and the shared Redis client; the rate limiter shares Redis.
    packages: ['sequelize', 'ioredis', 'rate-limiter-flexible', 'prom-client', 'minimist'],
  },
  // The adapters, and `web/`: the endpoints outside the table, over the domain objects they serve (the OAuth
  // provider, social login, the dashboard's defaults). Downwards only; nothing below imports a transport.
  transports: {
    folders: ['server', 'api', 'engine', 'auth', 'admin'],
    packages: ['express', 'graphql', 'graphql-http', '@grpc/grpc-js', '@grpc/proto-loader', '@grpc/reflection', 'grpc-health-check', 'prom-client'],
  },
  // The published client: the contract and the error class, and gRPC's libraries (optional peers).
  client: { folders: ['api', 'engine'], packages: ['@grpc/grpc-js', '@grpc/proto-loader'] },
  cmd: {
    folders: ['engine', 'dsl', 'auth', 'admin', 'api', 'server', 'transports', 'client'],
    // The `fga` command reads OpenFGA store files (YAML); startServer shares one Redis client between its parts.
    packages: ['minimist', 'yaml', 'ioredis'],
  },
  bin: { folders: ['cmd'], packages: [] },
};

/** Files any layer may import directly besides `<folder>/index.ts`. */
const SHARED_ENTRY_POINTS = new Set(['engine/errors.ts', 'engine/model.ts', 'engine/sql/migrate.ts', 'engine/sql/sql_database.ts', 'engine/sql/index.ts', 'engine/testing/index.ts', 'cmd/cli.ts']);

/** Folders whose files only the error class may be imported from (besides their own). */
const ERRORS_ONLY: Partial<Record<Folder, Folder[]>> = { api: ['engine'], client: ['engine'] };

const BUILTINS = new Set(builtinModules);

function files(dir: string): string[] {
  const out: string[] = [];
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...files(p));
    else if (/\.(ts|js)$/.test(e.name) && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

interface Edge {
  specifier: string;
  typeOnly: boolean;
}

function imports(file: string): Edge[] {
  const text = readFileSync(file, 'utf8');
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const edges: Edge[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      let typeOnly = ts.isImportDeclaration(node) ? Boolean(node.importClause?.isTypeOnly) : node.isTypeOnly;
      if (ts.isImportDeclaration(node) && !typeOnly && node.importClause && !node.importClause.name) {
        const nb = node.importClause.namedBindings;
        if (nb && ts.isNamedImports(nb) && nb.elements.length > 0 && nb.elements.every((e) => e.isTypeOnly)) typeOnly = true;
      }
      edges.push({ specifier: node.moduleSpecifier.text, typeOnly });
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = node.arguments[0];
      if (arg && ts.isStringLiteralLike(arg)) edges.push({ specifier: arg.text, typeOnly: false });
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      edges.push({ specifier: node.argument.literal.text, typeOnly: true });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return edges;
}

function packageName(spec: string): string {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? spec);
}

function violations(): string[] {
  const out: string[] = [];
  for (const folder of Object.keys(FOLDERS) as Folder[]) {
    const rule = FOLDERS[folder];
    for (const file of files(join(REPO_ROOT, folder))) {
      const from = relative(REPO_ROOT, file);
      for (const { specifier, typeOnly } of imports(file)) {
        if (specifier.startsWith('.')) {
          const target = relative(REPO_ROOT, resolve(dirname(file), specifier));
          const targetFolder = target.split('/')[0] as Folder;
          if (targetFolder === folder) continue;
          if (!(targetFolder in FOLDERS)) {
            out.push(`${from} → ${target}: outside the source folders`);
            continue;
          }
          if (!rule.folders.includes(targetFolder)) {
            out.push(`${from} → ${target}: ${folder} may not import ${targetFolder}`);
            continue;
          }
          if (target !== `${targetFolder}/index.ts` && !SHARED_ENTRY_POINTS.has(target)) {
            out.push(`${from} → ${target}: enter ${targetFolder} through ${targetFolder}/index.ts`);
            continue;
          }
          if (ERRORS_ONLY[folder]?.includes(targetFolder) && target !== 'engine/errors.ts') {
            out.push(`${from} → ${target}: ${folder} may take only the error class from ${targetFolder}`);
            continue;
          }
          if (folder === 'dsl' && targetFolder === 'engine' && !typeOnly && target !== 'engine/errors.ts') {
            out.push(`${from} → ${target}: dsl may take only types from engine`);
          }
          continue;
        }
        if (specifier.startsWith('node:') || BUILTINS.has(specifier)) continue;
        const pkg = packageName(specifier);
        if (!rule.packages.includes(pkg)) {
          out.push(`${from} → ${specifier}: package not allowed in ${folder}`);
          continue;
        }
        if (folder === 'engine' && pkg === 'sequelize' && !/(^|\/)sql|sql[_.]/.test(from.slice('engine/'.length))) {
          out.push(`${from} → sequelize: only the engine's SQL adapter may use sequelize`);
        }
        if (folder === 'engine' && pkg === 'fast-check' && !from.startsWith('engine/testing/')) {
          out.push(`${from} → fast-check: only the engine's testing entry point may use fast-check`);
        }
        if (pkg.startsWith('@aws-sdk/') && from !== 'auth/dynamodb.ts') {
          out.push(`${from} → ${pkg}: only auth/dynamodb.ts may use the AWS SDK`);
        }
      }
    }
  }
  return out;
}

/** Every source file's relative imports, resolved to repository paths (type-only imports included: they tie files together too). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const folder of Object.keys(FOLDERS) as Folder[]) {
    for (const file of files(join(REPO_ROOT, folder))) {
      const from = relative(REPO_ROOT, file);
      const targets = imports(file)
        .filter((e) => e.specifier.startsWith('.'))
        .map((e) => relative(REPO_ROOT, resolve(dirname(file), e.specifier)));
      graph.set(from, [...new Set(targets)]);
    }
  }
  return graph;
}

/**
 * The import circles of `graph`: its strongly connected components of more
 * than one file (Tarjan's algorithm, iterative so that deep chains cannot
 * overflow the stack), each sorted, largest first.
 */
export function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const out: string[][] = [];
  for (const root of graph.keys()) {
    if (index.has(root)) continue;
    const work: { node: string; edge: number }[] = [{ node: root, edge: 0 }];
    index.set(root, next);
    low.set(root, next++);
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const edges = (graph.get(frame.node) ?? []).filter((n) => graph.has(n));
      if (frame.edge < edges.length) {
        const to = edges[frame.edge++]!;
        if (!index.has(to)) {
          index.set(to, next);
          low.set(to, next++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, edge: 0 });
        } else if (onStack.has(to)) low.set(frame.node, Math.min(low.get(frame.node)!, index.get(to)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent !== undefined) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        if (component.length > 1) out.push(component.sort());
      }
    }
  }
  return out.sort((a, b) => b.length - a.length);
}

test('every import edge is allowed by the layering table (conventions §1)', (t) => {
  t.deepEqual(violations(), []);
});

test('the checker sees through comments and catches a forbidden edge (self-test)', (t) => {
  const edges = (src: string): Edge[] => {
    const sf = ts.createSourceFile('x.ts', src, ts.ScriptTarget.Latest, true);
    const found: Edge[] = [];
    ts.forEachChild(sf, (n) => {
      if (ts.isImportDeclaration(n) && ts.isStringLiteral(n.moduleSpecifier)) found.push({ specifier: n.moduleSpecifier.text, typeOnly: Boolean(n.importClause?.isTypeOnly) });
    });
    return found;
  };
  t.deepEqual(edges("// import x from 'express'\nimport type { A } from '../engine/model.ts';"), [{ specifier: '../engine/model.ts', typeOnly: true }]);
  t.is(packageName('@grpc/grpc-js/build/x'), '@grpc/grpc-js');
  t.is(packageName('graphql-http/lib/use/express'), 'graphql-http');
});

test('no two source files import each other, directly or through others (no import circles)', (t) => {
  t.deepEqual(circles(importGraph()), []);
});

test('the circle finder finds circles and only circles (self-test)', (t) => {
  const g = (edges: Record<string, string[]>): Map<string, string[]> => new Map(Object.entries(edges));
  t.deepEqual(circles(g({ a: ['b'], b: ['c'], c: [] })), []);
  t.deepEqual(circles(g({ a: ['b'], b: ['a'], c: ['a'] })), [['a', 'b']]);
  t.deepEqual(circles(g({ a: ['b'], b: ['c'], c: ['a'], d: ['e'], e: ['d'], f: ['f'] })), [['a', 'b', 'c'], ['d', 'e']]);
  // A long chain closing on itself, deeper than a recursive walk would survive.
  const chain = new Map<string, string[]>();
  for (let i = 0; i < 20_000; i++) chain.set(`n${i}`, [`n${(i + 1) % 20_000}`]);
  t.is(circles(chain)[0]?.length, 20_000);
  // The real checker over the real tree: the edge it must see is there.
  t.true(importGraph().get('server/pipeline.ts')?.includes('api/index.ts') ?? false);
});
