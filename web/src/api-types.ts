// What the dashboard adds to the server's views (src/api/views.ts, imported as types: esbuild drops them): a component
// list's item, which is a component or a group, and the actions' names. Every answer's shape is the server's own.
import type { ComponentView, GroupView } from '../../src/api/views.js';

export type ListItem = ComponentView | GroupView;

export const isGroup = (c: ListItem): c is GroupView => Array.isArray((c as Partial<GroupView>).members);

export type ActionName = 'restart' | 'stop' | 'start';
