/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import { artifactIdOf, fileName, rangeTotal } from '../artifacts/viewer';

describe('artifact links', () => {
  it('names the artifact of a path or URL, whatever its folder', () => {
    const id = '20260101T000000-0123456789ab';
    expect(artifactIdOf(`.xcsh-artifacts/${id}.python.log`)).toBe(id);
    expect(artifactIdOf(`xcsh-artifacts/${id}.run.png`)).toBe(id);
    expect(artifactIdOf(`../.xcsh-artifacts/${id}.notebook.log`)).toBe(id);
    expect(
      artifactIdOf(`/files/.xcsh-artifacts/${id}.python.log?_xsrf=1`)
    ).toBe(id);
    expect(fileName(`a/b/${id}.python.log#x`)).toBe(`${id}.python.log`);
  });

  it('leaves any other file alone', () => {
    expect(artifactIdOf('notes.log')).toBeNull();
    expect(artifactIdOf('20260101T000000-0123456789ab.python.exe')).toBeNull();
    expect(artifactIdOf('data/20260101T000000-xyz.python.log')).toBeNull();
  });

  it('reads the size a Content-Range names', () => {
    expect(rangeTotal('bytes 0-2097151/5000000')).toBe(5000000);
    expect(rangeTotal(null)).toBeNull();
  });
});
