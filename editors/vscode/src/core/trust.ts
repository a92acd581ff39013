/**
 * VS Code's own workspace trust, told to the server (docs/protocol.md, `trust/changed`): it is
 * the answer for every folder of the workspace, so the server never asks `workspaceTrust`.
 * Restricted Mode is untrusted (the chat runs restricted: nothing of the repository runs, its
 * settings that reach outside it wait); a trusted workspace is trusted. Pure: unit-tested.
 */

/**
 * The `initializationOptions`: the `claudeContext` settings, and the workspace's trust *beside*
 * them. The settings may hold what a repository's `.vscode/settings.json` says (a workspace can
 * set any `claudeContext.*` key), so the trust never goes inside them, and the server reads it
 * only from beside the section.
 */
export function initializationOptions(settings: Record<string, unknown>, trusted: boolean): Record<string, unknown> {
  return { claudeContext: settings, workspaceTrust: trusted };
}

/** `trust/changed`'s params when VS Code grants trust (it cannot be revoked without a reload). */
export function trustGranted(): { trusted: boolean } {
  return { trusted: true };
}
