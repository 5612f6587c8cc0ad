// The service API's answers as the dashboard reads them (docs/service.md has them in full).

interface Attempt {
  at: string;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
  response_head?: string | null;
  request_headers?: Record<string, string> | null;
  response_headers?: Record<string, string> | null;
}

interface Operation {
  id_gen: string;
  client?: string;
  kind: string;
  family: string;
  state: string;
  webhook_url: string;
  created_at: string;
  finished_at: string | null;
  error_message?: string | null;
  callback: {
    state: string;
    /** Absent from an older service; null until the operation has finished. */
    status?: string | null;
    next_attempt_at: string | null;
    attempts: Attempt[];
  };
}

interface OperationList {
  operations: Operation[];
  next_before: string | null;
}

interface Circuit {
  key: string;
  circuit_state: string;
  open_until: string | null;
}

interface Receiver {
  key: string;
  circuit_state: string;
  callbacks: Record<string, number>;
  last_attempt_at: string | null;
  last_error: string | null;
  success_rate_1h: number | null;
  latency_ms: { p50: number; p95: number } | null;
}

interface StatsBucket {
  start: string;
  delivered: number;
  failed: number;
  p50_ms: number | null;
  p95_ms: number | null;
}

interface ApiKey {
  key_id: string;
  client: string;
  role: string;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
}
