// Images the user pastes or drops into the chat input (pure): which files are taken, the limits
// the server enforces too (`chat/send` `images`: PNG, JPEG, GIF or WebP, at most 5 MB each, at
// most 20 a message), and the conversion of a data: URL to what `chat/send` carries. The webview
// checks before it reads a file, so an oversized one is never loaded; the server checks again
// (the bytes' magic number too) and refuses the whole message with the reason.

/** An image of a message: `data` is base64 (absent when a resumed history kept only its size). */
export interface ChatImage {
  mediaType: string;
  data?: string;
  size?: number;
}

export const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
export const MAX_IMAGES = 20;

/** Why a file of `type` and `size` bytes cannot be attached after `count` others; null when it can. */
export function refuseImage(type: string, size: number, count: number): string | null {
  if (!IMAGE_TYPES.includes(type))
    return `${type || 'This file'} is not an image Claude reads (PNG, JPEG, GIF or WebP).`;
  if (size > MAX_IMAGE_BYTES)
    return `The image is ${(size / (1024 * 1024)).toFixed(1)} MB; Claude takes images of at most 5 MB.`;
  if (count >= MAX_IMAGES) return `A message holds at most ${MAX_IMAGES} images.`;
  return null;
}

/** `data:image/png;base64,AAAA` → `{ mediaType: 'image/png', data: 'AAAA' }`; null for anything else. */
export function fromDataUrl(url: string): ChatImage | null {
  const m = /^data:([a-z]+\/[a-z0-9.+-]+);base64,([A-Za-z0-9+/]*={0,2})$/i.exec(url);
  if (!m) return null;
  return { mediaType: m[1].toLowerCase(), data: m[2], size: Math.floor((m[2].length * 3) / 4) - padding(m[2]) };
}

function padding(b64: string): number {
  return b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0;
}

/** A data: URL to show an image with, or null when only its placeholder was kept. */
export function toDataUrl(i: ChatImage): string | null {
  return i.data ? `data:${i.mediaType};base64,${i.data}` : null;
}

/** `image/png · 35 KB`: how an image is named where it cannot be shown. */
export function describeImage(i: ChatImage): string {
  const kind = i.mediaType.replace(/^image\//, '').toUpperCase();
  return i.size === undefined ? `${kind} image` : `${kind} image · ${Math.max(1, Math.ceil(i.size / 1024))} KB`;
}
