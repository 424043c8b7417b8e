/**
 * OpenFGA's HTTP API (v1) on this server, a separate API surface from the
 * operations table: {@link openfgaRouter} and its error mapping. Mounted by
 * the HTTP adapter when `--openfga-preshared-keys` is set (docs/openfga.md).
 */
export { openfgaApi, openfgaRouter, type OpenfgaApi, type OpenfgaApiOptions } from './openfga_api.ts';
export { OPENFGA_ERROR_NAMES, openfgaError, type OpenfgaError } from './openfga_errors.ts';
