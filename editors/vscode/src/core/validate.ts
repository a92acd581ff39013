// Checks what the server sends against its own schemas (`schemas/`, embedded in generated.ts).
// A message that does not fit is logged and dropped, never thrown into the UI.

import Ajv2020 from 'ajv/dist/2020';
import type { ValidateFunction } from 'ajv';

const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: false });
const cache = new Map<object, ValidateFunction>();

export type Checked<T> = { ok: true; value: T } | { ok: false; error: string };

/** Validates `value` against `schema`; the error names the first failing path. */
export function check<T>(schema: object, value: unknown): Checked<T> {
  let fn = cache.get(schema);
  if (!fn) {
    fn = ajv.compile(schema);
    cache.set(schema, fn);
  }
  if (fn(value)) return { ok: true, value: value as T };
  const e = fn.errors?.[0];
  return { ok: false, error: e ? `${e.instancePath || '(root)'} ${e.message ?? 'is invalid'}` : 'invalid' };
}

/** A short excerpt of a JSON value for a log line. */
export function excerpt(value: unknown, max = 300): string {
  let s: string;
  try {
    s = JSON.stringify(value);
  } catch {
    s = String(value);
  }
  return s.length > max ? s.slice(0, max) + '…' : s;
}
