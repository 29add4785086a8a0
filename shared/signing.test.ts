// Our signatures must verify with an independent Standard Webhooks implementation.
import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { newSigningSecret, signatureHeaders, signPayload } from './signing.ts';

describe('Standard Webhooks signing', () => {
  it('makes whsec_ secrets of 32 random bytes', () => {
    const s = newSigningSecret();
    expect(s).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(s.slice(6), 'base64')).toHaveLength(32);
    expect(newSigningSecret()).not.toBe(s);
  });

  it('produces headers that the standardwebhooks package verifies', () => {
    const secret = newSigningSecret();
    const body = JSON.stringify({ event: 'tool.call', arguments: { city: 'Zürich' } });
    const headers = signatureHeaders(secret, 'msg_123', body);
    expect(new Webhook(secret).verify(body, { ...headers })).toEqual(JSON.parse(body));
  });

  it('matches the package signature byte for byte', () => {
    const secret = newSigningSecret();
    const ts = 1_700_000_000;
    expect(signPayload(secret, 'msg_1', ts, 'hello')).toBe(new Webhook(secret).sign('msg_1', new Date(ts * 1000), 'hello'));
  });

  it('signs with every given secret during a rotation; each verifies alone', () => {
    const [oldS, newS] = [newSigningSecret(), newSigningSecret()];
    const body = '{"a":1}';
    const headers = signatureHeaders([newS, oldS], 'msg_2', body);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(new Webhook(oldS).verify(body, { ...headers })).toEqual({ a: 1 });
    expect(new Webhook(newS).verify(body, { ...headers })).toEqual({ a: 1 });
  });

  it('a tampered body or a foreign secret fails verification', () => {
    const secret = newSigningSecret();
    const headers = signatureHeaders(secret, 'msg_3', '{"a":1}');
    expect(() => new Webhook(secret).verify('{"a":2}', { ...headers })).toThrow();
    expect(() => new Webhook(newSigningSecret()).verify('{"a":1}', { ...headers })).toThrow();
  });
});
