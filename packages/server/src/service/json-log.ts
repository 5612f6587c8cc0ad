/** Where structured logs go: one JSON object per line. */
type LogSink = (line: string) => void;

export type Logger = (
  level: 'info' | 'warn' | 'error',
  event: string,
  fields?: Record<string, unknown>,
) => void;

/**
 * A structured logger: `{"time","level","event",…fields}` per line, on stdout by default:
 * NDJSON is machine output, and stderr stays for what a person reads (a server's URL).
 *
 * @example
 * const log = jsonLogger();
 * log('info', 'operation_created', { id_gen });
 */
export function jsonLogger(sink: LogSink = (line) => process.stdout.write(line)): Logger {
  return (level, event, fields = {}) => {
    const entry: Record<string, unknown> = { time: new Date().toISOString(), level, event, ...fields };
    if (fields['error'] instanceof Error) entry['error'] = fields['error'].message;
    sink(`${JSON.stringify(entry)}\n`);
  };
}

/** A logger that drops everything. */
export const silentLogger: Logger = () => {};
