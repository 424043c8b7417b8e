export * from './user_store.ts';
