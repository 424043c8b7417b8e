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
 * - In `engine`, sequelize is confined to the SQL adapter.
 * - The AWS SDK is confined to `auth/dynamodb.ts`.
 * - Domain folders never import `transports`.
 */
import test from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { REPO_ROOT } from './helpers/shared.ts';

type Folder = 'engine' | 'dsl' | 'auth' | 'admin' | 'transports' | 'bin';

const FOLDERS: Record<Folder, { folders: Folder[]; packages: string[] }> = {
  engine: { folders: ['dsl'], packages: ['lru-cache', '@marcbachmann/cel-js', 'sequelize', 'ulid'] },
  dsl: { folders: ['engine'], packages: ['chevrotain'] },
  auth: { folders: ['engine'], packages: ['jose', 'bcrypt', 'otplib', 'qrcode-generator', 'nodemailer', 'sequelize', 'ioredis', 'ulid', '@aws-sdk/client-dynamodb', '@aws-sdk/lib-dynamodb'] },
  admin: { folders: ['engine', 'dsl', 'auth'], packages: ['sequelize', 'ulid'] },
  transports: {
    folders: ['engine', 'dsl', 'auth', 'admin'],
    packages: [
      'express',
      'graphql',
      'graphql-http',
      '@grpc/grpc-js',
      '@grpc/proto-loader',
      '@grpc/reflection',
      'grpc-health-check',
      'minimist',
      'prom-client',
      // The composition root opens the one database connection and the shared Redis client.
      'sequelize',
      'ioredis',
      'rate-limiter-flexible',
      // The `fga` command reads OpenFGA store files (YAML).
      'yaml',
    ],
  },
  bin: { folders: ['transports'], packages: [] },
};

/** Files any layer may import directly besides `<folder>/index.ts`. */
const SHARED_ENTRY_POINTS = new Set(['engine/errors.ts', 'engine/model.ts', 'engine/sql/migrate.ts', 'engine/sql/index.ts', 'transports/cli.ts']);

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
        if (pkg.startsWith('@aws-sdk/') && from !== 'auth/dynamodb.ts') {
          out.push(`${from} → ${pkg}: only auth/dynamodb.ts may use the AWS SDK`);
        }
      }
    }
  }
  return out;
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
