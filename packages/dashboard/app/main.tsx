/** Entry point: mount the app. */
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './app.js';
// In cascade order: later files refine earlier ones.
import './styles/base.css';
import './styles/controls.css';
import './styles/layout.css';
import './styles/data.css';
import './styles/detail.css';
import './styles/money.css';
import './styles/narrow.css';

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
