// The request queue: priorities (higher first, then first come), a cap on requests running at
// once, a cap on requests waiting, and a wake-up for the earliest moment one could go.
//
// The queue does not know why a request must wait: it asks `acquire(entry)` (the pacer, or the
// tab leader), which answers go-with-a-ticket or wait-so-long. A request told to wait holds back
// the lower-priority requests of its scope, so a scope's order is kept while other scopes go on;
// a retry waiting out its own backoff holds back nothing.

import { after } from '../timers.js';

/**
 * A request in the queue. The queue sets nothing on it but reads these.
 *
 * @typedef {object} Entry
 * @property {number} priority higher goes first
 * @property {number} seq arrival order, for ties
 * @property {string} scope requests of one scope keep their order
 * @property {number} notBefore not before this time (ms, the queue's clock): a retry's delay
 * @property {number} deadline past this time (ms) the request fails with `timedOut`
 * @property {(ticket: unknown) => Promise<void> | void} start runs it; the slot is held until this settles
 * @property {(grant: { wait: number, reason: string }) => void} [waiting] told each time it must wait
 * @property {() => void} timedOut it cannot go before its deadline
 * @property {(error: unknown) => void} fail deciding on it threw: it fails with that error
 * @property {boolean} [retry] a retry of a request already admitted: never shed
 * @property {() => void} [full] it is one too many waiting: it fails with `QUEUE_FULL`
 */

export class RequestQueue {
  #entries = [];
  /** The same entries, for membership in O(1): a pass asks it of every entry. */
  #members = new Set();
  #concurrency;
  #maxWaiting;
  #acquire;
  #refund;
  #now;
  #running = 0;
  #cancelWake = null;
  #pumping = false;
  #again = false;
  #closed = false;

  /**
   * @param {object} options
   * @param {number} options.concurrency most entries running at once
   * @param {number} [options.maxWaiting] most entries waiting after a pass; beyond it the first attempts that would go last are shed
   * @param {(entry: Entry) => import('./pacer.js').Grant | Promise<import('./pacer.js').Grant>} options.acquire
   * @param {(ticket: unknown) => void} options.refund hands back a ticket granted to an entry that left meanwhile (never sent)
   * @param {() => number} options.now milliseconds
   */
  constructor({ concurrency, maxWaiting = Infinity, acquire, refund, now }) {
    this.#concurrency = concurrency;
    this.#maxWaiting = maxWaiting;
    this.#acquire = acquire;
    this.#refund = refund;
    this.#now = now;
  }

  /** Entries waiting. */
  get size() {
    return this.#entries.length;
  }

  /** Entries running. */
  get running() {
    return this.#running;
  }

  /** Adds an entry in priority order and looks for work. */
  add(entry) {
    let low = 0;
    let high = this.#entries.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (before(this.#entries[mid], entry)) low = mid + 1;
      else high = mid;
    }
    this.#entries.splice(low, 0, entry);
    this.#members.add(entry);
    this.pump();
  }

  /** Takes an entry out (abort, timeout); whether it was waiting. */
  remove(entry) {
    if (!this.#members.delete(entry)) return false;
    this.#entries.splice(this.#entries.indexOf(entry), 1);
    // Nothing left to wake for: an armed timer would keep a Node process alive for nothing.
    if (this.#entries.length === 0) this.#wakeAt(Infinity);
    // Entries behind it in its scope waited for its turn, on a timer armed for its wait.
    else this.pump();
    return true;
  }

  /** Empties the queue and returns what was waiting. */
  close() {
    this.#closed = true;
    this.#wakeAt(Infinity);
    this.#members.clear();
    return this.#entries.splice(0);
  }

  /** Looks for entries that can go now (called when anything changes). */
  pump() {
    if (this.#closed) return;
    if (this.#pumping) {
      this.#again = true;
      return;
    }
    this.#pumping = true;
    this.#pass().finally(() => {
      this.#pumping = false;
      // Asked again after the pass's last look: look again, or that request would sleep.
      if (this.#again) this.pump();
    });
  }

  async #pass() {
    do {
      this.#again = false;
      let wakeAt = Infinity;
      const held = new Map(); // scope → the wait that holds it
      for (const entry of [...this.#entries]) {
        if (this.#running >= this.#concurrency || this.#closed) break;
        if (!this.#members.has(entry)) continue;
        const now = this.#now();
        if (held.has(entry.scope)) {
          this.#hold(entry, held.get(entry.scope), now);
          continue;
        }
        if (entry.notBefore > now) {
          // A retry's own backoff (a 503 without Retry-After) holds only itself: the server said
          // nothing about the scope, and a Retry-After blocks the scope in the pacer anyway.
          // Past the deadline it times out now, as a pacer's wait does.
          if (this.#hold(entry, { wait: entry.notBefore - now, reason: 'retry' }, now)) {
            wakeAt = Math.min(wakeAt, entry.notBefore);
          }
          continue;
        }
        let grant;
        try {
          grant = await this.#acquire(entry);
        } catch (error) {
          // One request's bad input must not stall the queue (or, unhandled, end a Node process).
          if (this.remove(entry)) entry.fail(error);
          continue;
        }
        if (!this.#members.has(entry)) {
          if (grant.ok) this.#refund(grant.ticket);
          continue;
        }
        if (grant.ok) {
          this.remove(entry);
          this.#run(entry, grant.ticket);
          continue;
        }
        // Only a wait that stays holds its scope: one that times out now leaves the entries
        // behind it to ask for themselves (else they would wait on it with no timer set).
        if (this.#hold(entry, grant, this.#now())) {
          held.set(entry.scope, grant);
          const wait = Number.isFinite(grant.wait) ? grant.wait : (grant.recheck ?? Infinity);
          wakeAt = Math.min(wakeAt, this.#now() + wait);
        }
      }
      this.#wakeAt(wakeAt);
    } while (this.#again && !this.#closed);
    this.#shed();
  }

  /** The waiting first attempt that would go last (lowest priority, newest): the first to shed. */
  lastFirstAttempt() {
    for (let i = this.#entries.length - 1; i >= 0; i--) if (!this.#entries[i].retry) return this.#entries[i];
    return undefined;
  }

  /**
   * After a pass every entry left is waiting. Past maxWaiting, the first attempts that would go
   * last fail (`full`): the lowest priority, the newest among equals. Waiting is only known once
   * the pass has asked, as requests made in one tick sit here until a pass starts those that can go.
   */
  #shed() {
    // Asked afresh each time: `full` runs the client's dropped hook, which may close the client
    // or abort other entries.
    while (this.#entries.length > this.#maxWaiting && !this.#closed) {
      const entry = this.lastFirstAttempt();
      if (entry === undefined) return; // only retries wait, and they are never shed
      this.remove(entry);
      entry.full?.();
    }
  }

  /**
   * Tells an entry it must wait; one that would still wait at its deadline fails now instead.
   * An infinite wait is not known to be long (a probe's answer, a free concurrency slot): such
   * an entry waits, and the request's own deadline timer ends it if nothing changes.
   */
  #hold(entry, grant, now) {
    if (Number.isFinite(grant.wait) && now + grant.wait > entry.deadline) {
      this.remove(entry);
      entry.timedOut();
      return false;
    }
    entry.waiting?.(grant);
    return true;
  }

  #run(entry, ticket) {
    this.#running += 1;
    Promise.resolve()
      .then(() => entry.start(ticket))
      .catch(() => {})
      .finally(() => {
        this.#running -= 1;
        this.pump();
      });
  }

  #wakeAt(time) {
    this.#cancelWake?.();
    this.#cancelWake = null;
    if (!Number.isFinite(time) || this.#closed) return;
    this.#cancelWake = after(time - this.#now(), () => this.pump());
  }
}

function before(a, b) {
  return a.priority > b.priority || (a.priority === b.priority && a.seq < b.seq);
}
