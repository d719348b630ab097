/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { Event } from '@jupyterlab/services';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ITranslator } from '@jupyterlab/translation';

import { loadSettings, marksEnabled } from '../settings';
import { ICellMarks } from '../tokens';
import { translationBundle } from '../translation';
import { CellMarks } from './model';
import { NotebookMarks } from './notebookmarks';

/**
 * Marks the cells agents changed in the notebooks open in the lab, until a
 * person edits the cell, or keeps or undoes the change in the review.
 */
export const marksPlugin: JupyterFrontEndPlugin<ICellMarks> = {
  id: 'jupyter-xcsh:marks',
  description: 'Marks the cells agents changed in open notebooks.',
  autoStart: true,
  provides: ICellMarks,
  requires: [INotebookTracker],
  optional: [ITranslator, ISettingRegistry],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    translator: ITranslator | null,
    settingRegistry: ISettingRegistry | null
  ): ICellMarks => {
    const marks = new CellMarks();
    app.serviceManager.events.stream.connect(
      (_: Event.IManager, emission: Event.Emission) =>
        marks.handleEmission(emission)
    );
    const trans = translationBundle(translator);
    let enabled = true;
    const views = new Set<NotebookMarks>();
    const follow = (panel: NotebookPanel) => {
      const view = new NotebookMarks(panel, marks, {
        trans,
        enabled: () => enabled
      });
      views.add(view);
      panel.disposed.connect(() => views.delete(view));
    };
    loadSettings(settingRegistry, marksPlugin.id, composite => {
      enabled = marksEnabled(composite);
      views.forEach(view => view.refresh());
    });
    tracker.forEach(follow);
    tracker.widgetAdded.connect((_, panel) => follow(panel));
    return marks;
  }
};
