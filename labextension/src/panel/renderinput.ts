/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * The answer box of a python call whose kernel waits for input (stdin
 * `ask`): a person can answer an agent's `input()` from the panel.
 */

import { h } from '../core/dom';
import type { IPythonCall } from '../core/activity';
import type { IRenderContext } from './renderparts';

/**
 * What a person typed and has not sent yet, by call: a re-render of the call
 * (new output, a toggle) must not lose it.
 */
const drafts = new Map<string, string>();

/**
 * The prompt a call waits on with a box to answer it, or `null` when the
 * call waits for nothing.
 */
export function renderInputPrompt(
  call: IPythonCall,
  ctx: IRenderContext
): HTMLElement | null {
  const input = call.input;
  if (input === null || input.state !== 'waiting' || call.result !== null) {
    drafts.delete(call.id);
    return null;
  }
  const trans = ctx.trans;
  const key = `${call.id}/input`;
  const field = h('input', {
    type: input.password ? 'password' : 'text',
    class: 'jp-xcsh-InputField',
    autocomplete: 'off',
    spellcheck: 'false',
    disabled: call.answering,
    'aria-label': input.password ? trans.__('Password') : trans.__('Answer'),
    'data-xcsh-key': key
  });
  field.value = drafts.get(call.id) ?? '';
  field.addEventListener('input', () => drafts.set(call.id, field.value));
  field.addEventListener('click', event => event.stopPropagation());
  const send = h(
    'button',
    {
      type: 'submit',
      class: 'jp-xcsh-InputSend',
      disabled: call.answering,
      'data-xcsh-key': `${key}/send`
    },
    call.answering ? trans.__('Sending…') : trans.__('Send')
  );
  const form = h(
    'form',
    {
      class: 'jp-xcsh-InputPrompt',
      'aria-label': trans.__('The kernel is waiting for input')
    },
    h(
      'div',
      { class: 'jp-xcsh-InputLabel' },
      input.password
        ? trans.__('The code asks for a password: ')
        : trans.__('The code waits for input: '),
      h('code', { class: 'jp-xcsh-InputText' }, input.prompt)
    ),
    h('div', { class: 'jp-xcsh-InputRow' }, field, send),
    call.answerError !== null
      ? h(
          'div',
          { class: 'jp-xcsh-Error jp-xcsh-Note', role: 'alert' },
          trans.__('Could not answer: %1', call.answerError)
        )
      : null
  );
  form.addEventListener('submit', event => {
    event.preventDefault();
    event.stopPropagation();
    drafts.delete(call.id);
    ctx.answer(call, field.value);
  });
  return form;
}
