// Worker bootstrap for the reveal check: tsx's loader hooks are not inherited by worker threads on every Node
// version, so register them here, then load the TypeScript worker.
import { register } from 'tsx/esm/api';

register();
await import('./challenge-check-worker.ts');
