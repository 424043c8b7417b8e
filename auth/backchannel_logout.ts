/**
 * OpenID Connect Back-Channel Logout 1.0: when a session of a registered
 * client ends (the client or the user revoking it, RP-initiated logout, an
 * administrator ending the user's sessions, deactivation, deletion), a
 * logout token naming the session (`sid`, as in the client's ID tokens) and
 * the user (`sub`) is POSTed as `logout_token` to the client's
 * `backchannel_logout_uri` (§2.5). Sending does not hold up the ending: it
 * runs after, with a five-second timeout and no redirects; a failure is
 * logged and not retried (§2.8 leaves retries to the OP, and a client that
 * missed one still finds the session gone at introspection and refresh).
 */
import type { ClientRegistry } from './client_registry.ts';
import type { SessionRecord } from './sessions.ts';
import type { TokenService } from './tokens.ts';

const TIMEOUT_MS = 5000;

export interface BackchannelLogoutOptions {
  registry: ClientRegistry;
  tokens: Pick<TokenService, 'signLogoutToken'>;
  /** Told of a notice that could not be delivered. */
  onFailure: (detail: { client_id: string; status?: number; error?: unknown }) => void;
}

export class BackchannelLogout {
  readonly #o: BackchannelLogoutOptions;
  readonly #pending = new Set<Promise<void>>();

  constructor(options: BackchannelLogoutOptions) {
    this.#o = options;
  }

  /** Sends the logout notice of an ended session, when its client registered a URI. Never throws. */
  notify(session: SessionRecord): void {
    const clientId = session.client_id;
    if (clientId === undefined) return;
    const sending = this.#send(clientId, session).catch((error: unknown) => this.#o.onFailure({ client_id: clientId, error }));
    this.#pending.add(sending);
    void sending.finally(() => this.#pending.delete(sending));
  }

  async #send(clientId: string, session: SessionRecord): Promise<void> {
    const client = await this.#o.registry.find(clientId);
    const uri = client === undefined || client.fromFlags || client.record.disabled ? null : client.record.backchannel_logout_uri;
    if (uri === null) return;
    const token = await this.#o.tokens.signLogoutToken(clientId, session.user_id, session.sid);
    const res = await fetch(uri, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ logout_token: token }),
      redirect: 'manual',
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    await res.body?.cancel();
    // §2.8: 200 (or 204) is success; anything else is the client's failure to log out.
    if (res.status !== 200 && res.status !== 204) this.#o.onFailure({ client_id: clientId, status: res.status });
  }

  /** Resolves once every notice under way has been sent or has failed (for shutdown). */
  async settled(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }
}
