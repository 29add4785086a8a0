// The playground is served with a strict Content-Security-Policy and the other protective headers, its page has
// no inline code, only the named built files are served, and a missing build gives a clear page, not an error.
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseHTML } from 'linkedom';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { contentSecurityPolicy, livekitOrigins } from './security.ts';

const SOURCE_PAGE = path.resolve(import.meta.dirname, '../../../../web/src/playground/playground.html');
const CONSOLE_PAGE = path.resolve(import.meta.dirname, '../../../../web/src/console/console.html');
let dist: string;
let tp: TestPlatform;

beforeAll(async () => {
  dist = mkdtempSync(path.join(os.tmpdir(), 'vap-playground-'));
  copyFileSync(SOURCE_PAGE, path.join(dist, 'playground.html'));
  writeFileSync(path.join(dist, 'playground.js'), 'export {};\n');
  writeFileSync(path.join(dist, 'playground.css'), 'body{margin:0}\n');
  writeFileSync(path.join(dist, 'secret.txt'), 'not served\n');
  copyFileSync(CONSOLE_PAGE, path.join(dist, 'console.html'));
  writeFileSync(path.join(dist, 'console.js'), 'export {};\n');
  writeFileSync(path.join(dist, 'console.css'), 'body{margin:0}\n');
  tp = await usePlatform({ WEB_DIST_DIR: dist, LIVEKIT_PUBLIC_URL: 'wss://lk.example.com:7443', PUBLIC_BASE_URL: 'https://api.example.com' });
});

afterAll(() => rmSync(dist, { recursive: true, force: true }));

/** The policy as a map of directive -> sources. */
function directives(csp: string): Map<string, string[]> {
  return new Map(
    csp
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .filter((p) => p[0])
      .map(([name, ...values]) => [name!, values]),
  );
}

function expectProtectiveHeaders(h: Headers): void {
  const csp = h.get('content-security-policy');
  expect(csp).toBeTruthy();
  const d = directives(csp!);
  expect(d.get('default-src')).toEqual(["'none'"]);
  expect(d.get('script-src')).toEqual(["'self'"]);
  expect(d.get('style-src')).toEqual(["'self'"]);
  expect(d.get('connect-src')).toEqual(["'self'", 'wss://lk.example.com:7443', 'https://lk.example.com:7443']);
  expect(d.get('media-src')).toEqual(["'self'", 'blob:', 'https://api.example.com']);
  expect(d.get('img-src')).toEqual(["'self'", 'data:']);
  expect(d.get('frame-ancestors')).toEqual(["'none'"]);
  expect(d.get('base-uri')).toEqual(["'none'"]);
  expect(d.get('form-action')).toEqual(["'none'"]);
  // Nothing that would let injected markup run or load code: no unsafe keywords, no wildcards, no data: scripts.
  expect(csp).not.toMatch(/unsafe-|\*|strict-dynamic|nonce-|sha256-/);
  expect(h.get('x-content-type-options')).toBe('nosniff');
  expect(h.get('referrer-policy')).toBe('no-referrer');
  expect(h.get('x-frame-options')).toBe('DENY');
}

describe('GET /playground', () => {
  it('serves the page with a strict policy and no inline script, style or handler', async () => {
    const res = await fetch(`${tp.url}/playground`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expectProtectiveHeaders(res.headers);
    const html = await res.text();
    const { document } = parseHTML(html);
    const scripts = [...document.querySelectorAll('script')];
    expect(scripts.length).toBeGreaterThan(0);
    for (const s of scripts) {
      expect(s.textContent?.trim()).toBe('');
      // Same origin, by path.
      expect(s.getAttribute('src')).toMatch(/^\/playground\/[\w.-]+\.js$/);
    }
    expect(document.querySelectorAll('style').length).toBe(0);
    for (const el of document.querySelectorAll('*')) {
      for (const attr of el.getAttributeNames()) {
        expect(attr, `<${el.tagName.toLowerCase()} ${attr}>`).not.toMatch(/^on|^style$/i);
        expect(el.getAttribute(attr) ?? '', `<${el.tagName.toLowerCase()} ${attr}>`).not.toMatch(/^\s*javascript:/i);
      }
    }
    for (const link of document.querySelectorAll('link[rel="stylesheet"]')) expect(link.getAttribute('href')).toMatch(/^\/playground\/[\w.-]+\.css$/);
    // The credential field is a password field that browsers are asked not to remember.
    const field = document.querySelector('#credential')!;
    expect(field.getAttribute('type')).toBe('password');
    expect(field.getAttribute('autocomplete')).toBe('off');
  });

  it('serves the script and the stylesheet with the same headers, and nothing else from the folder', async () => {
    const js = await fetch(`${tp.url}/playground/playground.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expectProtectiveHeaders(js.headers);
    expect(await js.text()).toBe('export {};\n');
    const css = await fetch(`${tp.url}/playground/playground.css`);
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
    for (const p of [
      '/playground/secret.txt',
      '/playground/playground.html',
      '/playground/..%2Fplayground.html',
      '/playground/%2e%2e%2fpackage.json',
      '/playground/constructor',
    ]) {
      const res = await fetch(`${tp.url}${p}`);
      expect(res.status, p).toBe(404);
    }
  });

  it('answers with a clear page, not an error, when the build is missing', async () => {
    const moved = path.join(dist, 'playground.html.away');
    copyFileSync(path.join(dist, 'playground.html'), moved);
    rmSync(path.join(dist, 'playground.html'));
    rmSync(path.join(dist, 'playground.js'));
    try {
      const res = await fetch(`${tp.url}/playground`);
      expect(res.status).toBe(200);
      expectProtectiveHeaders(res.headers);
      const html = await res.text();
      expect(html).toContain('npm run build:web');
      expect(html).not.toContain('<script');
      expect((await fetch(`${tp.url}/playground/playground.js`)).status).toBe(404);
    } finally {
      copyFileSync(moved, path.join(dist, 'playground.html'));
      writeFileSync(path.join(dist, 'playground.js'), 'export {};\n');
    }
  });
});

describe('GET /console', () => {
  it('serves the console page with the same policy, no inline code, and a credential field browsers do not remember', async () => {
    const res = await fetch(`${tp.url}/console`);
    expect(res.status).toBe(200);
    expectProtectiveHeaders(res.headers);
    const { document } = parseHTML(await res.text());
    const scripts = [...document.querySelectorAll('script')];
    expect(scripts.length).toBe(1);
    expect(scripts[0]!.textContent?.trim()).toBe('');
    expect(scripts[0]!.getAttribute('src')).toBe('/console/console.js');
    expect(document.querySelectorAll('style').length).toBe(0);
    for (const el of document.querySelectorAll('*')) {
      for (const attr of el.getAttributeNames()) expect(attr, `<${el.tagName.toLowerCase()} ${attr}>`).not.toMatch(/^on|^style$/i);
    }
    const field = document.querySelector('#credential')!;
    expect(field.getAttribute('type')).toBe('password');
    expect(field.getAttribute('autocomplete')).toBe('off');
  });

  it("serves only the console's own script and stylesheet under /console", async () => {
    const js = await fetch(`${tp.url}/console/console.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expectProtectiveHeaders(js.headers);
    expect((await fetch(`${tp.url}/console/console.css`)).headers.get('content-type')).toBe('text/css; charset=utf-8');
    for (const p of [
      '/console/playground.js',
      '/console/console.html',
      '/console/secret.txt',
      '/console/..%2Fconsole.html',
      '/console/constructor',
      '/playground/console.js',
    ]) {
      expect((await fetch(`${tp.url}${p}`)).status, p).toBe(404);
    }
  });
});

describe('the policy', () => {
  it('allows the LiveKit server over ws for a plain http URL, and S3 recordings from their endpoint', () => {
    expect(livekitOrigins('http://127.0.0.1:7880')).toEqual(['ws://127.0.0.1:7880', 'http://127.0.0.1:7880']);
    expect(livekitOrigins('wss://lk.example.com/some/path')).toEqual(['wss://lk.example.com', 'https://lk.example.com']);
    const d = directives(
      contentSecurityPolicy({
        livekitPublicUrl: 'ws://127.0.0.1:7880',
        publicBaseUrl: 'http://127.0.0.1:3000',
        s3Bucket: 'rec',
        s3Endpoint: 'https://minio.example.com:9000/',
        s3Region: 'eu-west-1',
      }),
    );
    expect(d.get('media-src')).toEqual(["'self'", 'blob:', 'http://127.0.0.1:3000', 'https://minio.example.com:9000']);
    const aws = directives(
      contentSecurityPolicy({ livekitPublicUrl: 'ws://127.0.0.1:7880', publicBaseUrl: 'http://127.0.0.1:3000', s3Bucket: 'rec', s3Region: 'eu-west-1' }),
    );
    expect(aws.get('media-src')).toContain('https://rec.s3.eu-west-1.amazonaws.com');
  });
});
