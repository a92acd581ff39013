// The meter's model: the status-bar text, its colour level and its tooltip, from a preview's
// totals or a chat session's `usage` (pure; the status item renders it).

import type { ContextPreview } from '../protocol/generated';
import type { UsageReport } from './chatModel';
import { tokens, windowSize } from './format';

export type Level = 'normal' | 'warning' | 'error';

export interface MeterModel {
  text: string;
  level: Level;
  /** Markdown. */
  tooltip: string;
  /** Where the figure comes from. */
  source: 'preview' | 'session' | 'usage';
}

/** Share of the auto-compaction threshold from which the meter is coloured. */
export const WARN_SHARE = 0.9;

/** `12,408 / 200k`. */
export function meterText(used: number, window: number): string {
  return `${tokens(used)} / ${windowSize(window)}`;
}

/** Coloured only near the compaction threshold: warning from 90% of it, error past it. */
export function meterLevel(used: number, threshold: number): Level {
  if (threshold <= 0) return 'normal';
  if (used >= threshold) return 'error';
  if (used >= threshold * WARN_SHARE) return 'warning';
  return 'normal';
}

function row(label: string, n: number | undefined | null): string {
  return n === undefined || n === null ? '' : `| ${label} | ${tokens(n)} |\n`;
}

/** The meter from a preview (a new session's request, or a chat session's next one). */
export function fromPreview(p: ContextPreview.Result, what: string): MeterModel {
  const t = p.totals;
  const session = p.session ?? null;
  const used = t.tokens;
  // The parts add up to the total: the tool definitions are a part of every request.
  const fixed = t.system + (t.tools ?? 0) + t.instructions + t.git + t.attachments;
  const conversation = session ? (t.conversation ?? Math.max(0, used - fixed)) : null;
  let tip = `**Claude Context** — ${what}\n\n| | tokens |\n|---|---:|\n`;
  tip += row('System prompt', t.system);
  if (t.skills) tip += row('↳ of which the skills listing', t.skills);
  if (t.mcp) tip += row('↳ of which MCP servers', t.mcp);
  if (t.agents) tip += row('↳ of which the agent types listing', t.agents);
  tip += row('Tool definitions', t.tools);
  tip += row('Instructions', t.instructions);
  tip += row('Git status', t.git);
  tip += row('Attachments', t.attachments);
  tip += row('Conversation', conversation);
  tip += `| **Total** | **${tokens(used)}** |\n\n`;
  tip += `${t.percent}% of the ${windowSize(t.window)} window; auto-compaction at ${tokens(t.autoCompactThreshold)}.`;
  if (session)
    tip += session.estimated ? ' Estimated (no answer yet).' : " From the API's last usage plus an estimate since.";
  else tip += ' Estimated.';
  if (p.gitPending) tip += ' Git snapshot still being taken.';
  return {
    text: meterText(used, t.window),
    level: meterLevel(used, t.autoCompactThreshold),
    tooltip: tip,
    source: session ? 'session' : 'preview',
  };
}

/** The meter from a chat session's last `usage` event: the API's own figures. */
export function fromUsage(u: UsageReport, threshold: number | null): MeterModel {
  let tip = `**Claude Context** — chat session (the API's figures)\n\n| | tokens |\n|---|---:|\n`;
  tip += row('Input', u.inputTokens);
  tip += row('Cache read', u.cacheReadInputTokens);
  tip += row('Cache write', u.cacheCreationInputTokens);
  tip += row('Output', u.outputTokens);
  tip += `| **In the window** | **${tokens(u.contextTokens)}** |\n\n`;
  tip += `${u.percent}% of the ${windowSize(u.window)} window`;
  tip += threshold ? `; auto-compaction at ${tokens(threshold)}.` : '.';
  return {
    text: meterText(u.contextTokens, u.window),
    level: threshold ? meterLevel(u.contextTokens, threshold) : 'normal',
    tooltip: tip,
    source: 'usage',
  };
}
