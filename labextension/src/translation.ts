/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import {
  ITranslator,
  nullTranslator,
  type TranslationBundle
} from '@jupyterlab/translation';

/**
 * The translation domain of the lab extension's strings.
 */
export const TRANSLATION_DOMAIN = 'jupyter_xcsh';

/**
 * The extension's strings in the lab's language: from `translator` when the
 * lab provides one, else as written (English).
 */
export function translationBundle(
  translator?: ITranslator | null
): TranslationBundle {
  return (translator ?? nullTranslator).load(TRANSLATION_DOMAIN);
}

/**
 * The strings as written, for callers given no translator.
 */
export const UNTRANSLATED: TranslationBundle = translationBundle();
