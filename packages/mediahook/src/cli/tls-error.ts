/**
 * Node's codes for a TLS handshake that failed: its own (`ERR_TLS_…`), OpenSSL's (`ERR_SSL_…`,
 * such as a plain-HTTP port answering a handshake) and the certificate checks' (OpenSSL's
 * verify results: `DEPTH_ZERO_SELF_SIGNED_CERT`, `CERT_HAS_EXPIRED`, `UNABLE_TO_GET_ISSUER_CERT`, …).
 */
const TLS_ERROR_CODE =
  /^(ERR_TLS_|ERR_SSL_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|CERT_|INVALID_CA|PATH_LENGTH_EXCEEDED|HOSTNAME_MISMATCH)/;

/**
 * Whether an error `code` is one of a failed TLS handshake (TLS_ERROR_CODE).
 *
 * @example
 * isTlsErrorCode('DEPTH_ZERO_SELF_SIGNED_CERT'); // true
 * isTlsErrorCode('ECONNREFUSED'); // false
 */
export function isTlsErrorCode(code: unknown): boolean {
  return typeof code === 'string' && TLS_ERROR_CODE.test(code);
}
