/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

// A refresh that waits for the current signal to be handled everywhere.

/**
 * Return a function that calls `fn` once the current change has been handled
 * everywhere (a microtask later), however often it is called meanwhile: the
 * notebook makes a new cell's widget in its own handler of the same change,
 * so what marks cells must look after it has.
 */
export function afterThisChange(fn: () => void): () => void {
  let scheduled = false;
  return () => {
    if (scheduled) {
      return;
    }
    scheduled = true;
    void Promise.resolve().then(() => {
      scheduled = false;
      fn();
    });
  };
}
