/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * How much of each part of a call the panel shows before it is expanded.
 */
export namespace Collapsed {
  /** Lines of a notebook cell's source. */
  export const NOTEBOOK_SOURCE_LINES = 6;
  /** Lines of each changed cell's source shown in a collapsed batch. */
  export const BATCH_SOURCE_LINES = 3;
  /** Lines of a python cell's code. */
  export const PYTHON_CODE_LINES = 12;
  /** Lines of a python cell's output tail. */
  export const OUTPUT_LINES = 10;
  /** Lines of the error of a notebook call. */
  export const ERROR_LINES = 10;
  /**
   * Lines of the result text of a failed python call: its end says what
   * went wrong (the cells' outputs are shown above it already).
   */
  export const RESULT_LINES = 3;
  /** Status events of a python cell (the latest ones). */
  export const STATUS_EVENTS = 3;
  /** Levels of a JSON tree. */
  export const JSON_DEPTH = 2;
  /** Items of each JSON object or array. */
  export const JSON_ITEMS = 5;
}

/**
 * How much the panel shows once expanded: enough to read, bounded so that a
 * huge payload cannot freeze the lab.
 */
export namespace Expanded {
  /** Lines of any text block. */
  export const LINES = 2000;
  /** Levels of a JSON tree. */
  export const JSON_DEPTH = 12;
  /** Items of each JSON object or array. */
  export const JSON_ITEMS = 500;
}

/**
 * A text cut to some of its lines.
 */
export interface IClippedText {
  /** The lines shown, joined by newlines. */
  text: string;
  /** How many lines were left out. */
  hidden: number;
}

/**
 * Split a text into lines; a final newline does not start another line.
 */
export function splitLines(text: string): string[] {
  if (text === '') {
    return [];
  }
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') {
    lines.pop();
  }
  return lines;
}

/**
 * Keep the first `max` lines of a text.
 */
export function clipHead(text: string, max: number): IClippedText {
  const lines = splitLines(text);
  if (lines.length <= max) {
    return { text: lines.join('\n'), hidden: 0 };
  }
  return {
    text: lines.slice(0, max).join('\n'),
    hidden: lines.length - max
  };
}

/**
 * Keep the last `max` lines of a text (an output tail).
 */
export function clipTail(text: string, max: number): IClippedText {
  const lines = splitLines(text);
  if (lines.length <= max) {
    return { text: lines.join('\n'), hidden: 0 };
  }
  return {
    text: lines.slice(lines.length - max).join('\n'),
    hidden: lines.length - max
  };
}

/**
 * Keep the last `max` items of a list.
 */
export function lastItems<T>(
  items: readonly T[],
  max: number
): { items: T[]; hidden: number } {
  const hidden = Math.max(0, items.length - max);
  return { items: items.slice(hidden), hidden };
}
