// `npm start`: what it finds to make agents talk and how it says it, and the development organisation's block read
// from this run's part of the control plane's log only.
import { appendFileSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { detectLlm, llmLines, localLlmReady, noLlmParagraph } from '../scripts/stack/llm-detect.ts';
import { devOrgBlock } from '../scripts/stack/dev-org-block.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'vap-llm-detect-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const nothing = async () => {
  throw new Error('connection refused');
};

describe('detectLlm', () => {
  it('with nothing: no LLM, the paragraph with the exact commands', async () => {
    const f = await detectLlm({}, { listModels: nothing });
    expect(f).toMatchObject({ cloud: [], server: null, gguf: null, problems: [], env: {} });
    expect(localLlmReady(f)).toBe(false);
    expect(llmLines(f)).toEqual(['LLM:           none: agents cannot talk yet (see below)']);
    const text = noLlmParagraph('0b9f3c1e-7a2d-4e8b-9c51-2f6d8a4b1e07', 'http://127.0.0.1:8080');
    expect(text).toContain('ollama pull llama3.2');
    expect(text).toContain('LLM_MODEL_PATH=/path/to/model.gguf npm start');
    expect(text).toContain('OPENAI_API_KEY=sk-... npm start');
    expect(text).toContain('http://127.0.0.1:8080/v1/models/0b9f3c1e-7a2d-4e8b-9c51-2f6d8a4b1e07');
  });

  it('uses an Ollama found on its default port, and says so; one without models is not ready', async () => {
    const asked: string[] = [];
    const f = await detectLlm({}, { listModels: async (url) => (asked.push(url), ['llama3.2', 'qwen2.5:7b']) });
    expect(asked).toEqual(['http://127.0.0.1:11434/v1']);
    expect(f.env).toEqual({ LOCAL_LLM_BASE_URL: 'http://127.0.0.1:11434/v1' });
    expect(localLlmReady(f)).toBe(true);
    expect(llmLines(f)[0]).toContain('found running, used as LOCAL_LLM_BASE_URL; models llama3.2, qwen2.5:7b');
    const empty = await detectLlm({}, { listModels: async () => [] });
    expect(localLlmReady(empty)).toBe(false);
    expect(empty.problems).toEqual([expect.stringContaining('ollama pull')]);
  });

  it('a LOCAL_LLM_BASE_URL that does not answer, a GGUF path that is wrong, and cloud keys', async () => {
    const f = await detectLlm({ LOCAL_LLM_BASE_URL: 'http://10.0.0.9:8000/v1', LLM_MODEL_PATH: path.join(dir, 'none.gguf'), ANTHROPIC_API_KEY: 'k' }, { listModels: nothing });
    expect(f.cloud).toEqual([{ provider: 'anthropic', keyVar: 'ANTHROPIC_API_KEY' }]);
    expect(f.problems).toEqual([expect.stringContaining('LLM_MODEL_PATH: LLM model file not found'), expect.stringContaining('LOCAL_LLM_BASE_URL http://10.0.0.9:8000/v1 does not work: connection refused')]);
    // Given a server, no Ollama is looked for.
    expect(f.env).toEqual({});
    const gguf = path.join(dir, 'tiny.gguf');
    writeFileSync(gguf, 'GGUF and the rest');
    const ok = await detectLlm({ LLM_MODEL_PATH: gguf }, { listModels: nothing });
    expect(ok.gguf).toBe(gguf);
    expect(localLlmReady(ok)).toBe(true);
  });
});

describe('devOrgBlock', () => {
  it("shows this run's block only: a restart never repeats an earlier run's \"created\"", async () => {
    const log = path.join(dir, 'control-plane.log');
    writeFileSync(log, '{"msg":"listening"}\n\n  Development organisation created.\n  org_id:  o1\n  API key: vap_sk_x\n  Docs: http://127.0.0.1:8080/docs\n');
    const from = statSync(log).size;
    setTimeout(() => appendFileSync(log, '\n  Development organisation: o1 (made on the first start, which printed its API key)\n  Docs: http://127.0.0.1:8080/docs\n'), 150);
    const block = await devOrgBlock(log, from, 5000);
    expect(block).toContain('Development organisation: o1');
    expect(block).not.toContain('created');
    expect(await devOrgBlock(log, statSync(log).size, 0)).toBeNull();
  });
});
