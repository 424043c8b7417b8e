/**
 * `latchkey dsl …`: convert and validate OpenFGA models from the command line.
 *
 *   latchkey dsl to-json [FILE|-] [--no-validate] DSL (or fga.mod) → JSON model on stdout
 *   latchkey dsl to-dsl [FILE|-] [--source-info]  JSON model → canonical DSL on stdout
 *   latchkey dsl validate [FILE|fga.mod] [--format json]
 *
 * Exit status: 0 success / valid, 1 invalid input, 2 usage error.
 * Imports only dsl/ and node builtins; options are parsed by hand. `validate`
 * also loads the engine, to check the model as writing it to a store would.
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import {
  checkModularModel,
  parseDsl,
  parseDslSyntax,
  printModel,
  type DslCheckOptions,
  type DslDiagnostic,
  type DslParseResult,
} from '../dsl/index.ts';

type Out = NodeJS.WritableStream | ((text: string) => void);

/** Where the command reads and writes. `stdin` defaults to the process's. */
export type DslCommandIo = {
  stdin?: NodeJS.ReadableStream;
  stdout: Out;
  stderr: Out;
};

const HELP = `Usage: latchkey dsl <command> [FILE|-] [options]

Commands:
  to-json [FILE|-] [--no-validate] Convert an OpenFGA DSL model (or an fga.mod
                                   modular model) to its JSON authorization model
                                   (--no-validate: syntax only, as OpenFGA's
                                   transformer converts; not for fga.mod)
  to-dsl [FILE|-] [--source-info]  Convert a JSON authorization model to DSL
                                   (--source-info: for modular models, mark each
                                   type and extended relation with its module
                                   and file)
  validate [FILE|fga.mod]          Check a model as writing it to a store would
                                   (the DSL's rules, then the server's: conditions
                                   must compile in OpenFGA's CEL environment) and
                                   list every problem found

Options:
  --format text|json               validate output: human text (default) or
                                   JSON, one object per error with kind,
                                   message, line, column (0-based)
  -h, --help                       Show this help

FILE defaults to standard input ('-'). A file named fga.mod is read as a
modular model (schema 1.2) with the .fga files it lists.
Exit status: 0 when valid, 1 when the input is invalid, 2 on usage errors.
`;

function writer(out: Out): (text: string) => void {
  return typeof out === 'function' ? out : (text) => void out.write(text);
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

function isModFile(path: string | undefined): path is string {
  return path !== undefined && path !== '-' && basename(path) === 'fga.mod';
}

function formatText(errors: DslDiagnostic[], source: string): string {
  return errors
    .map((e) => {
      const where = `${e.file ?? source}:${e.line.start + 1}:${e.column.start + 1}`;
      return `${where}: ${e.kind === 'syntax' ? 'syntax error' : `error [${e.kind}]`}: ${e.message}\n`;
    })
    .join('');
}

/**
 * Runs `latchkey dsl` with the arguments that follow `dsl`; resolves to the
 * exit status. Never throws for bad input: problems go to stderr.
 */
export async function runDslCommand(argv: string[], io: DslCommandIo): Promise<number> {
  const out = writer(io.stdout);
  const err = writer(io.stderr);
  const positional: string[] = [];
  let format = 'text';
  let help = false;
  let sourceInfo = false;
  let noValidate = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '-h' || a === '--help') help = true;
    else if (a === '--source-info') sourceInfo = true;
    else if (a === '--no-validate') noValidate = true;
    else if (a === '--format' || a.startsWith('--format=')) {
      const v = a === '--format' ? argv[++i] : a.slice('--format='.length);
      if (v !== 'text' && v !== 'json') {
        err(`latchkey dsl: --format must be text or json\n`);
        return 2;
      }
      format = v;
    } else if (a.startsWith('-') && a !== '-') {
      err(`latchkey dsl: unknown option ${a}\n${HELP}`);
      return 2;
    } else positional.push(a);
  }
  const [command, file, extra] = positional;
  if (help || command === undefined || command === 'help') {
    (help || command === 'help' ? out : err)(HELP);
    return help || command === 'help' ? 0 : 2;
  }
  if (extra !== undefined || !['to-json', 'to-dsl', 'validate'].includes(command)) {
    err(`latchkey dsl: ${extra !== undefined ? `unexpected argument ${extra}` : `unknown command ${command}`}\n${HELP}`);
    return 2;
  }

  if (noValidate && (command !== 'to-json' || isModFile(file))) {
    err(`latchkey dsl: --no-validate applies to to-json of a single DSL file\n`);
    return 2;
  }

  let text = '';
  const source = file === undefined || file === '-' ? '<stdin>' : file;
  if (!isModFile(file)) {
    try {
      text = source === '<stdin>' ? await readAll(io.stdin ?? process.stdin) : readFileSync(source, 'utf8');
    } catch (e) {
      err(`latchkey dsl: cannot read ${source}: ${(e as Error).message}\n`);
      return 1;
    }
  }

  if (command === 'to-dsl') {
    let model: unknown;
    try {
      model = JSON.parse(text);
    } catch (e) {
      err(`latchkey dsl: ${source} is not JSON: ${(e as Error).message}\n`);
      return 1;
    }
    try {
      out(printModel(model as Parameters<typeof printModel>[0], { includeSourceInformation: sourceInfo }));
      return 0;
    } catch (e) {
      err(`latchkey dsl: ${(e as Error).message}\n`);
      return 1;
    }
  }

  let result: DslParseResult;
  try {
    // validate: a model the DSL accepts must also pass the engine's
    // validation of a model being written (Engine.writeModel's TypeSystem),
    // which refuses, say, a condition calling `substring` (not in OpenFGA's CEL).
    const options: DslCheckOptions = {};
    if (command === 'validate') {
      const { TypeSystem } = await import('../engine/index.ts');
      options.check = (model) => void new TypeSystem(model);
    }
    result = isModFile(file) ? checkModularModel(file, options) : noValidate ? parseDslSyntax(text) : parseDsl(text, options);
  } catch (e) {
    err(`latchkey dsl: ${(e as Error).message}\n`);
    return 1;
  }

  if (command === 'to-json') {
    if (!result.model) {
      err(formatText(result.errors, source));
      return 1;
    }
    out(`${JSON.stringify(result.model, null, 2)}\n`);
    return 0;
  }

  // validate
  if (format === 'json') {
    out(`${JSON.stringify(result.errors, null, 2)}\n`);
  } else if (result.errors.length === 0) {
    out(`${source}: valid\n`);
  } else {
    err(formatText(result.errors, source));
  }
  return result.errors.length === 0 ? 0 : 1;
}
