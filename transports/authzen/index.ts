/**
 * The AuthZEN Authorization API 1.0 on this server (docs/authzen.md): the
 * evaluation, evaluations and search endpoints over the FGA engine, for the
 * identity server's store at `/access/v1/…` and for the OpenFGA API's stores
 * at `/stores/{store_id}/access/v1/…`, with the decision point's metadata
 * at `/.well-known/authzen-configuration`. Mounted by the HTTP adapter.
 */
export { authzenMetadata, authzenRouter, type AuthzenApiOptions, type AuthzenCaller } from './authzen_api.ts';
export { authzenAuthenticator } from './authzen_auth.ts';
