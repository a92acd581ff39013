/**
 * The words of a `chat/permission` question, for the chat's card and the notification shown
 * when the chat is hidden: the server's own (`choices`, sent for a project's MCP server in
 * Claude Code's dialog words) when it sends them, else ours. Pure: unit-tested.
 */

/** What the words are computed from (the params as the chat model keeps them). */
export interface PermissionText {
  summary: string;
  sessionScope?: string | null;
  choices?: { allow: string; allowSession?: string | null; deny: string } | null;
}

export interface PermissionWords {
  /** The question. */
  title: string;
  allow: string;
  /** Absent: the call can only be allowed once (a file that makes programs run code). */
  allowSession?: string;
  deny: string;
}

export function permissionWords(p: PermissionText): PermissionWords {
  const c = p.choices ?? undefined;
  const session = c?.allowSession || (p.sessionScope ? `Allow ${p.sessionScope}` : undefined);
  return {
    // A question in the server's own words is its own title, not a tool run.
    title: c ? p.summary : `Claude wants to run: ${p.summary}`,
    allow: c?.allow || 'Allow once',
    ...(session ? { allowSession: session } : {}),
    deny: c?.deny || 'Deny',
  };
}
