#!/usr/bin/env node
// `mediahook-server`: every `mediahook` command, the service's taken from this package itself,
// so that `npx @mediahook/server serve` and a global install run without a lookup.
import { COMMANDS, main } from 'mediahook/internal';
import { serverCommands } from '../cli/commands.ts';

const commands = COMMANDS.map((entry) => serverCommands.find((own) => own.name === entry.name) ?? entry);
process.exitCode = await main(process.argv.slice(2), undefined, commands);
