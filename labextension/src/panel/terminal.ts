/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * Escape sequences of terminal output: CSI (colours, cursor moves), OSC
 * (titles, links), DCS/SOS/PM/APC strings, and the two-byte escapes.
 */
const ESCAPES = new RegExp(
  [
    '\\x1b\\[[0-?]*[ -/]*[@-~]',
    '\\x1b\\][^\\x07\\x1b]*(?:\\x07|\\x1b\\\\)?',
    '\\x1b[PX^_][^\\x1b]*(?:\\x1b\\\\)?',
    '\\x1b[@-Z\\\\-_]?',
    '\\x9b[0-?]*[ -/]*[@-~]'
  ].join('|'),
  'g'
);

/**
 * Control characters other than tab and newline (C0, DEL and C1).
 */
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

/**
 * Terminal output as a person would read it: escape sequences removed, a
 * carriage return overwriting its line (progress bars show their last
 * state), other control characters dropped.
 *
 * @param text - Raw output of a kernel (a traceback is full of colours).
 * @returns Plain text.
 */
export function terminalText(text: string): string {
  return text
    .replace(ESCAPES, '')
    .replace(/\r+\n/g, '\n')
    .split('\n')
    .map(line => {
      const cut = line.lastIndexOf('\r');
      return cut === -1 ? line : line.slice(cut + 1);
    })
    .join('\n')
    .replace(CONTROLS, '');
}
