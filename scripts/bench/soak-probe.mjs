// Preloaded into svc-api by scripts/bench/soak.ts only (node --expose-gc --import <this> bin/svc-api.js), never part
// of the service: over the IPC channel the bench opened, it answers `sample` with the process' memory after a full
// collection, and `snapshot` by writing a V8 heap snapshot. Nothing listens on a port: the figures reach no one but
// the bench that started the process.
import { getHeapStatistics, writeHeapSnapshot } from 'node:v8';

if (typeof process.send === 'function' && typeof globalThis.gc === 'function') {
  process.on('message', (message) => {
    if (message?.op === 'sample') {
      const before = process.memoryUsage();
      // Twice: the first collection's finalizers free more for the second (weak maps, native wrappers).
      globalThis.gc();
      globalThis.gc();
      const after = process.memoryUsage();
      const heap = getHeapStatistics();
      process.send({ op: 'sample', before, after, mallocedBytes: heap.malloced_memory, nativeContexts: heap.number_of_native_contexts });
    } else if (message?.op === 'snapshot') {
      globalThis.gc();
      process.send({ op: 'snapshot', file: writeHeapSnapshot(message.file) });
    }
  });
  // The channel must not keep svc-api alive after SIGTERM, nor stop it from exiting as it would.
  process.channel?.unref();
}
