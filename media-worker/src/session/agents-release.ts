// The worker patches agents-js internals where no public API reaches (race-fix.ts, prompt-pause.ts). Each patch
// is pinned to the release it was checked against, and fails loudly on any other: an upgrade of agents-js makes
// someone check whether the fix is upstream (then delete the patch) or still needed (then bump its pin).
import { installedPackageVersion } from '../../../shared/package-version.ts';

/** The version of the @livekit/agents that this process loads. */
export function installedAgentsVersion(): string {
  return installedPackageVersion('@livekit/agents');
}

/** A patch's pinned release is not the installed one: `check` says what to look at, `pin` names the constant. */
export class PinnedReleaseError extends Error {
  constructor(patch: string, pinned: string, installed: string, check: string, pin: string) {
    super(`${patch} patches @livekit/agents ${pinned} but ${installed} is installed: check whether ${check}, then delete the patch or bump ${pin}`);
    this.name = new.target.name;
  }
}
