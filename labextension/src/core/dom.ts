/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * Attributes of an element built by {@link h}: `class` sets the class name;
 * `false`, `null` and `undefined` leave an attribute out; `true` sets it empty.
 */
export type Attributes = Record<
  string,
  string | number | boolean | null | undefined
>;

/**
 * A child of an element built by {@link h}: strings become text nodes (never
 * HTML), `null`/`undefined`/`false` are skipped.
 */
export type Child = Node | string | null | undefined | false;

/**
 * Build a DOM element. All text goes in as text nodes, so nothing a server
 * sends can inject markup.
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === false || value === null || value === undefined) {
      continue;
    }
    if (key === 'class') {
      element.className = String(value);
    } else {
      element.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(element, children);
  return element;
}

/**
 * Append children to an element, with the rules of {@link h}.
 */
export function append(parent: Node, children: (Child | Child[])[]): void {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) {
      continue;
    }
    parent.appendChild(
      typeof child === 'string' ? document.createTextNode(child) : child
    );
  }
}

/**
 * A JSON text of any value that never throws and stays short.
 *
 * @param value - What to describe.
 * @param maxChars - The longest text returned (an ellipsis marks a cut).
 */
export function compactJson(value: unknown, maxChars: number): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = Object.prototype.toString.call(value);
  }
  return text.length > maxChars ? `${text.slice(0, maxChars - 1)}…` : text;
}
