/** Test helper: a real SMTP server on loopback that records accepted mails and can refuse them. */
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { AddressInfo } from 'node:net';

export interface Smtp {
  port: number;
  mails: string[];
  /** Answer for the next DATA commands: undefined accepts. */
  refuse: number | undefined;
  close(): Promise<void>;
}

export async function startSmtp(port = 0): Promise<Smtp> {
  const state: Smtp = { port: 0, mails: [], refuse: undefined, close: async () => {} };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream: SMTPServerDataStream, _session: SMTPServerSession, callback: (err?: Error | null) => void) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        if (state.refuse !== undefined) {
          const err = Object.assign(new Error('try later'), { responseCode: state.refuse });
          callback(err);
          return;
        }
        state.mails.push(Buffer.concat(chunks).toString('utf8'));
        callback();
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  // A client that dies mid-session (a killed server process) resets its connection: not the test's failure.
  server.on('error', () => undefined);
  state.port = (server.server.address() as AddressInfo).port;
  state.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return state;
}

/** The decoded text of a raw MIME mail (quoted-printable soft breaks and escapes undone, HTML ampersands unescaped). */
export function decodeMail(raw: string): string {
  return raw
    .replace(/=\r?\n/g, '')
    .replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)))
    .replace(/&amp;/g, '&');
}

/** The first `count` decoded mails to `email`, in arrival order; waits (at most 20 s) until they have arrived. */
export async function mailsTo(smtp: Smtp, email: string, count = 1): Promise<string[]> {
  const to = new RegExp(`^To: .*${email.replace(/[.+]/g, (c) => `\\${c}`)}`, 'mi');
  const deadline = Date.now() + 20_000;
  for (;;) {
    const mails = smtp.mails.map(decodeMail).filter((m) => to.test(m));
    if (mails.length >= count) return mails.slice(0, count);
    if (Date.now() > deadline) throw new Error(`${mails.length} of ${count} mails to ${email}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The first decoded mail to `email` (waits for it). */
export async function mailTo(smtp: Smtp, email: string): Promise<string> {
  return (await mailsTo(smtp, email, 1))[0]!;
}
