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
import { ITranslator } from '@jupyterlab/translation';

import { ICellMarks } from '../tokens';
import { translationBundle } from '../translation';
import { CellMarks } from './model';
import { NotebookMarks } from './notebookmarks';

/**
 * Marks the cells agents changed in the notebooks open in the lab, until a
 * person edits the cell or dismisses the mark.
 */
export const marksPlugin: JupyterFrontEndPlugin<ICellMarks> = {
  id: 'jupyter-xcsh:marks',
  description: 'Marks the cells agents changed in open notebooks.',
  autoStart: true,
  provides: ICellMarks,
  requires: [INotebookTracker],
  optional: [ITranslator],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    translator: ITranslator | null
  ): ICellMarks => {
    const marks = new CellMarks();
    app.serviceManager.events.stream.connect(
      (_: Event.IManager, emission: Event.Emission) =>
        marks.handleEmission(emission)
    );
    const trans = translationBundle(translator);
    const follow = (panel: NotebookPanel) =>
      new NotebookMarks(panel, marks, { trans });
    tracker.forEach(follow);
    tracker.widgetAdded.connect((_, panel) => follow(panel));
    return marks;
  }
};
