/** What the inspector's page tests share: a request as `/requests.json` lists it. */

/** A request of `/requests.json`: an accepted family B error callback unless `more` says otherwise. */
export function inspectedRequest(id: string, more: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    verdict: 'accepted',
    receivedAt: '2026-01-01T10:00:00.000Z',
    durationMs: 3,
    error: null,
    headers: { 'content-type': 'multipart/form-data; boundary=x' },
    callback: {
      event: 'error',
      family: 'B',
      status: 'error',
      id_gen: id,
      time_gen: '2026-01-01T10:00:00.000Z',
      message: 'failed',
      file: null,
    },
    ...more,
  };
}
