// The diff review's proposed text: an Edit applied as the server applies it, a Write's content,
// small edits and edits that cannot apply left to the card.
import assert from 'node:assert/strict';
import test from 'node:test';
import { editTarget, proposedText } from '../../src/core/proposal';

const FIVE = 'one\ntwo\nthree\nfour\nfive\n';

test('an Edit of several lines gives the text the server would write (first occurrence, or all)', () => {
  const ask = {
    tool: 'Edit',
    input: { file_path: '/w/a.ts', old_string: 'two\nthree\nfour\nfive', new_string: '2\n3\n4\n5' },
  };
  assert.equal(editTarget(ask), '/w/a.ts');
  assert.equal(proposedText(ask, FIVE, 4), 'one\n2\n3\n4\n5\n');
  const twice = 'x\ny\nz\nw\n--\nx\ny\nz\nw\n';
  const rep = { tool: 'Edit', input: { file_path: '/w/b', old_string: 'x\ny\nz\nw', new_string: 'X\nY\nZ\nW' } };
  assert.equal(proposedText(rep, twice, 4), 'X\nY\nZ\nW\n--\nx\ny\nz\nw\n');
  assert.equal(
    proposedText({ ...rep, input: { ...rep.input, replace_all: true } }, twice, 4),
    'X\nY\nZ\nW\n--\nX\nY\nZ\nW\n',
  );
});

test('a small edit, a missing old_string, a missing file and other tools are left to the card', () => {
  assert.equal(
    proposedText({ tool: 'Edit', input: { file_path: '/w/a', old_string: 'one', new_string: '1' } }, FIVE, 4),
    undefined,
  );
  assert.equal(
    proposedText(
      { tool: 'Edit', input: { file_path: '/w/a', old_string: 'six\n7\n8\n9', new_string: 'a\nb\nc\nd' } },
      FIVE,
      4,
    ),
    undefined,
  );
  assert.equal(
    proposedText(
      { tool: 'Edit', input: { file_path: '/w/a', old_string: 'a\nb\nc\nd', new_string: 'x' } },
      undefined,
      4,
    ),
    undefined,
  );
  assert.equal(proposedText({ tool: 'Bash', input: { command: 'ls' } }, FIVE, 0), undefined);
  assert.equal(editTarget({ tool: 'Bash', input: { file_path: '/w/a' } }), undefined);
});

test('a Write of a new file or over a long one is reviewed; a short new file is not', () => {
  assert.equal(
    proposedText({ tool: 'Write', input: { file_path: '/w/n', content: '1\n2\n3\n4\n' } }, undefined, 4),
    '1\n2\n3\n4\n',
  );
  assert.equal(proposedText({ tool: 'Write', input: { file_path: '/w/a', content: 'x\n' } }, FIVE, 4), 'x\n');
  assert.equal(proposedText({ tool: 'Write', input: { file_path: '/w/n', content: 'x\n' } }, undefined, 4), undefined);
});
