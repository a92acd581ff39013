/**
 * The words of a `chat/permission` question, for the chat's card and the notification shown
 * when the chat is hidden: the server's own (`choices`, sent for a project's MCP server in
 * Claude Code's dialog words) when it sends them, else ours; and how each answer is styled.
 * Pure: unit-tested.
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

/** The button style of each answer: `primary` (the one the eye goes to), `danger`, or plain. */
export interface PermissionStyles {
  allow: '' | 'primary' | 'danger';
  allowSession: '' | 'primary' | 'danger';
  deny: '' | 'primary' | 'danger';
}

/**
 * How the answers look. A question in the server's own words (a project's MCP server, the
 * folder's trust) is about running code the repository ships: its safe answer ("Continue
 * without using this MCP server") is the primary one and nothing is red, since the risky answer is
 * the one that runs code, not the one that declines. A tool call keeps the usual card: allowing
 * once is primary, denying stops the turn (red).
 */
export function permissionStyles(p: Pick<PermissionText, 'choices'>): PermissionStyles {
  return p.choices
    ? { allow: '', allowSession: '', deny: 'primary' }
    : { allow: 'primary', allowSession: '', deny: 'danger' };
}
