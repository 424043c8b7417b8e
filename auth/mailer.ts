/**
 * Mail sending over SMTP (nodemailer is confined to this file). Built from
 * the `--smtp-*` flags by the composition root; every mail the server sends
 * goes through a {@link Mailer}, normally behind the retrying mail queue.
 */
import { createRequire } from 'node:module';
import type * as Nodemailer from 'nodemailer';
import { LatchkeyError } from '../engine/errors.ts';

/** SMTP settings, from the `--smtp-*` flags. */
export interface SmtpOptions {
  host: string;
  port: number;
  username?: string | undefined;
  password?: string | undefined;
  senderEmail: string;
  senderName?: string | undefined;
  /** Name announced in EHLO (`--smtp-local-name`). */
  localName?: string | undefined;
  /** Accept any TLS certificate (`--skip-tls-verification`). */
  skipTlsVerification?: boolean | undefined;
  /** Implicit TLS (port 465); otherwise STARTTLS is used when offered. */
  secure?: boolean | undefined;
  /** Connection, greeting and socket timeout in ms (default 10 s). */
  timeoutMs?: number | undefined;
}

/** One mail to send. */
export interface MailMessage {
  to: string;
  subject: string;
  html: string;
  text?: string | undefined;
  /**
   * The queue's id of this mail: sent as the `Message-ID` header
   * (`<id@sender-domain>`), the same on every attempt, so a receiver can
   * drop a second copy of a mail sent again after its sender died mid-send.
   */
  id?: string | undefined;
}

/** Something that delivers one mail or throws. */
export interface Mailer {
  /**
   * Sends one mail. Throws `unavailable` (reason `smtp_unavailable`) when the
   * server cannot be reached or refuses the mail; `details.smtp_code` carries
   * the SMTP reply code when there was one.
   */
  send(message: MailMessage): Promise<void>;
  /** Closes pooled connections. */
  close(): void;
}

/** A {@link Mailer} over SMTP. */
export function createSmtpMailer(options: SmtpOptions): Mailer {
  if (!options.host) throw new LatchkeyError('invalid_argument', 'smtp host is required', { reason: 'invalid_smtp_options' });
  if (!options.senderEmail) throw new LatchkeyError('invalid_argument', 'smtp sender email is required', { reason: 'invalid_smtp_options' });
  const timeout = options.timeoutMs ?? 10_000;
  // Loaded here, on first use: a server with no SMTP settings never holds the library.
  const nodemailer = createRequire(import.meta.url)('nodemailer') as typeof Nodemailer;
  const transport = nodemailer.createTransport({
    host: options.host,
    port: options.port,
    secure: options.secure ?? options.port === 465,
    ...(options.username ? { auth: { user: options.username, pass: options.password ?? '' } } : {}),
    ...(options.localName ? { name: options.localName } : {}),
    tls: { rejectUnauthorized: !options.skipTlsVerification },
    connectionTimeout: timeout,
    greetingTimeout: timeout,
    socketTimeout: timeout,
  });
  const from = options.senderName ? { name: options.senderName, address: options.senderEmail } : options.senderEmail;
  const domain = options.senderEmail.slice(options.senderEmail.lastIndexOf('@') + 1) || 'localhost';
  return {
    async send(message) {
      try {
        await transport.sendMail({
          from,
          to: message.to,
          subject: message.subject,
          html: message.html,
          ...(message.text === undefined ? {} : { text: message.text }),
          ...(message.id === undefined ? {} : { messageId: `<${message.id}@${domain}>` }),
        });
      } catch (err) {
        const code = (err as { responseCode?: number }).responseCode;
        throw new LatchkeyError('unavailable', 'mail could not be sent', {
          reason: 'smtp_unavailable',
          details: code === undefined ? {} : { smtp_code: code },
          cause: err,
        });
      }
    },
    close() {
      transport.close();
    },
  };
}
