/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * Artifacts opened in the lab through `GET /api/xcsh/artifacts/<id>` (docs/developers/contract.md
 * §7.4): their folder is hidden by default (`.xcsh-artifacts`), out of the person's file browser,
 * and the contents API does not serve hidden files; the artifact endpoint does, to whoever may
 * read contents. Links to an artifact (the activity panel's, a notebook output's truncation
 * notice) open it here.
 */

import type { JupyterFrontEnd } from '@jupyterlab/application';
import { MainAreaWidget } from '@jupyterlab/apputils';
import { ServerConnection } from '@jupyterlab/services';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { append, h } from '../core/dom';
import { xcshUrl } from '../request';

/** An artifact's file name: `<id>.<tool>.<extension>`. */
const ARTIFACT_NAME =
  /^([0-9]{8}T[0-9]{6}-[0-9a-f]{12})\.[a-z][a-z0-9_-]{0,31}\.(log|png|jpg|gif|webp|svg)$/;

/** The most bytes of a text artifact the view shows (the rest is named, not loaded). */
export const TEXT_VIEW_BYTES = 2 * 1024 * 1024;

/**
 * The id of the artifact at `path` (a path of the contents root, or a URL ending in one), or
 * `null` when it does not name an artifact.
 */
export function artifactIdOf(path: string): string | null {
  const match = ARTIFACT_NAME.exec(fileName(path));
  return match ? match[1] : null;
}

/**
 * The file name at the end of a path or URL.
 */
export function fileName(path: string): string {
  return decodeURIComponent(path.split(/[?#]/)[0].split('/').pop() ?? '');
}

/**
 * The total size a `Content-Range: bytes a-b/total` header names, or `null`.
 */
export function rangeTotal(header: string | null): number | null {
  const match = /\/(\d+)\s*$/.exec(header ?? '');
  return match ? Number(match[1]) : null;
}

/**
 * Open the artifact `artifactId` in a main area tab.
 */
export async function openArtifact(
  app: JupyterFrontEnd,
  artifactId: string,
  trans: TranslationBundle,
  label: string = artifactId
): Promise<void> {
  const settings = app.serviceManager.serverSettings;
  const content = new Widget();
  content.addClass('jp-xcsh-ArtifactView');
  const widget = new MainAreaWidget({ content });
  widget.id = `jp-xcsh-artifact-${artifactId}`;
  widget.title.label = label;
  widget.title.caption = `artifact://${artifactId}`;
  widget.title.closable = true;
  const existing = [...app.shell.widgets('main')].find(w => w.id === widget.id);
  if (existing) {
    widget.dispose();
    app.shell.activateById(existing.id);
    return;
  }
  app.shell.add(widget, 'main');
  app.shell.activateById(widget.id);
  const url = xcshUrl(settings, `artifacts/${encodeURIComponent(artifactId)}`);
  try {
    const head = await ServerConnection.makeRequest(
      url,
      { method: 'GET', headers: { Range: `bytes=0-${TEXT_VIEW_BYTES - 1}` } },
      settings
    );
    if (!head.ok) {
      throw new Error(`${head.status} ${(await head.text()).slice(0, 300)}`);
    }
    const type = head.headers.get('Content-Type') ?? '';
    if (type.startsWith('image/')) {
      // An image is never cut by the range (the endpoint takes ranges of any artifact; ask it
      // whole).
      const whole = await ServerConnection.makeRequest(
        url,
        { method: 'GET' },
        settings
      );
      const blob = await whole.blob();
      const src = URL.createObjectURL(blob);
      widget.disposed.connect(() => URL.revokeObjectURL(src));
      content.node.replaceChildren(
        h('img', { src, alt: artifactId, class: 'jp-xcsh-ArtifactImage' })
      );
      return;
    }
    const text = await head.text();
    const total =
      head.status === 206
        ? rangeTotal(head.headers.get('Content-Range'))
        : null;
    content.node.replaceChildren();
    append(content.node, [
      total !== null && total > TEXT_VIEW_BYTES
        ? h(
            'p',
            { class: 'jp-xcsh-ArtifactCut' },
            trans.__(
              'The first %1 MiB of %2 bytes: an agent reads the rest with the artifact tool (artifact://%3).',
              TEXT_VIEW_BYTES / (1024 * 1024),
              total,
              artifactId
            )
          )
        : null,
      h('pre', { class: 'jp-xcsh-ArtifactText' }, text)
    ]);
  } catch (error) {
    content.node.replaceChildren(
      h(
        'p',
        { class: 'jp-xcsh-ArtifactError' },
        trans.__('The artifact could not be read: %1', (error as Error).message)
      )
    );
  }
}

/**
 * Open links to artifacts (in notebook outputs, rendered markdown) through the artifact view:
 * a capture of clicks before the lab's own link handling, which would ask the contents API.
 */
export function followArtifactLinks(
  app: JupyterFrontEnd,
  trans: TranslationBundle
): void {
  document.addEventListener(
    'click',
    event => {
      const anchor = (event.target as Element | null)?.closest?.('a');
      if (!anchor) {
        return;
      }
      let path = anchor.getAttribute('href') ?? '';
      const args = anchor.getAttribute('data-commandlinker-args');
      if (args) {
        try {
          path = (JSON.parse(args) as { path?: string }).path ?? path;
        } catch {
          // Not the lab's arguments: the href as it is.
        }
      }
      const id = artifactIdOf(path);
      if (id === null) {
        return;
      }
      event.preventDefault();
      event.stopPropagation();
      void openArtifact(app, id, trans, fileName(path));
    },
    true
  );
}
