#!/usr/bin/env node
// The `mediahook` command.
import { main } from '../cli/main.ts';

process.exitCode = await main(process.argv.slice(2));
