// The stack command's port options: flags, then environment variables. Kept apart from scripts/stack.ts so
// the precedence is tested (test/stack-options.test.ts).
import type { StackPorts } from './supervisor.ts';

/** `--<flag>` and its environment twin `STACK_<FLAG>` for each port of the stack. */
export const PORT_FLAGS: Record<string, keyof StackPorts> = {
  'livekit-port': 'livekit',
  'rtc-tcp-port': 'rtcTcp',
  'rtc-udp-port': 'rtcUdp',
  'redis-port': 'redis',
  'sip-port': 'sip',
  'sip-health-port': 'sipHealth',
  'control-plane-port': 'controlPlane',
  'control-plane-metrics-port': 'controlPlaneMetrics',
  'worker-port': 'worker',
  'worker-metrics-port': 'workerMetrics',
};

/**
 * The variables the control plane documents for itself (`.env.example`), honoured by the stack too. The
 * stack-specific name wins when both are set (it is the more deliberate choice), and the flag over both.
 */
export const APP_PORT_ALIASES: Partial<Record<keyof StackPorts, string>> = {
  controlPlane: 'PORT',
  controlPlaneMetrics: 'METRICS_PORT',
};

export class OptionError extends Error {}

export function portOptions(flags: Record<string, unknown>, env: NodeJS.ProcessEnv): { ports: Partial<StackPorts>; notes: string[] } {
  const ports: Partial<StackPorts> = {};
  const notes: string[] = [];
  for (const [flag, key] of Object.entries(PORT_FLAGS)) {
    const stackVar = `STACK_${flag.replace(/-/g, '_').toUpperCase()}`;
    const appVar = APP_PORT_ALIASES[key];
    const candidates: [string, unknown][] = [
      [`--${flag}`, flags[flag]],
      [stackVar, env[stackVar]],
      ...(appVar ? [[appVar, env[appVar]] as [string, unknown]] : []),
    ];
    const set = candidates.filter(([, v]) => v !== undefined && v !== '');
    const chosen = set[0];
    if (!chosen) continue;
    const [source, raw] = chosen;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > 65535) throw new OptionError(`${source}: not a port: ${String(raw)}`);
    ports[key] = n;
    const ignored = set.slice(1).filter(([, v]) => Number(v) !== n);
    if (ignored.length) notes.push(`${key} port ${n} from ${source} (ignoring ${ignored.map(([s, v]) => `${s}=${String(v)}`).join(', ')})`);
  }
  const rtp = flags['sip-rtp-ports'] ?? env.STACK_SIP_RTP_PORTS;
  if (typeof rtp === 'string' && rtp) {
    const m = /^(\d+)-(\d+)$/.exec(rtp);
    if (!m || Number(m[1]) >= Number(m[2])) throw new OptionError(`--sip-rtp-ports: expected START-END, got ${rtp}`);
    ports.sipRtpStart = Number(m[1]);
    ports.sipRtpEnd = Number(m[2]);
  }
  return { ports, notes };
}
