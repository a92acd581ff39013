// What a compaction did (or a dry run would do), in words (pure).

import type { CompactRun } from '../protocol/generated';
import { tokens } from './format';

export function compactSummary(r: CompactRun.Result): string {
  if (r.mode === 'none') return `Nothing to compact: ${tokens(r.tokensBefore)} tokens would not shrink.`;
  const n = r.mode === 'micro' ? r.cleared.length : r.summarisedMessages;
  const what = r.mode === 'micro' ? `old tool result${n === 1 ? '' : 's'}` : `message${n === 1 ? '' : 's'}`;
  const verb =
    r.mode === 'micro' ? (r.dryRun ? 'would be cleared' : 'cleared') : r.dryRun ? 'would be summarised' : 'summarised';
  return `${n} ${what} ${verb}: ${tokens(r.tokensBefore)} → ${tokens(r.tokensAfter)} tokens.`;
}

/** The dry run as a read-only document: what would go, tokens before and after. */
export function dryRunReport(r: CompactRun.Result): string {
  const lines = [`# Compaction dry run (${r.mode})`, ''];
  const reduces = r.tokensAfter < r.tokensBefore && r.mode !== 'none';
  lines.push(`- tokens before: ${tokens(r.tokensBefore)}`);
  lines.push(`- tokens after (estimated): ${tokens(r.tokensAfter)}`);
  lines.push(
    reduces
      ? `- saves: ${tokens(r.tokensBefore - r.tokensAfter)} tokens`
      : '- **would not reduce** the conversation: nothing would change',
  );
  if (r.cleared.length) {
    lines.push(
      '',
      '## Tool results that would be cleared (oldest first)',
      '',
      '| tool | id | tokens |',
      '|---|---|---:|',
    );
    for (const c of r.cleared) lines.push(`| ${c.tool} | ${c.toolUseId} | ${tokens(c.tokens)} |`);
  }
  if (r.summarisedMessages)
    lines.push(
      '',
      `${r.summarisedMessages} message(s) would be summarised; ${r.preservedUserMessages} of your messages kept verbatim.`,
    );
  if (r.reinjectedFiles.length)
    lines.push('', '## Files that would be read again', '', ...r.reinjectedFiles.map((f) => `- ${f}`));
  return lines.join('\n') + '\n';
}
