// Entry point: activates the Ctx, registers the commands, starts the server.

import * as vscode from 'vscode';
import { Ctx } from './ctx';
import { COMMANDS } from './commands';

let ctx: Ctx | undefined;

export interface Api {
  ctx: Ctx;
}

export function activate(ext: vscode.ExtensionContext): Api {
  ctx = new Ctx(ext);
  ext.subscriptions.push(ctx);
  for (const [id, factory] of Object.entries(COMMANDS)) {
    ext.subscriptions.push(vscode.commands.registerCommand(id, factory(ctx)));
  }
  // Start without blocking activation: the meter says "starting" meanwhile.
  void ctx.ensureStarted();
  return { ctx };
}

export async function deactivate(): Promise<void> {
  await ctx?.stop();
}
