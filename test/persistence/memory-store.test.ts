import { MemoryStore } from '../../src/persistence/memory/memory-store.js';
import { storeContract } from './store-contract.js';

storeContract('in-memory', async () => new MemoryStore());
