/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * Generate the lab's copy of the terminal escape patterns from
 * jupyter_xcsh/outputs/escapes.json, the one definition the server's
 * `sanitize` reads too: `npm run build:escapes` writes
 * labextension/src/escapes.generated.ts (run by `npm run build:types`).
 */

import { readFileSync, writeFileSync } from 'node:fs';

const SOURCE = 'jupyter_xcsh/outputs/escapes.json';
const OUTPUT = 'labextension/src/escapes.generated.ts';

const data = JSON.parse(readFileSync(SOURCE, 'utf8'));
const escapes = data.escapes
  .map(
    (pattern, k) => `  // ${data.escapeKinds[k]}\n  ${JSON.stringify(pattern)}`
  )
  .join(',\n');
const code =
  '/**\n' +
  ` * The terminal escape patterns, generated from ${SOURCE}\n` +
  ' * by scripts/build-escapes.mjs. Do not edit: change the JSON and rebuild.\n' +
  ' */\n\n' +
  '/** Escape sequences, one alternative each (join with `|`). */\n' +
  `export const ESCAPE_PATTERNS: readonly string[] = [\n${escapes}\n];\n\n` +
  `/** ${data.controlsKind}. */\n` +
  `export const CONTROL_PATTERN = ${JSON.stringify(data.controls)};\n`;
writeFileSync(OUTPUT, code);
console.log(`${SOURCE} → ${OUTPUT}`);
