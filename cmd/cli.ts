/**
 * The process entry: `latchkey [serve] [flags]`, `latchkey dsl …`,
 * `latchkey fga …`, `--help`, `--version`. The only module that reads argv,
 * installs signal handlers or exits.
 */
import { LatchkeyError } from '../engine/errors.ts';
import { helpText, parseFlags } from '../server/index.ts';
import type { RunningServer } from './server.ts';
import { VERSION } from '../server/index.ts';
import { settleWhenIdle } from './idle_settle.ts';

/** Where a command writes; injectable for tests. */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

export const PROCESS_IO: CliIo = {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
};

type SubcommandModule = Record<string, unknown>;

async function runSubcommand(name: 'dsl' | 'fga', argv: string[], io: CliIo): Promise<number> {
  const file = name === 'dsl' ? './dsl_command.ts' : './fga_command.ts';
  const fn = name === 'dsl' ? 'runDslCommand' : 'runFgaCommand';
  let mod: SubcommandModule;
  try {
    mod = (await import(file)) as SubcommandModule;
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_MODULE_NOT_FOUND' && String((err as Error).message).includes(file.slice(2))) {
      io.stderr(`latchkey ${name}: this command is not available in this build\n`);
      return 2;
    }
    throw err;
  }
  const run = mod[fn];
  if (typeof run !== 'function') {
    io.stderr(`latchkey ${name}: this command is not available in this build\n`);
    return 2;
  }
  return (await (run as (argv: string[], io: CliIo) => Promise<number>)(argv, io)) ?? 0;
}

/** On SIGTERM/SIGINT, how long `/readyz` answers 503 before the listener closes. */
const SHUTDOWN_DRAIN_MS = 1000;

/**
 * Starts the server from flags and resolves when it has shut down after
 * SIGTERM/SIGINT (status 0), or at once with status 1 when startup is refused.
 */
export async function serve(argv: string[], io: CliIo = PROCESS_IO): Promise<number> {
  const parsed = parseFlags(argv);
  if (!parsed.ok) {
    io.stderr(`${parsed.problems.map((p) => (p.startsWith('FATAL:') ? p : `FATAL: ${p}`)).join('\n')}\n`);
    io.stderr('Run latchkey --help for the list of flags.\n');
    return 1;
  }
  let server: RunningServer;
  try {
    // Loaded here so that --help, --version, dsl and fga start without the server's modules.
    const { startServer } = await import('./server.ts');
    server = await startServer(parsed.config);
  } catch (err) {
    const message = err instanceof LatchkeyError ? err.message : err instanceof Error ? err.message : String(err);
    io.stderr(`FATAL: ${message}\n`);
    return 1;
  }
  // Memory that start-up and bursts of load grew is given back once the process is quiet (idle_settle.ts).
  const stopSettling = settleWhenIdle({ onSettle: (figures) => server.logger.debug('heap settled while idle', figures) });
  return new Promise<number>((resolve) => {
    const stop = (signal: string): void => {
      stopSettling();
      server.logger.info('shutting down', { signal });
      process.off('SIGTERM', onTerm);
      process.off('SIGINT', onInt);
      // Readiness fails at once and the listener stays open this long, so that a probe sees the process
      // leave (security matrix F5: `/readyz` 503 at once) instead of finding no listener.
      server.close({ drainMs: Math.min(SHUTDOWN_DRAIN_MS, parsed.config.shutdownTimeout) }).then(
        () => resolve(0),
        (err: unknown) => {
          server.logger.error('error during shutdown', { err });
          resolve(1);
        },
      );
    };
    const onTerm = (): void => stop('SIGTERM');
    const onInt = (): void => stop('SIGINT');
    process.on('SIGTERM', onTerm);
    process.on('SIGINT', onInt);
  });
}

/** Dispatches a command line (without `node` and the script). Resolves to the exit status. */
export async function main(argv: string[], io: CliIo = PROCESS_IO): Promise<number> {
  const [first, ...rest] = argv;
  if (first === '--help' || first === '-h' || first === 'help') {
    io.stdout(helpText());
    return 0;
  }
  if (first === '--version' || first === '-v' || first === 'version') {
    io.stdout(`${VERSION}\n`);
    return 0;
  }
  if (first === 'dsl' || first === 'fga') return runSubcommand(first, rest, io);
  const flags = first === 'serve' ? rest : argv;
  if (flags.includes('--help') || flags.includes('-h')) {
    io.stdout(helpText());
    return 0;
  }
  if (first !== undefined && first !== 'serve' && !first.startsWith('-')) {
    io.stderr(`latchkey: unknown command "${first}" (commands: serve, dsl, fga)\n`);
    return 2;
  }
  return serve(flags, io);
}
