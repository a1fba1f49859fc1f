/** @gpux/cli: the `gpux` command. Exported for tests and for embedding; bin/gpux.js is the entry point. */
export { buildProgram, main, VERSION } from './main.js';
export { type Io, processIo } from './context.js';
export { CliError, EXIT_FAILURE, EXIT_USAGE, exitCodeOf, formatError, reportError, usageError } from './errors.js';
export { type Column, formatBytes, formatDuration, formatKeyValues, formatTable, toJson } from './output.js';
export { type Connection, type ConnectionFlags, gpuxHome, type Profile, profilePath, readProfile, resolveConnection, writeProfile } from './profile.js';
export { loadSpecFile, parseSpecText } from './spec-file.js';
export { safeTarget, writeOutputs } from './job-outputs.js';
