// Real Chromium for the browser tests: Debian's /usr/bin/chromium (package `chromium`, installed by
// scripts/setup.sh) driven by playwright-core, nothing downloaded. The microphone is Chromium's fake device fed
// from a WAV file (a spoken question made at run time), or a microphone the browser refuses.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { resample, synthesize, writeWav, type Pcm, type SpeechEngine } from './speech.ts';

export const CHROMIUM = process.env.VAP_CHROMIUM ?? '/usr/bin/chromium';

export function chromiumAvailable(): boolean {
  return existsSync(CHROMIUM);
}

export interface LaunchOptions {
  /** 'fake': the fake device, allowed, playing `audioFile` (silence without one); 'denied': every prompt refused. */
  microphone?: 'fake' | 'denied';
  /** A 16-bit PCM WAV file for the fake microphone (see speechWav). Chromium loops it. */
  audioFile?: string;
}

export interface TestBrowser {
  context: BrowserContext;
  newPage(): Promise<Page>;
  close(): Promise<void>;
}

const BASE_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Launches Chromium with a fresh profile (its own user-data-dir, removed on close). */
export async function launchBrowser(opts: LaunchOptions = {}): Promise<TestBrowser> {
  const mic = opts.microphone ?? 'fake';
  const args = [...BASE_ARGS, '--use-fake-device-for-media-stream'];
  if (mic === 'fake') {
    args.push('--use-fake-ui-for-media-stream');
    if (opts.audioFile) args.push(`--use-file-for-fake-audio-capture=${opts.audioFile}`);
  } else {
    args.push('--deny-permission-prompts');
  }
  const userDataDir = mkdtempSync(path.join(tmpdir(), 'vap-chromium-'));
  let context: BrowserContext;
  try {
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args,
      timeout: 60_000,
      permissions: mic === 'fake' ? ['microphone'] : [],
    });
  } catch (err) {
    rmSync(userDataDir, { recursive: true, force: true });
    throw err;
  }
  return {
    context,
    newPage: () => context.newPage(),
    async close() {
      await context.close().catch(() => undefined);
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

export interface SpeechWavOptions {
  /** Silence before the words (the caller hears the greeting first). Default 4 s. */
  leadSilenceMs?: number;
  /** Silence after them, so that Chromium's loop of the file does not repeat the question at once. Default 40 s. */
  trailSilenceMs?: number;
  engine?: SpeechEngine;
}

/**
 * Writes `text` as speech to a 48 kHz 16-bit mono WAV (the form Chromium's fake capture reads), padded with
 * silence, in a temporary folder; returns its path and a function that removes it.
 */
export async function speechWav(text: string, opts: SpeechWavOptions = {}): Promise<{ file: string; remove(): void }> {
  const rate = 48_000;
  const speech = resample(await synthesize(text, opts.engine ?? 'espeak-ng'), rate);
  const lead = Math.round(((opts.leadSilenceMs ?? 4000) / 1000) * rate);
  const trail = Math.round(((opts.trailSilenceMs ?? 40_000) / 1000) * rate);
  const samples = new Int16Array(lead + speech.samples.length + trail);
  samples.set(speech.samples, lead);
  const pcm: Pcm = { samples, sampleRate: rate };
  const dir = mkdtempSync(path.join(tmpdir(), 'vap-mic-'));
  const file = path.join(dir, 'question.wav');
  writeWav(file, pcm);
  return { file, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A static server for host pages: path → body (content type from the extension), read at each request. */
export async function servePages(pages: Record<string, string | Buffer>, host = '127.0.0.1'): Promise<{ origin: string; server: Server; close(): Promise<void> }> {
  const types: Record<string, string> = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript', '.map': 'application/json' };
  const server = createServer((req, res) => {
    const p = new URL(req.url ?? '/', 'http://x').pathname;
    const body = pages[p === '/' ? '/index.html' : p];
    if (body === undefined) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': types[path.extname(p === '/' ? '/index.html' : p)] ?? 'application/octet-stream' }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  const origin = `http://${host === '127.0.0.1' ? '127.0.0.1' : host}:${(server.address() as AddressInfo).port}`;
  return { origin, server, close: () => new Promise<void>((r) => server.close(() => r())) };
}
