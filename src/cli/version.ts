// This program's version: scripts/build.mjs defines SVC_VERSION from package.json; unbuilt (tests importing the
// sources), it is 'dev'.
declare const SVC_VERSION: string | undefined;

export const VERSION = typeof SVC_VERSION === 'string' ? SVC_VERSION : 'dev';
