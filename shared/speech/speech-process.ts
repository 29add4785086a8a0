// Runs a local synthesizer process and hands its PCM to a callback, with the agents error classes:
// a missing binary or a failing engine is final (retrying gives the same result); silence past the
// timeout is retryable. An abort kills the process at once.
import { APIConnectionError, APIError, APITimeoutError } from '@livekit/agents';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { type WavFormat, WavStreamParser } from '../wav-stream.ts';

export interface RunOptions {
  /** For messages: 'espeak-ng', 'festival'. */
  engine: string;
  signal: AbortSignal;
  /** Longest wait for the first audio byte. */
  timeoutMs: number;
  expectedSampleRate: number;
  /** Treat a clean exit without any audio as a failure (the text had something to say). */
  requireAudio: boolean;
}

/** Collects the PCM of every WAV the process writes to stdout. Resolves when it exits cleanly. */
export function runSynthesizer(
  child: ChildProcessWithoutNullStreams,
  opts: RunOptions,
  onPcm: (pcm: Buffer) => void,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const parser = new WavStreamParser();
    let stderr = '';
    let gotAudio = false;
    let settled = false;

    const finish = (error?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal.removeEventListener('abort', onAbort);
      if (error) {
        child.kill('SIGKILL');
        reject(error);
      } else {
        resolve();
      }
    };
    const onAbort = () => {
      child.kill('SIGKILL');
      finish();
    };
    const timer = setTimeout(() => {
      finish(new APITimeoutError({ message: `${opts.engine} produced no audio within ${opts.timeoutMs} ms` }));
    }, opts.timeoutMs);

    if (opts.signal.aborted) return onAbort();
    opts.signal.addEventListener('abort', onAbort, { once: true });

    child.stdout.on('data', (chunk: Buffer) => {
      if (settled) return;
      let pcm: Buffer[];
      try {
        pcm = parser.push(chunk);
      } catch (error) {
        return finish(new APIError(`${opts.engine} wrote malformed audio: ${(error as Error).message}`, { retryable: false }));
      }
      if (!checkFormat(parser.format, opts, finish)) return;
      for (const bytes of pcm) {
        if (!gotAudio) {
          gotAudio = true;
          clearTimeout(timer);
        }
        onPcm(bytes);
      }
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < 4096) stderr += chunk.toString('utf8');
    });
    // Closing stdin early (the process died first) must not crash the worker.
    child.stdin.on('error', () => {});
    child.on('error', (error: NodeJS.ErrnoException) => {
      const missing = error.code === 'ENOENT';
      finish(
        new APIConnectionError({
          message: missing ? `${opts.engine} is not installed (run scripts/setup.sh)` : `${opts.engine} failed to start: ${error.message}`,
          options: { retryable: !missing },
        }),
      );
    });
    child.on('close', (code, signal) => {
      if (code === 0 && (gotAudio || !opts.requireAudio)) return finish();
      if (code === 0) {
        return finish(new APIError(`${opts.engine} produced no audio`, { body: { stderr: stderr.trim() }, retryable: false }));
      }
      finish(
        new APIError(`${opts.engine} exited with ${signal ?? `code ${code}`}`, {
          body: { stderr: stderr.trim() },
          retryable: false,
        }),
      );
    });
  });
}

function checkFormat(format: WavFormat | undefined, opts: RunOptions, finish: (error?: Error) => void): boolean {
  if (!format) return true;
  if (format.sampleRate !== opts.expectedSampleRate || format.numChannels !== 1) {
    finish(
      new APIError(
        `${opts.engine} wrote ${format.sampleRate} Hz x${format.numChannels}, expected ${opts.expectedSampleRate} Hz mono`,
        { retryable: false },
      ),
    );
    return false;
  }
  return true;
}
