// A results file names the code that ran: the commit and tree state at the run's start, and says when the tree
// changed while it ran (issue 55). Checked on a scratch repository: edits, a second edit of an already dirty
// tree, and a commit made mid-run each show as a change; an untouched tree does not.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provenance, treeState } from '../bench/support/results.ts';

let dir: string;
const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, encoding: 'utf8' }).trim();

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'vap-results-'));
  git('init', '-q');
  git('config', 'user.email', 'bench@example.com');
  git('config', 'user.name', 'bench');
  writeFileSync(path.join(dir, 'a.ts'), 'one\n');
  git('add', 'a.ts');
  git('commit', '-qm', 'one');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('results provenance', () => {
  it('a clean tree that stays clean: the start commit, clean, unchanged', () => {
    const start = treeState(dir);
    expect(provenance(start, treeState(dir))).toEqual({ commit: git('rev-parse', 'HEAD'), tree_dirty: false, tree_changed_during_run: false });
  });

  it('a tree edited while the run goes on says so, with the state at the end; the start state is what it records', () => {
    const start = treeState(dir);
    writeFileSync(path.join(dir, 'a.ts'), 'two\n');
    const p = provenance(start, treeState(dir));
    expect(p).toMatchObject({ commit: start.commit, tree_dirty: false, tree_changed_during_run: true, commit_at_end: start.commit, tree_dirty_at_end: true });
  });

  it('a dirty tree edited again is a change too (the fingerprint covers the content, not just dirty or clean)', () => {
    const start = treeState(dir);
    expect(start.dirty).toBe(true);
    expect(provenance(start, treeState(dir)).tree_changed_during_run).toBe(false);
    writeFileSync(path.join(dir, 'a.ts'), 'three\n');
    expect(provenance(start, treeState(dir))).toMatchObject({ tree_dirty: true, tree_changed_during_run: true });
  });

  it('a commit made mid-run: the file names the start commit, and the end commit as the change', () => {
    const start = treeState(dir);
    git('commit', '-qam', 'three');
    const end = treeState(dir);
    expect(end.commit).not.toBe(start.commit);
    expect(provenance(start, end)).toEqual({
      commit: start.commit,
      tree_dirty: true,
      tree_changed_during_run: true,
      commit_at_end: end.commit,
      tree_dirty_at_end: false,
    });
  });
});
