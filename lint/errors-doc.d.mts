// Types for errors-doc.mjs (run by `npm run errors-doc`, read by test/core/error-catalogue.test.ts).
import type { CatalogueEntry } from '../src/core/error-catalogue.js';
export declare function renderErrorsDoc(catalogue: Readonly<Record<string, CatalogueEntry>>): string;
