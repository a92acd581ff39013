// Number and path formatting shared by the views (pure).

const grouped = new Intl.NumberFormat('en-US');

/** `12408` → `12,408`. */
export function tokens(n: number): string {
  return grouped.format(Math.round(n));
}

/** A window size, short: `200000` → `200k`, `1000000` → `1M`, `128500` → `128.5k`. */
export function windowSize(n: number): string {
  if (n >= 1_000_000 && n % 100_000 === 0) return `${trim(n / 1_000_000)}M`;
  if (n >= 1000 && n % 100 === 0) return `${trim(n / 1000)}k`;
  return tokens(n);
}

function trim(x: number): string {
  return Number.isInteger(x) ? String(x) : x.toFixed(1).replace(/\.0$/, '');
}

/** The last path segment. */
export function basename(p: string): string {
  const parts = p.split(/[\\/]/).filter(Boolean);
  return parts.length ? parts[parts.length - 1] : p;
}

/** `p` relative to `base` when it lies under it, else `p` with `~` for the home folder. */
export function shortPath(p: string, base?: string, home?: string): string {
  if (base && (p === base || p.startsWith(base.endsWith('/') ? base : base + '/'))) {
    return p.slice(base.length).replace(/^\//, '') || '.';
  }
  if (home && p.startsWith(home + '/')) return '~' + p.slice(home.length);
  return p;
}
