// Structured JSON logs (pino). Messages are static; variable data goes in fields.
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(name: string, level: string = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({
    name,
    level,
    base: { service: name, pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    redact: { paths: ['req.headers.authorization', '*.api_key', '*.secret', '*.password'], censor: '[redacted]' },
  });
}
