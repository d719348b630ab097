/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import { CONTROL_PATTERN, ESCAPE_PATTERNS } from '../escapes.generated';
import { terminalText } from '../core/terminal';
import escapes from '../../../jupyter_xcsh/outputs/escapes.json';

/** The one definition of the escapes, which the server's `sanitize` reads. */
const DEFINITION = escapes as {
  escapes: string[];
  controls: string;
  examples: string[][];
};

describe('terminalText and the server share one definition of escapes', () => {
  it('uses the patterns of jupyter_xcsh/outputs/escapes.json (rebuild when this fails)', () => {
    expect([...ESCAPE_PATTERNS]).toEqual(DEFINITION.escapes);
    expect(CONTROL_PATTERN).toBe(DEFINITION.controls);
  });

  it('leaves of each shared example what the server leaves', () => {
    expect(DEFINITION.examples.length).toBeGreaterThan(0);
    for (const [text, expected] of DEFINITION.examples) {
      expect(terminalText(text)).toBe(expected);
    }
  });

  it('keeps the text after a sequence that never terminates', () => {
    expect(terminalText('a\x1b]0;title\nnext line')).toBe(
      'a]0;title\nnext line'
    );
  });

  it('still lets a carriage return overwrite its line', () => {
    expect(terminalText('\x1b[32m10%\r50%\x1b[0m\r100%\n')).toBe('100%\n');
  });
});
