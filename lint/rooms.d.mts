// Types for rooms.mjs (read by eslint.config.mjs as JavaScript and by test/architecture/rooms.test.ts).
export declare const ROOMS: readonly string[];
export declare const APART: readonly string[];
export declare function allowedFrom(room: string): string[];
