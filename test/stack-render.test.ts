// The config templates of deploy/ and their renderer.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { renderTemplate } from '../scripts/stack/render.ts';

describe('renderTemplate', () => {
  it('fills placeholders and keeps #if blocks only when their variable is set', () => {
    const t = 'a: ${A}\n#if B\nb: ${B}\n#endif\n# ${NOT_REPLACED} in comments\nc: 1';
    expect(renderTemplate(t, { A: 1, B: 'x' })).toBe('a: 1\nb: x\n# ${NOT_REPLACED} in comments\nc: 1');
    expect(renderTemplate(t, { A: 1, B: '' })).toBe('a: 1\n# ${NOT_REPLACED} in comments\nc: 1');
  });

  it('refuses a placeholder with no value', () => {
    expect(() => renderTemplate('a: ${A}', {})).toThrow('template variable A has no value');
  });

  it('renders the LiveKit config with loopback WebRTC, Redis and the webhook', () => {
    const out = renderTemplate(readFileSync('deploy/livekit.yaml', 'utf8'), {
      LIVEKIT_PORT: 7880,
      LIVEKIT_BIND: '127.0.0.1',
      LIVEKIT_RTC_TCP_PORT: 7881,
      LIVEKIT_RTC_UDP_PORT: 7882,
      LIVEKIT_NODE_IP: '127.0.0.1',
      REDIS_ADDRESS: '127.0.0.1:6379',
      LIVEKIT_LOG_LEVEL: 'info',
      LIVEKIT_API_KEY: 'devkey',
      LIVEKIT_WEBHOOK_URL: 'http://127.0.0.1:8080/internal/livekit/webhook',
    });
    expect(out).toContain('node_ip: 127.0.0.1');
    expect(out).toContain('enable_loopback_candidate: true');
    expect(out).toContain('address: 127.0.0.1:6379');
    expect(out).toContain('    - http://127.0.0.1:8080/internal/livekit/webhook');
    expect(out).not.toMatch(/^keys:/m);
  });
});
