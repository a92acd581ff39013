// Images pasted or dropped into the chat: what is taken (type, size, count, checked before the
// file is read), the data: URL a webview reads turned into `chat/send`'s image, and the user's
// message carrying them (sent, failed and retried, and from a resumed history).
import assert from 'node:assert/strict';
import test from 'node:test';
import { describeImage, fromDataUrl, MAX_IMAGE_BYTES, MAX_IMAGES, refuseImage, toDataUrl } from '../../src/core/images';
import { initialState, reduce, type ChatItem } from '../../src/core/chatModel';

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

test('only PNG, JPEG, GIF and WebP of at most 5 MB, at most 20 a message, are attached', () => {
  assert.equal(refuseImage('image/png', 1000, 0), null);
  assert.equal(refuseImage('image/webp', MAX_IMAGE_BYTES, MAX_IMAGES - 1), null);
  assert.match(refuseImage('image/svg+xml', 10, 0)!, /PNG, JPEG, GIF or WebP/);
  assert.match(refuseImage('application/pdf', 10, 0)!, /not an image/);
  assert.match(refuseImage('image/png', MAX_IMAGE_BYTES + 1, 0)!, /at most 5 MB/);
  assert.match(refuseImage('image/jpeg', 10, MAX_IMAGES)!, /at most 20 images/);
});

test('a data: URL becomes the image chat/send carries, and back', () => {
  const img = fromDataUrl(`data:image/png;base64,${PNG}`)!;
  assert.deepEqual(img, { mediaType: 'image/png', data: PNG, size: 70 });
  assert.equal(toDataUrl(img), `data:image/png;base64,${PNG}`);
  assert.equal(fromDataUrl('data:text/plain,hello'), null);
  assert.equal(fromDataUrl('https://x.dev/a.png'), null);
  assert.equal(describeImage({ mediaType: 'image/gif', size: 43 }), 'GIF image · 1 KB');
  assert.equal(toDataUrl({ mediaType: 'image/png', size: 9 }), null, 'a placeholder has nothing to show');
});

test('a message carries its images; a refused one keeps them for Retry; a resumed history lists them', () => {
  const images = [{ mediaType: 'image/png', data: PNG, size: 70 }];
  let s = reduce(initialState(), { type: 'reset', sessionId: 's' });
  s = reduce(s, { type: 'userSend', text: 'what is this?', mentions: [], images });
  const user = s.items[0] as Extract<ChatItem, { kind: 'user' }>;
  assert.deepEqual(user.images, images);
  s = reduce(s, {
    type: 'sendFailed',
    message: 'images[0]: the image is declared image/png but its bytes are image/jpeg',
    retryText: 'what is this?',
    retryImages: images,
  });
  const err = s.items[1] as Extract<ChatItem, { kind: 'error' }>;
  assert.equal(err.retryText, 'what is this?');
  assert.deepEqual(err.retryImages, images);
  assert.equal(s.running, null);
  // A message without images has no `images` key (a snapshot's JSON equals the state).
  s = reduce(s, { type: 'userSend', text: 'plain', mentions: [] });
  assert.equal('images' in s.items[2], false);

  const h = reduce(initialState(), {
    type: 'history',
    sessionId: 's',
    warnings: [],
    messages: [
      { role: 'user', text: '', images: [{ mediaType: 'image/png', size: 70 }] },
      { role: 'assistant', text: 'A pixel.' },
    ],
  });
  assert.deepEqual(
    h.items.map((i) => i.kind),
    ['user', 'assistant'],
    'an image-only message is shown',
  );
  assert.deepEqual((h.items[0] as Extract<ChatItem, { kind: 'user' }>).images, [{ mediaType: 'image/png', size: 70 }]);
});
