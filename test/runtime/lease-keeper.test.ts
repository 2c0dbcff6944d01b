// The lease keeper when the database stops answering without closing the connection (a dropped
// network): a renewal that never settles must not leave this process running its agents past its
// lease. A real Postgres cannot be made to hang like that here, so the Leases are a stand-in.
import { describe, expect, it, vi } from 'vitest';
import type { Leases } from '../../src/store/store.js';
import { LeaseKeeper } from '../../src/runtime/lease-keeper.js';
import { captureLogs } from '../helpers/logs.js';

describe('LeaseKeeper', () => {
  it('stops every agent once a renewal hangs past the lease, and takes a fresh lease when the database answers again', async () => {
    const leaseMs = 200;
    let hang = false;
    let renewals = 0;
    const leases: Leases = {
      processId: 'p1',
      leaseMs,
      renew: () => {
        renewals++;
        return hang ? new Promise<boolean>(() => {}) : Promise.resolve(true);
      },
      claimOrphans: () => Promise.resolve([]),
      claim: () => Promise.resolve(undefined),
      pendingInboxes: () => Promise.resolve([]),
      onChange: () => {},
      resign: () => Promise.resolve(),
    };
    const leaseLost = vi.fn();
    const { logger } = captureLogs();
    const keeper = new LeaseKeeper(leases, { adopt: async () => {}, inboxEvent: () => {}, statusChanged: () => {}, checkpointCommitted: () => {}, leaseLost, log: logger }, { skipResting: false });
    await keeper.start();
    try {
      hang = true;
      const hungAt = Date.now();
      await vi.waitFor(() => expect(leaseLost).toHaveBeenCalledTimes(1), { timeout: 5000, interval: 10 });
      // Not before the lease it last renewed could have run out.
      expect(Date.now() - hungAt).toBeGreaterThanOrEqual(leaseMs - 75);
      // Still hanging for a few more leases: lost once, not at every tick.
      await new Promise((resolve) => setTimeout(resolve, 3 * leaseMs));
      expect(leaseLost).toHaveBeenCalledTimes(1);
      hang = false;
      const before = renewals;
      await vi.waitFor(() => expect(renewals).toBeGreaterThan(before + 1), { timeout: 5000, interval: 10 });
      expect(leaseLost).toHaveBeenCalledTimes(1); // answering again: no further loss
    } finally {
      await keeper.stop();
    }
  });
});
