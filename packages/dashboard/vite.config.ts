/** Vite build of the dashboard: static files in dist/ that the coordinator serves at /. */
import { defineConfig } from 'vite';

export default defineConfig({
  // Vite 8 transforms TSX with oxc: React 19's automatic JSX runtime, no plugin needed for a build.
  oxc: { jsx: { runtime: 'automatic', importSource: 'react' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    reportCompressedSize: false,
  },
  // `npm run dev -w @gpux/dashboard`: the API of a coordinator on GPUX_URL (default the dev port 7070).
  server: { proxy: { '/v1': process.env.GPUX_URL ?? 'http://127.0.0.1:7070' } },
});
