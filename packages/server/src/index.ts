export { buildApp, type AppOptions } from './app.ts';
export { resolveSettings, loadOrCreateSecret, type ServerSettings } from './config.ts';
export { openStore, type Store } from './store/store.ts';
