// End to end in a real VS Code (code-server) with our VSIX, the real server and the fake API,
// driven in chromium: what a user sees and clicks.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import test from 'node:test';
import * as H from './harness.mjs';

const why = H.missing();
const required = process.env.CI === 'true' || process.env.CLAUDE_CONTEXT_E2E === '1';

test(
  'VS Code: Context view, meter, a chat turn with a permission and an edit, reload',
  { timeout: 300_000, skip: !required && why ? why : false },
  async (t) => {
    /** The meter's figure for the open file at the start. */
    let previewFigure = 0;
    if (why) throw new Error(`end-to-end tests cannot run: ${why}`);
    const fake = await H.startFake();
    const ws = H.makeWorkspace();
    // A PreToolUse guard that refuses `rm`, in a folder its user trusts (Claude Code's record).
    fs.writeFileSync(
      path.join(ws, '.claude/hooks.sh'),
      'if grep -q \'"command":"rm \'; then echo "no rm in this project" >&2; exit 2; fi\n',
    );
    fs.writeFileSync(
      path.join(ws, '.claude/settings.json'),
      JSON.stringify({
        hooks: {
          PreToolUse: [
            { matcher: 'Bash', hooks: [{ type: 'command', command: 'sh "$CLAUDE_PROJECT_DIR/.claude/hooks.sh"' }] },
          ],
        },
      }),
    );
    const home = H.tmpdir('cc-e2e-home-');
    fs.writeFileSync(
      path.join(home, '.claude.json'),
      JSON.stringify({ projects: { [ws]: { hasTrustDialogAccepted: true } } }),
    );
    const cs = await H.startCodeServer({ folder: ws, home, env: { ANTHROPIC_BASE_URL: fake.baseUrl } });
    const browser = await H.launchBrowser();
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    let failed = false;
    const step = async (name, fn) =>
      t.test(name, async () => {
        try {
          await fn();
        } catch (e) {
          failed = true;
          await H.screenshot(page, `failure-${name.replace(/\W+/g, '-')}`).catch(() => {});
          throw e;
        }
      });
    try {
      await page.goto(cs.url);
      await page.locator('.monaco-workbench').waitFor({ timeout: 90_000 });
      await H.openFile(page, 'src/cart.ts');

      await step('the meter shows the tokens of the next request', async () => {
        const meter = page.locator('.statusbar-item', { hasText: '/ 1M' });
        await meter.first().waitFor({ timeout: 30_000 });
        const text = (await meter.first().innerText()).trim();
        assert.match(text, /^\S*\s*[\d,]+ \/ 1M$/, text);
        previewFigure = Number(/([\d,]+) \//.exec(text)[1].replace(/,/g, ''));
        const n = Number(text.replace(/^.*?([\d,]+) \/.*$/, '$1').replace(/,/g, ''));
        assert.ok(n > 500 && n < 20_000, `a plausible figure: ${text}`);
      });

      await step('the Context view shows the rule of the open file and why', async () => {
        await page.locator('.activitybar [aria-label^="Claude Context"]').first().click();
        await H.widenSideBar(page, 620);
        const rule = page.locator('[role=treeitem][aria-label*="typescript.md"][aria-label*="attached"]');
        await rule.first().waitFor({ timeout: 30_000 });
        const label = await rule.first().getAttribute('aria-label');
        assert.match(label, /src\/\*\*\/\*\.ts/);
        assert.match(label, /cart\.ts/);
        const inactive = page.locator('[role=treeitem][aria-label*="python.md"][aria-label*="inactive"]');
        await inactive.first().waitFor({ timeout: 10_000 });
        await H.screenshot(page, 'context-view', process.env.UPDATE_SCREENSHOTS ? H.screenshotsDir : H.outputDir);
      });

      await step('a block of the request opens its exact text, read-only', async () => {
        // The tree may refresh under the pointer (a git snapshot landing): retry until expanded.
        const block = page.locator('[role=treeitem][aria-label^="Instructions"]').first();
        await H.waitFor(
          async () => {
            if (await block.isVisible()) return true;
            const request = page.locator('[role=treeitem][aria-label^="Request"][aria-expanded=false]').first();
            if (await request.isVisible()) await request.click();
            await page.waitForTimeout(300);
            return false;
          },
          { what: 'the Request node expanded', timeout: 20_000 },
        );
        await block.click();
        await page.locator('.tab', { hasText: 'Instructions' }).first().waitFor({ timeout: 15_000 });
        await H.waitFor(
          async () =>
            (await page.locator('.editor-instance .view-lines').first().innerText())
              .replace(/\u00a0/g, ' ')
              .includes('Use pnpm. Run the tests'),
          { what: 'the block text' },
        );
        // Read-only: typing changes nothing.
        await page.locator('.editor-instance .view-lines').first().click();
        await page.keyboard.type('XYZ');
        assert.ok(!(await page.locator('.editor-instance .view-lines').first().innerText()).includes('XYZ'));
        await page.keyboard.press('Control+W');
        await page.locator('.tab', { hasText: 'cart.ts' }).first().click();
      });

      await step('a chat turn streams, asks permission, edits the open file unsaved, and ends', async () => {
        const file = path.join(ws, 'src/cart.ts');
        const answer = 'I will change the cart constant from 1 to 2, as asked. '.repeat(4);
        await fake.queue([
          {
            text: answer,
            piece: 4,
            paceMs: 15,
            toolUses: [
              {
                id: 'toolu_e2e_1',
                name: 'Edit',
                input: { file_path: file, old_string: 'export const cart = 1;', new_string: 'export const cart = 2;' },
              },
            ],
          },
          { text: 'Done: `cart` is now **2** (unsaved in your editor).' },
        ]);
        await H.runCommand(page, 'Claude Context: Open Chat');
        const frame = await H.chatFrame(page);
        // An @ mention picked from the list: the file's text goes with the message.
        const promptBox = frame.locator('[data-testid=prompt]');
        await promptBox.click();
        await promptBox.pressSequentially('Set @car');
        await frame
          .locator('[data-testid=mention-item]', { hasText: 'src/cart.ts' })
          .first()
          .waitFor({ timeout: 15_000 });
        await promptBox.press('Enter');
        await promptBox.pressSequentially('to 2');
        assert.equal(await promptBox.inputValue(), 'Set @src/cart.ts to 2');
        await frame.locator('[data-testid=send]').click();
        await frame.locator('[data-testid=message-user]', { hasText: 'Set @src/cart.ts to 2' }).waitFor();
        // Streaming: the answer grows in several steps before it is whole.
        const lengths = new Set();
        const assistant = frame.locator('[data-testid=message-assistant]').first();
        await H.waitFor(
          async () => {
            const txt = (await assistant.innerText().catch(() => '')) ?? '';
            lengths.add(txt.length);
            return txt.includes(
              'as asked. I will change the cart constant from 1 to 2, as asked. I will change the cart constant from 1 to 2, as asked. I will',
            );
          },
          { what: 'the streamed answer', timeout: 30_000 },
        );
        assert.ok(lengths.size >= 3, `the answer appeared in steps (${[...lengths].join(', ')})`);
        const card = frame.locator('[data-testid=permission][data-state=open]');
        await card.waitFor({ timeout: 30_000 });
        assert.match(await card.innerText(), /cart\.ts/);
        assert.match(await frame.locator('[data-testid=permission-allow-session]').innerText(), /session|workspace/i);
        await H.screenshot(page, 'chat-permission', process.env.UPDATE_SCREENSHOTS ? H.screenshotsDir : H.outputDir);
        await frame.locator('[data-testid=permission-allow-once]').click();
        await frame.locator('[data-testid=message-assistant]', { hasText: 'is now 2' }).waitFor({ timeout: 30_000 });
        await frame.locator('[data-testid=stop]').waitFor({ state: 'hidden', timeout: 15_000 });
        const tool = frame.locator('[data-testid=tool-call][data-tool=Edit]');
        assert.equal(await tool.count(), 1);
        // The edit is in the editor, unsaved; the disk is untouched.
        await H.waitFor(
          async () =>
            (await page.locator('.editor-instance .view-lines').first().innerText())
              .replace(/\u00a0/g, ' ')
              .includes('cart = 2'),
          { what: 'the editor showing the edit' },
        );
        await page.locator('.tab.dirty', { hasText: 'cart.ts' }).first().waitFor({ timeout: 10_000 });
        assert.equal(fs.readFileSync(file, 'utf8'), 'export const cart = 1;\n');
        // The request carried the rule the open file activates.
        const reqs = await fake.requests();
        assert.ok(reqs.length >= 2, `two requests (${reqs.length})`);
        assert.match(JSON.stringify(reqs[0].body), /TypeScript: strict mode/);
        assert.match(
          JSON.stringify(reqs[0].body.messages.at(-1)),
          /export const cart = 1;/,
          'the mentioned file was sent',
        );
        await H.screenshot(page, 'chat', process.env.UPDATE_SCREENSHOTS ? H.screenshotsDir : H.outputDir);
      });

      await step('reloading the webview keeps the conversation', async () => {
        const before = await H.chatFrame(page);
        const users = await before.locator('[data-testid=message-user]').allInnerTexts();
        const answers = await before.locator('[data-testid=message-assistant]').allInnerTexts();
        await H.runCommand(page, 'Developer: Reload Webviews');
        await page.waitForTimeout(1500);
        const after = await H.chatFrame(page);
        await after.locator('[data-testid=message-assistant]', { hasText: 'is now 2' }).waitFor({ timeout: 30_000 });
        assert.deepEqual(await after.locator('[data-testid=message-user]').allInnerTexts(), users);
        assert.deepEqual(await after.locator('[data-testid=message-assistant]').allInnerTexts(), answers);
        assert.equal(await after.locator('[data-testid=permission][data-state=allow]').count(), 1);
      });

      await step('reopening VS Code resumes the conversation from the transcript', async () => {
        await page.reload();
        await page.locator('.monaco-workbench').waitFor({ timeout: 90_000 });
        await page.locator('.statusbar-item', { hasText: '/ 1M' }).first().waitFor({ timeout: 60_000 });
        await H.runCommand(page, 'Claude Context: Open Chat');
        const frame = await H.chatFrame(page);
        await frame.locator('[data-testid=message-assistant]', { hasText: 'is now 2' }).waitFor({ timeout: 30_000 });
        assert.deepEqual(await frame.locator('[data-testid=message-user]').allInnerTexts(), [
          'You\nSet @src/cart.ts to 2',
        ]);
        assert.equal(await frame.locator('[data-testid=tool-call][data-tool=Edit]').count(), 1);
        // The session goes on: a second turn in the resumed session.
        await fake.queue([{ text: 'Still here.' }]);
        await frame.locator('[data-testid=prompt]').fill('Are you there?');
        await frame.locator('[data-testid=prompt]').press('Enter');
        await frame.locator('[data-testid=message-assistant]', { hasText: 'Still here.' }).waitFor({ timeout: 30_000 });
        const reqs = await fake.requests();
        assert.match(
          JSON.stringify(reqs.at(-1).body.messages),
          /Set @src\/cart.ts to 2/,
          'the resumed session sent the earlier history',
        );
      });

      await step('a pasted image is attached above the input, removable, and sent with the message', async () => {
        const frame = await H.chatFrame(page);
        const promptBox = frame.locator('[data-testid=prompt]');
        const tray = frame.locator('[data-testid=image-tray] [data-testid=image-chip]');
        // What the clipboard holds after copying an image (a screenshot, an image in a browser).
        const paste = (name, type) =>
          promptBox.evaluate(
            (el, [b64, name, type]) => {
              const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
              const dt = new DataTransfer();
              dt.items.add(new File([bytes], name, { type }));
              el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
            },
            [H.PNG_1X1, name, type],
          );
        await paste('one.png', 'image/png');
        await paste('two.png', 'image/png');
        await H.waitFor(async () => (await tray.count()) === 2, { what: 'two thumbnails above the input' });
        await H.screenshot(page, 'chat-pasted-images');
        await frame.locator('[data-testid=image-tray] [data-testid=image-remove]').first().click();
        assert.equal(await tray.count(), 1, 'one removed');
        await paste('drawing.svg', 'image/svg+xml');
        await frame.locator('[data-testid=image-note]', { hasText: 'PNG, JPEG, GIF or WebP' }).waitFor();
        assert.equal(await tray.count(), 1, 'the SVG is not attached');
        await fake.queue([{ text: 'A single white pixel.' }]);
        await promptBox.fill('What is in this image?');
        await promptBox.press('Enter');
        await frame.locator('[data-testid=message-assistant]', { hasText: 'A single white pixel.' }).waitFor({
          timeout: 30_000,
        });
        const bubble = frame.locator('[data-testid=message-user]').last();
        assert.equal(await bubble.locator('[data-testid=image-thumb]').count(), 1, 'shown in the bubble');
        assert.equal(await tray.count(), 0, 'the tray is empty after sending');
        const reqs = await fake.requests();
        const content = reqs.at(-1).body.messages.at(-1).content;
        const at = content.findIndex((b) => b.type === 'image');
        assert.deepEqual(content[at], {
          type: 'image',
          source: { type: 'base64', media_type: 'image/png', data: H.PNG_1X1 },
        });
        assert.equal(content[at + 1].text, 'What is in this image?', 'the image comes right before the text');
      });

      await step('the scroll follows the end only while the reader is at the end', async () => {
        const frame = await H.chatFrame(page);
        const lines = Array.from({ length: 120 }, (_, i) => `Line ${i} of a long answer.`).join('\n\n');
        await fake.queue([{ text: lines, piece: 24, paceMs: 25 }]);
        await frame.locator('[data-testid=prompt]').fill('Write a long answer');
        await frame.locator('[data-testid=prompt]').press('Enter');
        const log = frame.locator('[data-testid=log]');
        await frame.locator('[data-testid=message-assistant]', { hasText: 'Line 30 of' }).waitFor({ timeout: 30_000 });
        const atEnd = () => log.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight < 30);
        assert.ok(await atEnd(), 'following the end while at the end');
        await log.evaluate((el) => (el.scrollTop = 0));
        await frame.locator('[data-testid=message-assistant]', { hasText: 'Line 70 of' }).waitFor({ timeout: 30_000 });
        assert.equal(await log.evaluate((el) => el.scrollTop), 0, 'scrolled up: the view stays where the reader is');
        await log.evaluate((el) => (el.scrollTop = el.scrollHeight));
        await frame.locator('[data-testid=message-assistant]', { hasText: 'Line 119 of' }).waitFor({ timeout: 30_000 });
        await page.waitForTimeout(200);
        assert.ok(await atEnd(), 'back at the end: following again');
        await frame.locator('[data-testid=stop]').waitFor({ state: 'hidden', timeout: 30_000 });
      });

      await step('with the chat hidden, a permission comes as a notification with the same choices', async () => {
        await fake.queue([
          {
            text: 'Listing the files.',
            paceMs: 100,
            toolUses: [{ id: 'toolu_e2e_ls', name: 'Bash', input: { command: 'ls src' } }],
          },
          { text: 'Listed them.' },
        ]);
        const frame = await H.chatFrame(page);
        await frame.locator('[data-testid=prompt]').fill('List src');
        await frame.locator('[data-testid=prompt]').press('Enter');
        await page.locator('.activitybar [aria-label^="Explorer"]').first().click();
        const toast = page.locator('.notification-toast', { hasText: 'Claude wants to run: Bash: ls src' });
        await toast.waitFor({ timeout: 30_000 });
        assert.ok(
          await toast.locator('a.monaco-button, .monaco-button', { hasText: 'this exact command' }).count(),
          'the session choice carries the server scope',
        );
        await toast.locator('.monaco-button', { hasText: 'Allow once' }).first().click();
        await page.locator('.activitybar [aria-label^="Claude Context"]').first().click();
        const again = await H.chatFrame(page);
        await again
          .locator('[data-testid=message-assistant]', { hasText: 'Listed them.' })
          .waitFor({ timeout: 30_000 });
        const result = again.locator('[data-testid=tool-call][data-tool=Bash] [data-testid=tool-result]');
        assert.match(await result.textContent(), /cart\.ts/);
        // (The Edit's card of the first turn is not in the history resumed after the reload.)
        const cards = again.locator('[data-testid=permission][data-state=allow]');
        assert.equal(await cards.count(), 1);
        assert.match(await cards.first().innerText(), /Bash: ls src/);
      });

      await step('the mode picker switches the permission mode: plan refuses an edit without asking', async () => {
        const frame = await H.chatFrame(page);
        const picker = frame.locator('[data-testid=mode]');
        assert.equal(await picker.inputValue(), 'default');
        await picker.selectOption('plan');
        await frame.locator('body[data-mode=plan]').waitFor({ timeout: 15_000 });
        const target = path.join(ws, 'src', 'cart.ts');
        await fake.queue([
          {
            text: 'Planning.',
            toolUses: [
              {
                id: 'toolu_e2e_plan',
                name: 'Edit',
                input: { file_path: target, old_string: 'cart', new_string: 'basket' },
              },
            ],
          },
          { text: 'Here is the plan.' },
        ]);
        await frame.locator('[data-testid=prompt]').fill('Plan the rename');
        await frame.locator('[data-testid=prompt]').press('Enter');
        await frame
          .locator('[data-testid=message-assistant]', { hasText: 'Here is the plan.' })
          .waitFor({ timeout: 30_000 });
        const result = frame.locator('[data-testid=tool-call][data-tool=Edit] [data-testid=tool-result]').last();
        assert.equal(await result.textContent(), `Cannot write to ${target} while in plan mode.`);
        assert.equal(await frame.locator('[data-testid=permission][data-state=open]').count(), 0, 'nothing asked');
        await picker.selectOption('default');
        await frame.locator('body[data-mode=default]').waitFor({ timeout: 15_000 });
      });

      await step(
        "an edit of several lines opens VS Code's diff editor: Accept in its title applies it unsaved, Reject changes nothing",
        async () => {
          const target = path.join(ws, 'src', 'list.ts');
          await H.openFile(page, 'src/list.ts');
          await fake.queue([
            {
              text: 'Numbering.',
              toolUses: [
                {
                  id: 'toolu_e2e_diff1',
                  name: 'Edit',
                  input: { file_path: target, old_string: 'two\nthree\nfour\nfive', new_string: '2\n3\n4\n5' },
                },
              ],
            },
            { text: 'Numbered them.' },
          ]);
          let frame = await H.chatFrame(page);
          await frame.locator('[data-testid=prompt]').fill('Number the list');
          await frame.locator('[data-testid=prompt]').press('Enter');
          const diffTab = page.locator('.tab', { hasText: "Claude's edit" });
          await diffTab.first().waitFor({ timeout: 30_000 });
          // The file as it is and as the edit leaves it (side by side, or inline in a narrow editor).
          const diff = page.locator('.monaco-diff-editor').first();
          await H.waitFor(async () => /three[\s\S]*\b4\b/.test((await diff.innerText()).replace(/\u00a0/g, ' ')), {
            what: 'the diff of the two texts',
          });
          const accept = page.locator('.editor-actions .action-label[aria-label^="Accept Claude\'s Edit"]');
          await accept.first().waitFor({ timeout: 15_000 });
          await H.screenshot(page, 'diff-review', process.env.UPDATE_SCREENSHOTS ? H.screenshotsDir : H.outputDir);
          await accept.first().click();
          frame = await H.chatFrame(page);
          await frame
            .locator('[data-testid=message-assistant]', { hasText: 'Numbered them.' })
            .waitFor({ timeout: 30_000 });
          await diffTab.first().waitFor({ state: 'detached', timeout: 15_000 });
          assert.equal(
            await frame.locator('[data-testid=permission][data-state=allow]', { hasText: 'list.ts' }).count(),
            1,
            'the card says allowed',
          );
          // In the editor, unsaved and undoable; the disk is untouched.
          await page.locator('.tab', { hasText: 'list.ts' }).first().click();
          await page.locator('.tab.dirty', { hasText: 'list.ts' }).first().waitFor({ timeout: 10_000 });
          await H.waitFor(
            async () =>
              (await page.locator('.editor-instance .view-lines').first().innerText())
                .replace(/\u00a0/g, ' ')
                .includes('5'),
            { what: 'the edit in the editor' },
          );
          assert.equal(fs.readFileSync(target, 'utf8'), 'one\ntwo\nthree\nfour\nfive\n');
          // Rejected from the diff editor: the turn stops, the text stays.
          await fake.queue([
            {
              text: 'Lettering.',
              toolUses: [
                {
                  id: 'toolu_e2e_diff2',
                  name: 'Edit',
                  input: { file_path: target, old_string: '2\n3\n4\n5', new_string: 'b\nc\nd\ne' },
                },
              ],
            },
          ]);
          await frame.locator('[data-testid=prompt]').fill('Letter the list');
          await frame.locator('[data-testid=prompt]').press('Enter');
          await diffTab.first().waitFor({ timeout: 30_000 });
          const reject = page.locator('.editor-actions .action-label[aria-label^="Reject Claude\'s Edit"]');
          await reject.first().waitFor({ timeout: 15_000 });
          await reject.first().click();
          await diffTab.first().waitFor({ state: 'detached', timeout: 15_000 });
          frame = await H.chatFrame(page);
          await frame
            .locator('[data-testid=permission][data-state=deny]', { hasText: 'list.ts' })
            .first()
            .waitFor({ timeout: 15_000 });
          await frame.locator('[data-testid=stop]').waitFor({ state: 'hidden', timeout: 30_000 });
          await page.locator('.tab', { hasText: 'list.ts' }).first().click();
          const lines = (await page.locator('.editor-instance .view-lines').first().innerText())
            .replace(/\u00a0/g, ' ')
            .split('\n')
            .map((l) => l.trim());
          assert.deepEqual(
            lines.filter(Boolean),
            ['one', '2', '3', '4', '5'],
            'the rejected edit is not applied; the accepted one stays',
          );
        },
      );

      await step('settings apply live: a smaller window shows on the meter', async () => {
        await H.runCommand(page, 'Preferences: Open User Settings');
        await page.waitForTimeout(1000);
        await page.keyboard.type('claudeContext.window');
        const input = page.locator('[data-key="claudeContext.window"] input');
        await input.waitFor({ timeout: 15_000 });
        await input.fill('100000');
        await input.press('Tab');
        const file = path.join(cs.userData, 'User', 'settings.json');
        await H.waitFor(() => /"claudeContext\.window":\s*100000/.test(fs.readFileSync(file, 'utf8')), {
          what: 'VS Code writing the setting',
        });
        await page.keyboard.press('Control+W');
        // Back in the file: the meter shows the new preview (not the chat's figures).
        await page.locator('.tab', { hasText: 'cart.ts' }).first().click();
        await page.locator('.editor-instance .view-lines').first().click();
        await page.locator('.statusbar-item', { hasText: '/ 100k' }).first().waitFor({ timeout: 30_000 });
        const meter = (await page.locator('.statusbar-item', { hasText: '/ 100k' }).first().innerText()).trim();
        assert.match(meter, /^\S*\s*[\d,]+ \/ 100k$/, meter);
        // The file's preview as at the start (give or take the edited buffer), not the chat's figures.
        const figure = Number(/([\d,]+) \//.exec(meter)[1].replace(/,/g, ''));
        assert.ok(
          Math.abs(figure - previewFigure) < previewFigure * 0.1,
          `${meter} against ${previewFigure} at the start`,
        );
      });

      await step('the server crashes: the status item says so, it restarts, the chat resumes', async () => {
        const ps = (await import('node:child_process')).execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
        const pids = ps
          .split('\n')
          .filter((l) => l.includes(path.join(cs.home, 'extensions')) && l.includes('claude-context lsp'))
          .map((l) => Number(l.trim().split(/\s+/)[0]));
        assert.equal(pids.length, 1, `one server of this VS Code (${pids})`);
        // Record what the status bar says meanwhile (the restart is quick).
        await page.evaluate(() => {
          const seen = (window.__statusSeen = []);
          new MutationObserver(() => {
            for (const el of document.querySelectorAll('.statusbar-item'))
              if (/Claude:/.test(el.textContent)) seen.push(el.textContent.trim());
          }).observe(document.querySelector('.part.statusbar'), {
            subtree: true,
            childList: true,
            characterData: true,
          });
        });
        process.kill(pids[0], 'SIGKILL');
        const frame = await H.chatFrame(page);
        await frame
          .locator('[data-testid=notice]', { hasText: 'the session was resumed' })
          .waitFor({ timeout: 30_000 });
        await page.locator('.statusbar-item', { hasText: '/ 100k' }).first().waitFor({ timeout: 30_000 });
        assert.ok((await frame.locator('[data-testid=message-user]').count()) >= 4, 'the conversation is still there');
        const seen = await page.evaluate(() => window.__statusSeen);
        assert.ok(
          seen.some((t) => /Claude: restarting/.test(t)),
          `the status item said so: ${JSON.stringify(seen)}`,
        );
        await fake.queue([{ text: 'After the crash.' }]);
        await frame.locator('[data-testid=prompt]').fill('Still fine?');
        await frame.locator('[data-testid=prompt]').press('Enter');
        await frame
          .locator('[data-testid=message-assistant]', { hasText: 'After the crash.' })
          .waitFor({ timeout: 30_000 });
      });

      await step("a hook's denial shows in the chat like a tool result", async () => {
        await fake.queue([
          { toolUses: [{ id: 'toolu_e2e_rm', name: 'Bash', input: { command: 'rm -rf build' } }] },
          { text: 'I left the build alone.' },
        ]);
        const frame = await H.chatFrame(page);
        await frame.locator('[data-testid=prompt]').fill('Clean the build');
        await frame.locator('[data-testid=prompt]').press('Enter');
        await frame
          .locator('[data-testid=message-assistant]', { hasText: 'I left the build alone.' })
          .waitFor({ timeout: 30_000 });
        const hook = frame.locator('[data-testid=hook][data-event=PreToolUse][data-outcome=denied]');
        await hook.waitFor({ timeout: 10_000 });
        assert.match(await hook.innerText(), /PreToolUse hook: denied/);
        assert.match(await hook.locator('[data-testid=hook-text]').textContent(), /no rm in this project/);
        // Nobody was asked: the guard answered.
        assert.equal(await page.locator('.notification-toast', { hasText: 'rm -rf build' }).count(), 0);
        await H.screenshot(page, 'chat-hook', process.env.UPDATE_SCREENSHOTS ? H.screenshotsDir : H.outputDir);
      });
    } finally {
      if (failed || process.env.E2E_LOGS) {
        fs.mkdirSync(H.outputDir, { recursive: true });
        fs.writeFileSync(path.join(H.outputDir, 'code-server.log'), cs.log());
        fs.writeFileSync(path.join(H.outputDir, 'extension-logs.txt'), cs.extensionLogs());
      }
      await browser.close();
      await cs.stop();
      fake.stop();
    }
  },
);
