// The local model file (LLM_MODEL_PATH) checked without loading it: the worker before it builds a call's local
// LLM (media-worker/src/providers/llama-llm.ts), and `npm start` to say whether the file is there (scripts/stack).
import { closeSync, openSync, readSync, statSync } from 'node:fs';

/** LLM_MODEL_PATH names no readable GGUF file (a call's `model_file_missing`). Its message holds the path: logs only. */
export class ModelFileError extends Error {
  override name = 'ModelFileError';
}

/** Checks the file before anything is loaded, so a wrong path fails at configuration time, clearly. */
export function checkGgufFile(path: string): void {
  let size: number;
  try {
    const stat = statSync(path);
    if (!stat.isFile()) throw new ModelFileError(`LLM model path is not a file: ${path}`);
    size = stat.size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new ModelFileError(`LLM model file not found: ${path} (set LLM_MODEL_PATH to a GGUF file)`, { cause: error });
    if (error instanceof ModelFileError) throw error;
    throw new ModelFileError(`LLM model file cannot be read: ${path}: ${(error as Error).message}`, { cause: error });
  }
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    throw new ModelFileError(`LLM model file cannot be read: ${path}: ${(error as Error).message}`, { cause: error });
  }
  try {
    const magic = Buffer.alloc(4);
    if (size < 4 || readSync(fd, magic, 0, 4, 0) < 4 || magic.toString('latin1') !== 'GGUF') {
      throw new ModelFileError(`LLM model file is not GGUF: ${path}`);
    }
  } finally {
    closeSync(fd);
  }
}
