/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * Images displayed by python calls, as thumbnails that open the whole image
 * (kept as an artifact) in the lab.
 */

import { formatBytes } from '../core/format';
import { h } from '../core/dom';
import type { PythonDisplay } from '../core/events';
import type { IRenderContext } from './renderparts';

/**
 * An image display of a python call.
 */
export type ImageDisplay = Extract<PythonDisplay, { kind: 'image' }>;

/**
 * Elements by display, so a re-render moves the decoded image instead of
 * decoding it again (no flicker while a call streams).
 */
const cache = new WeakMap<ImageDisplay, HTMLElement>();

/**
 * A thumbnail of the image (or a note when the event left its data out),
 * with its size; a click opens the whole image when it was kept.
 */
export function renderImage(
  display: ImageDisplay,
  ctx: IRenderContext
): HTMLElement {
  const cached = cache.get(display);
  if (cached) {
    return cached;
  }
  const kind = display.mimeType.replace(/^image\//, '').toUpperCase();
  const pixels =
    display.width !== null && display.height !== null
      ? `${display.width}x${display.height} `
      : '';
  const size = display.bytes !== null ? `, ${formatBytes(display.bytes)}` : '';
  const description = `${pixels}${kind}${size}`;
  const picture =
    display.data !== null
      ? h('img', {
          class: 'jp-xcsh-Image jp-xcsh-Thumbnail',
          src: `data:${display.mimeType};base64,${display.data}`,
          alt: ctx.trans.__('Image displayed by the code (%1)', description)
        })
      : h(
          'div',
          { class: 'jp-xcsh-Note' },
          ctx.trans.__('Image not shown here')
        );
  const path = display.artifactPath;
  let element: HTMLElement;
  if (path !== null) {
    element = h(
      'button',
      {
        type: 'button',
        class: 'jp-xcsh-ImageLink',
        title: ctx.trans.__('Open %1', path)
      },
      picture,
      h('span', { class: 'jp-xcsh-ImageCaption' }, description)
    );
    element.addEventListener('click', event => {
      event.stopPropagation();
      ctx.openArtifact(path);
    });
  } else {
    element = h(
      'figure',
      { class: 'jp-xcsh-ImageLink' },
      picture,
      h('figcaption', { class: 'jp-xcsh-ImageCaption' }, description)
    );
  }
  cache.set(display, element);
  return element;
}
